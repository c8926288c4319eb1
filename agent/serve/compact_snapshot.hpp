// A Snapshot as serve's history keeps it: readings as plain numbers with a bit for "known", and
// each text shared with the sample before when it has not changed (GPU names, UUIDs, process
// names rarely do; a GPU's health block is shared while it stays the same). An 8-GPU sample costs
// about 4 KB instead of the 25 KB its rendered bodies
// took, and turns back into the same Snapshot, so the history is still served by format_json.
#pragma once

#include "nvsmi/snapshot.hpp"

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace nvsmi {

using SharedText = std::shared_ptr<const std::string>; // null for unknown

// Whole-number readings in a fixed order, known where their bit in `known` is set.
template <std::size_t N> struct PackedReadings {
  std::array<std::int64_t, N> values{};
  std::uint32_t known = 0;
};

// How many fields of the table (nvsmi/gpu_fields.hpp) of each kind a sample keeps in slots of its
// own (History::own_slot): each costs its slot per GPU and sample, used or not. compact()
// refuses a table with more.
inline constexpr std::size_t own_slot_integers = 24;
inline constexpr std::size_t own_slot_reals = 2;
inline constexpr std::size_t own_slot_texts = 1;

// A MIG instance: index, GPU and compute instance ids, memory total, used and free; its UUID and
// profile (from nvidia-smi -L), shared with the sample before while they stay the same.
struct CompactMig {
  PackedReadings<6> numbers;
  std::array<SharedText, 2> texts;
};

struct CompactProcess {
  // pid, used memory, GPU and compute instance ids, SM and memory utilization, uid, host memory
  PackedReadings<8> numbers;
  double cpu_percent = 0;             // NaN where unknown
  double utilization_age_seconds = 0; // NaN where unknown
  // type, name, user, command, started, container, pod_uid, slurm_job_id, systemd_unit
  std::array<SharedText, 9> texts;
};

// Where each reading sits in CompactHost::numbers and reals (the order compact_snapshot.cpp packs
// them in), for readers of the packed samples such as the series. A GPU's: own_slot_of
// (nvsmi/gpu_fields.hpp).
enum CompactHostNumber : std::size_t {
  host_cpu_count,
  host_memory_total_mib,
  host_memory_used_mib
};
enum CompactHostReal : std::size_t {
  host_cpu_percent,
  host_load1,
  host_disk_read,
  host_disk_write,
  host_network_receive,
  host_network_send
};

// The reading at `i`, or nullopt where it is not known.
template <std::size_t N>
std::optional<std::int64_t> packed_reading(const PackedReadings<N> &packed, std::size_t i) {
  if (packed.known & (1u << i))
    return packed.values[i];
  return std::nullopt;
}

// A GPU's health (the field table's readings that move every sample aside, History::own_slot,
// kept in CompactGpu::numbers) and the clock event reasons it reports: they seldom change, so
// a sample shares the block of the sample before, or of the GPU before, while they are the same.
struct CompactHealth {
  GpuHealth health;
  std::optional<std::vector<std::string>> clock_event_reasons_reported;
};

struct CompactGpu {
  int index = 0;
  SharedText uuid, name, pci_bus_id;
  SharedText lost_reason; // why nvidia-smi could not read it: the history keeps a lost GPU lost
  std::shared_ptr<const CompactHealth> health;
  // The field table's History::own_slot fields by kind, each in the table's order
  // (nvsmi/gpu_fields.hpp): the GPU's own readings and the health readings that move every
  // sample. Reals are NaN where unknown.
  PackedReadings<own_slot_integers> numbers;
  std::array<double, own_slot_reals> reals{};
  std::array<SharedText, own_slot_texts> texts;
  std::int8_t mig_enabled = -1; // -1 unknown, else 0 or 1
  std::optional<std::vector<CompactMig>> mig_devices;
  std::optional<std::vector<CompactProcess>> processes;
  std::optional<std::vector<SharedText>> clock_event_reasons_active;
  std::vector<std::pair<SharedText, SharedText>> extras; // name, value
};

// The batch job that holds a GPU: the record shared with the sample before while the same one
// holds it, its held_s (which grows every sample) aside. Kept beside the GPUs, not in each, so
// that a sample with no job held costs nothing for them.
struct CompactAllocation {
  std::size_t gpu = 0; // its position in CompactSnapshot::gpus
  // Its MIG instance's position in that GPU's mig_devices, for an instance's record.
  std::optional<std::size_t> mig;
  std::shared_ptr<const Allocation> record;
  Reading held_s;
};

struct CompactHost {
  SharedText hostname;
  PackedReadings<3> numbers; // CPU count, memory total and used
  // CPU percent, load, disk read and write, network receive and send (CompactHostReal), NaN
  // where unknown.
  std::array<double, 6> reals{};
};

struct CompactSnapshot {
  Source source = Source::xml;
  std::optional<Timestamp> timestamp;
  SharedText driver_version, cuda_version;
  std::vector<CompactGpu> gpus;
  std::optional<CompactHost> host;
  std::vector<CompactAllocation> allocations; // the GPUs and instances jobs hold, in order
  bool allocations_read = false;              // Snapshot::allocations_read
};

// `snapshot` packed, sharing each text that equals the one in the same place of `previous`.
// `new_text_bytes` grows by what the texts it had to allocate cost.
CompactSnapshot compact(const Snapshot &snapshot, const CompactSnapshot *previous,
                        std::size_t &new_text_bytes);
Snapshot expand(const CompactSnapshot &compact);

// The heap the sample's own structures take (its texts aside), allocator overhead included.
std::size_t own_bytes(const CompactSnapshot &sample);
// What its texts give back when `sample` is freed: those no other sample shares.
std::size_t text_bytes_freed_by(const CompactSnapshot &sample);

} // namespace nvsmi
