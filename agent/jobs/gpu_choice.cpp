#include "jobs/gpu_choice.hpp"

#include "core/mig_text.hpp"
#include "core/number_text.hpp"
#include "core/screen_text.hpp"

#include "nvsmi/allocation.hpp"
#include "nvsmi/gpu_state.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <limits>

namespace nvsmi {

bool plain_uuid(const std::string &uuid) {
  return !uuid.empty() && uuid.size() <= 96 && std::all_of(uuid.begin(), uuid.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-';
  });
}

namespace {

// 1.5 as "1.5%", 5 as "5%".
std::string percent_text(double value) { return number(value, "%g%%"); }

// Why a job may not have what the scheduler gave to another job; empty where nothing holds it, or
// the caller's own job does (`own` then set).
std::string allocated_elsewhere(const std::optional<Allocation> &allocation,
                                const PickCriteria &criteria, const std::string &name, bool &own) {
  // The scheduler gave it to a job, which may not have started its work on it yet: not ours to
  // hand out, unless that job is the caller's.
  own = false;
  if (!allocation)
    return "";
  own = criteria.own_job_id && allocation->job_id == *criteria.own_job_id;
  return own ? "" : name + " allocated to " + allocation_text(*allocation);
}

// The thresholds a state is judged by for `pick`: its utilization limit, and no allocated but
// idle where the allocation is the caller's own (its job has not started its work yet).
GpuStateThresholds pick_thresholds(const PickCriteria &criteria, bool own_allocation) {
  GpuStateThresholds thresholds;
  thresholds.idle_below_percent = criteria.max_utilization_percent;
  if (own_allocation)
    thresholds.allocated_idle_after_s =
        std::numeric_limits<decltype(thresholds.allocated_idle_after_s)>::max();
  return thresholds;
}

// Why `free` (nvidia-smi's free memory; total - used where it printed none) is not enough, or
// empty with `free_mib` set.
std::string short_of_memory(Reading free, const Reading &total, const Reading &used,
                            const PickCriteria &criteria, const std::string &name,
                            std::int64_t &free_mib) {
  if (!free && total && used)
    free = *total - *used;
  if (!free)
    return name + " free memory unknown";
  if (*free < criteria.min_free_mib)
    return name + " has " + std::to_string(*free) + " MiB free < " +
           std::to_string(criteria.min_free_mib);
  free_mib = *free;
  return "";
}

// " (2 of 3 instances free: 3g.40gb, 1g.10gb; --mig picks them)": what a refusal of a GPU with
// MIG on says of its instances, so that the caller knows what to ask for instead (profiles where
// nvidia-smi -L gave them).
std::string instances_text(const Gpu &gpu) {
  if (!gpu.mig_devices) // the CSV query does not list them
    return "";
  if (gpu.mig_devices->empty())
    return " (no MIG instances)";
  std::string profiles;
  std::size_t count = 0;
  bool pickable = false; // a free one has a UUID to be handed out by
  for (const MigDevice &device : *gpu.mig_devices) {
    if (mig_state(gpu, device) != GpuState::free || device.allocation)
      continue; // a job's, even one that has not started on it yet
    ++count;
    pickable = pickable || (device.uuid && plain_uuid(*device.uuid));
    if (device.profile)
      profiles += (profiles.empty() ? ": " : ", ") + mig_profile_text(*device.profile);
  }
  std::string total = std::to_string(gpu.mig_devices->size());
  if (count == 0)
    return " (none of its " + total + " instances free)";
  return " (" + std::to_string(count) + " of " + total + " instances free" + profiles +
         (pickable ? "; --mig picks them)" : "; their UUIDs unknown: nvidia-smi -L not read)");
}

// Why `gpu` is not offered, or empty when it is (its free memory then in `free_mib`).
std::string why_not(const Gpu &gpu, const PickCriteria &criteria, std::int64_t &free_mib) {
  std::string name = "GPU " + std::to_string(gpu.index);
  if (!gpu.uuid || !plain_uuid(*gpu.uuid))
    return name + " has no usable UUID";
  if (gpu.mig_enabled.value_or(false))
    return name + " has MIG on" + instances_text(gpu);
  bool own_allocation = false;
  if (std::string refused = allocated_elsewhere(gpu.allocation, criteria, name, own_allocation);
      !refused.empty())
    return refused;
  switch (GpuState state = gpu_state(gpu, pick_thresholds(criteria, own_allocation))) {
  case GpuState::free:
    break;
  case GpuState::idle:
    return name + " has no process list";
  case GpuState::unknown:
    // Free but for a reading that decides failing: it may hide what a sample before read.
    if (std::optional<std::string> why = undecided_health(gpu))
      return name + " health unknown (" + *why + ")";
    return name + " has neither utilization nor processes";
  case GpuState::in_use:
    if (gpu.utilization_gpu_percent) // else a compute process holds it
      return name + " in use (" + std::to_string(*gpu.utilization_gpu_percent) +
             "% >= " + percent_text(criteria.max_utilization_percent) + ")";
    return name + " in use";
  default:
    return name + " " + std::string(gpu_state_name(state));
  }
  return short_of_memory(gpu.memory_free_mib, gpu.memory_total_mib, gpu.memory_used_mib, criteria,
                         name, free_mib);
}

// "GPU 0 MIG 1 (3g.40gb)": an instance as refusals name it (printable: -L may print anything).
std::string instance_name(const Gpu &gpu, const MigDevice &device) {
  std::string name = mig_instance_name(gpu.index, device.index);
  return device.profile ? name + " (" + mig_profile_text(*device.profile) + ")" : name;
}

// Why an instance is not offered, or empty when it is: the GPU's rules, on the instance's own
// state and memory.
std::string why_not_instance(const Gpu &gpu, const MigDevice &device, const PickCriteria &criteria,
                             std::int64_t &free_mib) {
  std::string name = instance_name(gpu, device);
  if (!device.uuid || !plain_uuid(*device.uuid))
    return name + " has no usable UUID (from nvidia-smi -L)";
  if (!criteria.mig_profile->empty() && device.profile != *criteria.mig_profile)
    return name + " is not " + mig_profile_text(*criteria.mig_profile);
  // The instance's own record, else the whole GPU's (a prolog that records GPUs alone).
  bool own_allocation = false;
  if (std::string refused = allocated_elsewhere(
          device.allocation ? device.allocation : gpu.allocation, criteria, name, own_allocation);
      !refused.empty())
    return refused;
  switch (GpuState state = mig_state(gpu, device, pick_thresholds(criteria, own_allocation))) {
  case GpuState::free:
    break;
  case GpuState::unknown:
    if (std::optional<std::string> why = undecided_health(gpu))
      return name + " health unknown (" + *why + ")";
    return name + (gpu.processes ? " has no instance ids" : " has no process list");
  default:
    return name + " " + std::string(gpu_state_name(state));
  }
  return short_of_memory(device.memory_free_mib, device.memory_total_mib, device.memory_used_mib,
                         criteria, name, free_mib);
}

// A UUID listed twice is one GPU (or instance): offered once, under its first listing, and only
// when every listing finds it free. `uuids` and `names` are each verdict's listed UUID and name.
void once_per_uuid(std::vector<GpuVerdict> &verdicts, const std::vector<Text> &uuids,
                   const std::vector<std::string> &names) {
  for (std::size_t later = 0; later < verdicts.size(); ++later) {
    for (std::size_t first = 0; uuids[later] && first < later; ++first) {
      if (uuids[first] != uuids[later])
        continue;
      GpuVerdict &original = verdicts[first], &again = verdicts[later];
      if (!again.choice && original.choice) {
        original.choice.reset();
        original.reason = again.reason;
      }
      again.choice.reset();
      again.reason = names[later] + " is " + names[first] + " listed again (same UUID)";
      break;
    }
  }
}

// judge_gpus with --mig: a verdict per instance; a GPU without instances is one refusal.
std::vector<GpuVerdict> judge_instances(const Snapshot &snapshot, const PickCriteria &criteria) {
  std::vector<GpuVerdict> verdicts;
  std::vector<Text> uuids;
  std::vector<std::string> names;
  for (const Gpu &gpu : snapshot.gpus) {
    std::string name = "GPU " + std::to_string(gpu.index);
    if (!gpu.mig_enabled.value_or(false) || !gpu.mig_devices || gpu.mig_devices->empty()) {
      GpuVerdict verdict;
      verdict.index = gpu.index;
      verdict.reason = name + (!gpu.mig_enabled    ? " MIG mode unknown"
                               : !*gpu.mig_enabled ? " has MIG off"
                               : !gpu.mig_devices  ? " MIG instances unknown"
                                                   : " has no MIG instances");
      verdicts.push_back(std::move(verdict));
      uuids.emplace_back();
      names.push_back(name);
      continue;
    }
    for (const MigDevice &device : *gpu.mig_devices) {
      GpuVerdict verdict;
      verdict.index = gpu.index;
      std::int64_t free_mib = 0;
      verdict.reason = why_not_instance(gpu, device, criteria, free_mib);
      if (verdict.reason.empty())
        verdict.choice = GpuChoice{gpu.index,    *device.uuid,   free_mib, gpu.temperature_c,
                                   device.index, device.profile, gpu.uuid};
      verdicts.push_back(std::move(verdict));
      uuids.push_back(device.uuid);
      names.push_back(instance_name(gpu, device));
    }
  }
  once_per_uuid(verdicts, uuids, names);
  return verdicts;
}

} // namespace

