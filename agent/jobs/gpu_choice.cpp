#include "jobs/gpu_choice.hpp"

#include "core/number_text.hpp"

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

// Why `gpu` is not offered, or empty when it is (its free memory then in `free_mib`).
std::string why_not(const Gpu &gpu, const PickCriteria &criteria, std::int64_t &free_mib) {
  std::string name = "GPU " + std::to_string(gpu.index);
  if (!gpu.uuid || !plain_uuid(*gpu.uuid))
    return name + " has no usable UUID";
  if (gpu.mig_enabled.value_or(false))
    return name + " has MIG on";
  // The scheduler gave it to a job, which may not have started its work on it yet: not ours to
  // hand out, unless that job is the caller's.
  bool own_allocation = false;
  if (gpu.allocation) {
    own_allocation = criteria.own_job_id && gpu.allocation->job_id == *criteria.own_job_id;
    if (!own_allocation)
      return name + " allocated to " + allocation_text(*gpu.allocation);
  }
  GpuStateThresholds thresholds;
  thresholds.idle_below_percent = criteria.max_utilization_percent;
  if (own_allocation) // held with no process by the caller's job: waiting for the caller
    thresholds.allocated_idle_after_s =
        std::numeric_limits<decltype(thresholds.allocated_idle_after_s)>::max();
  switch (GpuState state = gpu_state(gpu, thresholds)) {
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
  // Free memory as nvidia-smi counts it; total - used where it printed no free figure.
  Reading free = gpu.memory_free_mib;
  if (!free && gpu.memory_total_mib && gpu.memory_used_mib)
    free = *gpu.memory_total_mib - *gpu.memory_used_mib;
  if (!free)
    return name + " free memory unknown";
  if (*free < criteria.min_free_mib)
    return name + " has " + std::to_string(*free) + " MiB free < " +
           std::to_string(criteria.min_free_mib);
  free_mib = *free;
  return "";
}

} // namespace

std::vector<GpuVerdict> judge_gpus(const Snapshot &snapshot, const PickCriteria &criteria) {
  std::vector<GpuVerdict> verdicts;
  for (const Gpu &gpu : snapshot.gpus) {
    GpuVerdict verdict;
    verdict.index = gpu.index;
    std::int64_t free_mib = 0;
    verdict.reason = why_not(gpu, criteria, free_mib);
    if (verdict.reason.empty())
      verdict.choice = GpuChoice{gpu.index, *gpu.uuid, free_mib, gpu.temperature_c};
    verdicts.push_back(std::move(verdict));
  }
  // A UUID listed twice is one GPU: offered once, under its first listing, and only when every
  // listing finds it free.
  for (std::size_t later = 0; later < snapshot.gpus.size(); ++later) {
    const std::optional<std::string> &uuid = snapshot.gpus[later].uuid;
    for (std::size_t first = 0; uuid && first < later; ++first) {
      if (snapshot.gpus[first].uuid != uuid)
        continue;
      GpuVerdict &original = verdicts[first], &again = verdicts[later];
      if (!again.choice && original.choice) {
        original.choice.reset();
        original.reason = again.reason;
      }
      again.choice.reset();
      again.reason = "GPU " + std::to_string(again.index) + " is GPU " +
                     std::to_string(original.index) + " listed again (same UUID)";
      break;
    }
  }
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
    return a.index < b.index;
  });
  return choices;
}

} // namespace nvsmi
