#include "jobs/gpu_choice.hpp"

#include "nvsmi/gpu_state.hpp"

#include <algorithm>
#include <cctype>

namespace nvsmi {

bool plain_uuid(const std::string &uuid) {
  return !uuid.empty() && uuid.size() <= 96 && std::all_of(uuid.begin(), uuid.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-';
  });
}

std::vector<GpuChoice> free_gpus(const Snapshot &snapshot, const PickCriteria &criteria) {
  GpuStateThresholds thresholds;
  thresholds.idle_below_percent = criteria.max_utilization_percent;
  std::vector<GpuChoice> choices;
  for (const Gpu &gpu : snapshot.gpus) {
    if (!gpu.uuid || !plain_uuid(*gpu.uuid) || gpu_state(gpu, thresholds) != GpuState::free)
      continue;
    // Free memory as nvidia-smi counts it; total - used where it printed no free figure.
    std::optional<std::int64_t> free_mib = gpu.memory_free_mib;
    if (!free_mib && gpu.memory_total_mib && gpu.memory_used_mib)
      free_mib = *gpu.memory_total_mib - *gpu.memory_used_mib;
    if (!free_mib || *free_mib < criteria.min_free_mib)
      continue;
    choices.push_back({gpu.index, *gpu.uuid, *free_mib, gpu.temperature_c});
  }
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