std::vector<GpuVerdict> judge_gpus(const Snapshot &snapshot, const PickCriteria &criteria) {
  if (criteria.mig_profile)
    return judge_instances(snapshot, criteria);
  std::vector<GpuVerdict> verdicts;
  std::vector<Text> uuids;
  std::vector<std::string> names;
  for (const Gpu &gpu : snapshot.gpus) {
    GpuVerdict verdict;
    verdict.index = gpu.index;
    std::int64_t free_mib = 0;
    verdict.reason = why_not(gpu, criteria, free_mib);
    if (verdict.reason.empty())
      verdict.choice = GpuChoice{gpu.index,    *gpu.uuid,    free_mib,    gpu.temperature_c,
                                 std::nullopt, std::nullopt, std::nullopt};
    verdicts.push_back(std::move(verdict));
    uuids.push_back(gpu.uuid);
    names.push_back("GPU " + std::to_string(gpu.index));
  }
  once_per_uuid(verdicts, uuids, names);
  return verdicts;
}

std::vector<GpuChoice> free_gpus(const Snapshot &snapshot, const PickCriteria &criteria) {
  std::vector<GpuChoice> choices;
  for (GpuVerdict &verdict : judge_gpus(snapshot, criteria))
    if (verdict.choice)
      choices.push_back(std::move(*verdict.choice));
  std::stable_sort(choices.begin(), choices.end(), [](const GpuChoice &a, const GpuChoice &b) {
    if (a.free_mib != b.free_mib)
      return a.free_mib > b.free_mib;
    if (a.temperature_c.has_value() != b.temperature_c.has_value())
      return a.temperature_c.has_value();
    if (a.temperature_c && *a.temperature_c != *b.temperature_c)
      return *a.temperature_c < *b.temperature_c;
    if (a.index != b.index)
      return a.index < b.index;
    return a.mig_device.value_or(-1) < b.mig_device.value_or(-1);
  });
  return choices;
}

} // namespace nvsmi
