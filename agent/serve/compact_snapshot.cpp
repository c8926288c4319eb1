#include "serve/compact_snapshot.hpp"

#include "nvsmi/gpu_fields.hpp"

#include <cmath>
#include <limits>
#include <stdexcept>

namespace nvsmi {
namespace {

// glibc's malloc keeps a 16-byte header per block and rounds to 16 bytes.
constexpr std::size_t allocation(std::size_t bytes) { return (bytes + 16 + 15) / 16 * 16; }

std::size_t text_cost(const std::string &text) {
  // make_shared puts the control block and the string in one block; a text past the small
  // string buffer has a block of its own.
  std::size_t cost = allocation(sizeof(std::string) + 16);
  if (text.size() > 15)
    cost += allocation(text.capacity() + 1);
  return cost;
}

class Packer {
public:
  explicit Packer(std::size_t &new_text_bytes) : new_text_bytes_(new_text_bytes) {}

  SharedText text(const Text &value, const SharedText *before) {
    if (!value)
      return nullptr;
    if (before && *before && **before == *value)
      return *before;
    auto shared = std::make_shared<const std::string>(*value);
    new_text_bytes_ += text_cost(*shared);
    return shared;
  }

  std::shared_ptr<const CompactHealth> health(const Gpu &gpu,
                                              const std::shared_ptr<const CompactHealth> *before);
  std::shared_ptr<const Allocation> allocation(const Allocation &held,
                                               const CompactSnapshot *previous, std::size_t gpu,
                                               std::optional<std::size_t> mig);

private:
  std::size_t &new_text_bytes_;
  // The block the GPU before in this sample got: GPUs of one machine mostly report the same.
  std::shared_ptr<const CompactHealth> last_health_;
};

std::size_t health_cost(const CompactHealth &block) {
  std::size_t cost = allocation(sizeof(CompactHealth) + 16);
  for (const GpuField &field : gpu_fields())
    if (field.part == FieldPart::health && field.kind == FieldKind::text) {
      const Text &text = block.health.*field.health_text;
      if (text && text->size() > 15)
        cost += allocation(text->capacity() + 1);
    }
  if (block.clock_event_reasons_reported) {
    cost += allocation(block.clock_event_reasons_reported->capacity() * sizeof(std::string));
    for (const std::string &reason : *block.clock_event_reasons_reported)
      if (reason.size() > 15)
        cost += allocation(reason.capacity() + 1);
  }
  // Faults carried from earlier samples (nvsmi/health_memory.hpp): kept with the block.
  const std::vector<EarlierFault> &earlier = block.health.earlier_faults;
  if (!earlier.empty())
    cost += allocation(earlier.capacity() * sizeof(EarlierFault));
  for (const EarlierFault &carried : earlier)
    for (const std::string *text :
         {&carried.fault.key, &carried.fault.reason, &carried.fault.action})
      if (text->size() > 15)
        cost += allocation(text->capacity() + 1);
  return cost;
}

bool same_health(const std::shared_ptr<const CompactHealth> &block, const Gpu &gpu) {
  return block && block->health.settled_members() == gpu.health.settled_members() &&
         same_field_readings(block->health, gpu.health) &&
         block->clock_event_reasons_reported == gpu.clock_event_reasons_reported;
}

std::shared_ptr<const CompactHealth>
Packer::health(const Gpu &gpu, const std::shared_ptr<const CompactHealth> *before) {
  if (before && same_health(*before, gpu))
    last_health_ = *before;
  else if (!same_health(last_health_, gpu)) {
    CompactHealth block{gpu.health, gpu.clock_event_reasons_reported};
    // The readings that have slots of their own: a copy here would be one no sample reads.
    for (const GpuField &field : gpu_fields())
      if (field.part == FieldPart::health && field.history == History::own_slot)
        (block.health.*field.health_integer).reset();
    last_health_ = std::make_shared<const CompactHealth>(std::move(block));
    new_text_bytes_ += health_cost(*last_health_);
  }
  return last_health_;
}

std::size_t allocation_cost(const Allocation &held) {
  std::size_t cost = allocation(sizeof(Allocation) + 16);
  for (const std::string *text : {&held.scheduler, &held.job_id})
    if (text->size() > 15)
      cost += allocation(text->capacity() + 1);
  for (const Text *text : {&held.user, &held.account})
    if (*text && (*text)->size() > 15)
      cost += allocation((*text)->capacity() + 1);
  return cost;
}

bool same_record(const Allocation &a, const Allocation &b) {
  return a.scheduler == b.scheduler && a.job_id == b.job_id && a.user == b.user &&
         a.account == b.account && a.since_epoch_s == b.since_epoch_s;
}

std::shared_ptr<const Allocation> Packer::allocation(const Allocation &held,
                                                     const CompactSnapshot *previous,
                                                     std::size_t gpu,
                                                     std::optional<std::size_t> mig) {
  if (previous)
    for (const CompactAllocation &was : previous->allocations)
      if (was.gpu == gpu && was.mig == mig && same_record(*was.record, held))
        return was.record;
  Allocation record = held;
  record.held_s.reset();
  auto shared = std::make_shared<const Allocation>(std::move(record));
  new_text_bytes_ += allocation_cost(*shared);
  return shared;
}

template <std::size_t N> PackedReadings<N> pack(const std::array<const Reading *, N> &readings) {
  PackedReadings<N> packed;
  for (std::size_t i = 0; i < N; ++i)
    if (*readings[i]) {
      packed.values[i] = **readings[i];
      packed.known |= 1u << i;
    }
  return packed;
}

template <std::size_t N>
void unpack(const PackedReadings<N> &packed, const std::array<Reading *, N> &readings) {
  for (std::size_t i = 0; i < N; ++i)
    if (packed.known & (1u << i))
      *readings[i] = packed.values[i];
}

double pack_real(const RealReading &value) {
  return value ? *value : std::numeric_limits<double>::quiet_NaN();
}
RealReading unpack_real(double value) {
  return std::isnan(value) ? RealReading() : RealReading(value);
}

Text unpack_text(const SharedText &text) { return text ? Text(*text) : Text(); }

// Whether the table has a field of its own slot, a derived one aside (nothing to keep).
bool in_own_slot(const GpuField &field) {
  return field.history == History::own_slot && field.part != FieldPart::derived;
}

// The field table's History::own_slot fields, in its order, one slot each in the array of their
// kind: walked the same way by pack and unpack, so that they cannot drift apart.
void pack_own_slots(const Gpu &gpu, CompactGpu &out, const CompactGpu *before, Packer &packer) {
  std::size_t integer = 0, real = 0, text = 0;
  for (const GpuField &field : gpu_fields()) {
    if (!in_own_slot(field))
      continue;
    if (field.kind == FieldKind::integer) {
      if (const Reading &value = field.integer_in(gpu)) {
        out.numbers.values[integer] = *value;
        out.numbers.known |= 1u << integer;
      }
      ++integer;
    } else if (field.kind == FieldKind::real) {
      out.reals[real++] = pack_real(gpu.*field.gpu_real);
    } else {
      out.texts[text] = packer.text(field.text_in(gpu), before ? &before->texts[text] : nullptr);
      ++text;
    }
  }
}

void unpack_own_slots(const CompactGpu &in, Gpu &gpu) {
  std::size_t integer = 0, real = 0, text = 0;
  for (const GpuField &field : gpu_fields()) {
    if (!in_own_slot(field))
      continue;
    if (field.kind == FieldKind::integer)
      field.integer_in(gpu) = packed_reading(in.numbers, integer++);
    else if (field.kind == FieldKind::real)
      field.real_in(gpu) = unpack_real(in.reals[real++]);
    else
      field.text_in(gpu) = unpack_text(in.texts[text++]);
  }
}

// A table with more such fields than a sample has slots would lose readings silently: refused at
// the first sample, which every test of the history takes.
void check_own_slot_fields() {
  static const bool fits = own_slot_field_count(FieldKind::integer) <= own_slot_integers &&
                           own_slot_field_count(FieldKind::real) <= own_slot_reals &&
                           own_slot_field_count(FieldKind::text) <= own_slot_texts;
  if (!fits)
    throw std::logic_error("the field table has more History::own_slot fields of a kind than "
                           "serve/compact_snapshot.hpp's own_slot_* give them");
}

// The same lists of members, read and written, so that pack and unpack cannot drift apart.
template <typename P> auto process_readings(P &process) {
  return std::array{&process.pid,
                    &process.used_memory_mib,
                    &process.gpu_instance_id,
                    &process.compute_instance_id,
                    &process.sm_utilization_percent,
                    &process.memory_utilization_percent,
                    &process.uid,
                    &process.host_memory_mib};
}
template <typename P> auto process_texts(P &process) {
  return std::array{&process.type,    &process.name,         &process.user,
                    &process.command, &process.started,      &process.container,
                    &process.pod_uid, &process.slurm_job_id, &process.systemd_unit};
}
template <typename H> auto host_readings(H &host) {
  return std::array{&host.cpu_count, &host.memory_total_mib, &host.memory_used_mib};
}
template <typename M> auto mig_readings(M &device) {
  return std::array{&device.index,
                    &device.gpu_instance_id,
                    &device.compute_instance_id,
                    &device.memory_total_mib,
                    &device.memory_used_mib,
                    &device.memory_free_mib};
}

template <typename M> auto mig_texts(M &device) {
  return std::array{&device.uuid, &device.profile};
}

template <typename T> const T *at(const std::vector<T> *items, std::size_t i) {
  return items && i < items->size() ? &(*items)[i] : nullptr;
}

CompactGpu pack_gpu(const Gpu &gpu, const CompactGpu *before, Packer &packer) {
  CompactGpu out;
  out.index = gpu.index;
  out.uuid = packer.text(gpu.uuid, before ? &before->uuid : nullptr);
  out.name = packer.text(gpu.name, before ? &before->name : nullptr);
  out.pci_bus_id = packer.text(gpu.pci_bus_id, before ? &before->pci_bus_id : nullptr);
  out.lost_reason = packer.text(gpu.lost_reason, before ? &before->lost_reason : nullptr);
  out.health = packer.health(gpu, before ? &before->health : nullptr);
  pack_own_slots(gpu, out, before, packer);
  out.mig_enabled = gpu.mig_enabled ? static_cast<std::int8_t>(*gpu.mig_enabled) : -1;
  if (gpu.mig_devices) {
    const auto *old = before && before->mig_devices ? &*before->mig_devices : nullptr;
    out.mig_devices.emplace();
    out.mig_devices->reserve(gpu.mig_devices->size());
    for (std::size_t i = 0; i < gpu.mig_devices->size(); ++i) {
      const MigDevice &device = (*gpu.mig_devices)[i];
      const CompactMig *was = at(old, i);
      CompactMig packed{pack(mig_readings(device)), {}};
      auto texts = mig_texts(device);
      for (std::size_t t = 0; t < texts.size(); ++t)
        packed.texts[t] = packer.text(*texts[t], was ? &was->texts[t] : nullptr);
      out.mig_devices->push_back(std::move(packed));
    }
  }
  if (gpu.processes) {
    const auto *old = before && before->processes ? &*before->processes : nullptr;
    out.processes.emplace();
    out.processes->reserve(gpu.processes->size());
    for (std::size_t i = 0; i < gpu.processes->size(); ++i) {
      const Process &process = (*gpu.processes)[i];
      const CompactProcess *was = at(old, i);
      CompactProcess packed{pack(process_readings(process)),
                            pack_real(process.cpu_percent),
                            pack_real(process.utilization_age_seconds),
                            {}};
      auto texts = process_texts(process);
      for (std::size_t t = 0; t < texts.size(); ++t)
        packed.texts[t] = packer.text(*texts[t], was ? &was->texts[t] : nullptr);
      out.processes->push_back(std::move(packed));
    }
  }
  if (gpu.clock_event_reasons_active) {
    const auto *old = before && before->clock_event_reasons_active
                          ? &*before->clock_event_reasons_active
                          : nullptr;
    out.clock_event_reasons_active.emplace();
    out.clock_event_reasons_active->reserve(gpu.clock_event_reasons_active->size());
    for (std::size_t i = 0; i < gpu.clock_event_reasons_active->size(); ++i)
      out.clock_event_reasons_active->push_back(
          packer.text((*gpu.clock_event_reasons_active)[i], at(old, i)));
  }
  out.extras.reserve(gpu.extras.size());
  for (std::size_t i = 0; i < gpu.extras.size(); ++i) {
    const auto *was = before ? at(&before->extras, i) : nullptr;
    out.extras.emplace_back(packer.text(gpu.extras[i].name, was ? &was->first : nullptr),
                            packer.text(gpu.extras[i].value, was ? &was->second : nullptr));
  }
  return out;
}

Gpu unpack_gpu(const CompactGpu &in) {
  Gpu gpu;
  gpu.index = in.index;
  gpu.uuid = unpack_text(in.uuid);
  gpu.name = unpack_text(in.name);
  gpu.pci_bus_id = unpack_text(in.pci_bus_id);
  gpu.lost_reason = unpack_text(in.lost_reason);
  if (in.health) {
    gpu.health = in.health->health;
    gpu.clock_event_reasons_reported = in.health->clock_event_reasons_reported;
  }
  unpack_own_slots(in, gpu);
  if (in.mig_enabled >= 0)
    gpu.mig_enabled = in.mig_enabled == 1;
  if (in.mig_devices) {
    gpu.mig_devices.emplace();
    for (const CompactMig &packed : *in.mig_devices) {
      MigDevice device;
      unpack(packed.numbers, mig_readings(device));
      auto texts = mig_texts(device);
      for (std::size_t t = 0; t < texts.size(); ++t)
        *texts[t] = unpack_text(packed.texts[t]);
      gpu.mig_devices->push_back(std::move(device));
    }
  }
  if (in.processes) {
    gpu.processes.emplace();
    for (const CompactProcess &packed : *in.processes) {
      Process process;
      unpack(packed.numbers, process_readings(process));
      process.cpu_percent = unpack_real(packed.cpu_percent);
      process.utilization_age_seconds = unpack_real(packed.utilization_age_seconds);
      auto texts = process_texts(process);
      for (std::size_t t = 0; t < texts.size(); ++t)
        *texts[t] = unpack_text(packed.texts[t]);
      gpu.processes->push_back(std::move(process));
    }
  }
  if (in.clock_event_reasons_active) {
    gpu.clock_event_reasons_active.emplace();
    for (const SharedText &reason : *in.clock_event_reasons_active)
      gpu.clock_event_reasons_active->push_back(reason ? *reason : std::string());
  }
  for (const auto &[name, value] : in.extras)
    gpu.extras.push_back({name ? *name : std::string(), unpack_text(value)});
  return gpu;
}

template <typename T> std::size_t vector_bytes(const std::vector<T> &items) {
  return items.capacity() ? allocation(items.capacity() * sizeof(T)) : 0;
}
template <typename T> std::size_t vector_bytes(const std::optional<std::vector<T>> &items) {
  return items ? vector_bytes(*items) : 0;
}

std::size_t freed(const SharedText &text) {
  return text && text.use_count() == 1 ? text_cost(*text) : 0;
}

// The host's real readings in CompactHostReal's order.
constexpr std::array<RealReading Host::*, std::tuple_size_v<decltype(CompactHost::reals)>>
    host_reals = {&Host::cpu_percent,
                  &Host::load1,
                  &Host::disk_read_bytes_per_second,
                  &Host::disk_write_bytes_per_second,
                  &Host::network_receive_bytes_per_second,
                  &Host::network_send_bytes_per_second};

CompactHost pack_host(const Host &host, const CompactHost *before, Packer &packer) {
  CompactHost out{packer.text(host.hostname, before ? &before->hostname : nullptr),
                  pack(host_readings(host)),
                  {}};
  for (std::size_t i = 0; i < host_reals.size(); ++i)
    out.reals[i] = pack_real(host.*host_reals[i]);
  return out;
}

Host unpack_host(const CompactHost &in) {
  Host host;
  host.hostname = unpack_text(in.hostname);
  unpack(in.numbers, host_readings(host));
  for (std::size_t i = 0; i < host_reals.size(); ++i)
    host.*host_reals[i] = unpack_real(in.reals[i]);
  return host;
}

} // namespace

CompactSnapshot compact(const Snapshot &snapshot, const CompactSnapshot *previous,
                        std::size_t &new_text_bytes) {
  check_own_slot_fields();
  Packer packer(new_text_bytes);
  CompactSnapshot out;
  out.source = snapshot.source;
  out.timestamp = snapshot.timestamp;
  out.driver_version =
      packer.text(snapshot.driver_version, previous ? &previous->driver_version : nullptr);
  out.cuda_version =
      packer.text(snapshot.cuda_version, previous ? &previous->cuda_version : nullptr);
  out.gpus.reserve(snapshot.gpus.size());
  for (std::size_t i = 0; i < snapshot.gpus.size(); ++i)
    out.gpus.push_back(
        pack_gpu(snapshot.gpus[i], previous ? at(&previous->gpus, i) : nullptr, packer));
  if (snapshot.host)
    out.host =
        pack_host(*snapshot.host, previous && previous->host ? &*previous->host : nullptr, packer);
  for (std::size_t i = 0; i < snapshot.gpus.size(); ++i) {
    const Gpu &gpu = snapshot.gpus[i];
    if (const std::optional<Allocation> &held = gpu.allocation)
      out.allocations.push_back(
          {i, std::nullopt, packer.allocation(*held, previous, i, std::nullopt), held->held_s});
    if (gpu.mig_devices)
      for (std::size_t m = 0; m < gpu.mig_devices->size(); ++m)
        if (const std::optional<Allocation> &held = (*gpu.mig_devices)[m].allocation)
          out.allocations.push_back({i, m, packer.allocation(*held, previous, i, m), held->held_s});
  }
  out.allocations_read = snapshot.allocations_read;
  return out;
}

Snapshot expand(const CompactSnapshot &compact) {
  Snapshot snapshot;
  snapshot.source = compact.source;
  snapshot.timestamp = compact.timestamp;
  snapshot.driver_version = unpack_text(compact.driver_version);
  snapshot.cuda_version = unpack_text(compact.cuda_version);
  snapshot.gpus.reserve(compact.gpus.size());
  for (const CompactGpu &gpu : compact.gpus)
    snapshot.gpus.push_back(unpack_gpu(gpu));
  if (compact.host)
    snapshot.host = unpack_host(*compact.host);
  for (const CompactAllocation &held : compact.allocations) {
    if (held.gpu >= snapshot.gpus.size())
      continue;
    Gpu &gpu = snapshot.gpus[held.gpu];
    std::optional<Allocation> *place = &gpu.allocation;
    if (held.mig) {
      if (!gpu.mig_devices || *held.mig >= gpu.mig_devices->size())
        continue;
      place = &(*gpu.mig_devices)[*held.mig].allocation;
    }
    *place = *held.record;
    (*place)->held_s = held.held_s;
  }
  snapshot.allocations_read = compact.allocations_read;
  return snapshot;
}

std::size_t own_bytes(const CompactSnapshot &sample) {
  std::size_t bytes = vector_bytes(sample.gpus) + vector_bytes(sample.allocations);
  for (const CompactGpu &gpu : sample.gpus)
    bytes += vector_bytes(gpu.mig_devices) + vector_bytes(gpu.processes) +
             vector_bytes(gpu.clock_event_reasons_active) + vector_bytes(gpu.extras);
  return bytes;
}

std::size_t text_bytes_freed_by(const CompactSnapshot &sample) {
  std::size_t bytes = freed(sample.driver_version) + freed(sample.cuda_version);
  if (sample.host)
    bytes += freed(sample.host->hostname);
  for (const CompactGpu &gpu : sample.gpus) {
    bytes += freed(gpu.uuid) + freed(gpu.name) + freed(gpu.pci_bus_id);
    for (const SharedText &text : gpu.texts)
      bytes += freed(text);
    bytes += freed(gpu.lost_reason);
    if (gpu.health && gpu.health.use_count() == 1)
      bytes += health_cost(*gpu.health);
    if (gpu.mig_devices)
      for (const CompactMig &device : *gpu.mig_devices)
        for (const SharedText &text : device.texts)
          bytes += freed(text);
    if (gpu.processes)
      for (const CompactProcess &process : *gpu.processes)
        for (const SharedText &text : process.texts)
          bytes += freed(text);
    if (gpu.clock_event_reasons_active)
      for (const SharedText &reason : *gpu.clock_event_reasons_active)
        bytes += freed(reason);
    for (const auto &[name, value] : gpu.extras)
      bytes += freed(name) + freed(value);
  }
  for (const CompactAllocation &held : sample.allocations)
    if (held.record.use_count() == 1)
      bytes += allocation_cost(*held.record);
  return bytes;
}

} // namespace nvsmi
