// Which GPUs of a sample a job may have: free by the views' definition (nvsmi/gpu_state.hpp) under
// the caller's limits, best first. Pure: the caller brings the sample and the claims.
#pragma once

#include "nvsmi/snapshot.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace nvsmi {

struct PickCriteria {
  double max_utilization_percent = 5; // utilization under this counts as idle
  std::int64_t min_free_mib = 0;      // at least this much memory free
};

struct GpuChoice {
  int index = 0;
  std::string uuid;
  std::int64_t free_mib = 0;
  std::optional<std::int64_t> temperature_c;
};

// The GPUs of `snapshot` that are free (gpu_state free with `max_utilization_percent` as the idle
// threshold, so no compute process; not hot, not at the power limit) with a known free memory of
// at least `min_free_mib`, best first: most free memory, then coolest (unknown last), then lowest
// index. A GPU whose UUID is unknown or not a plain UUID is never offered: claims are files named
// by it.
std::vector<GpuChoice> free_gpus(const Snapshot &snapshot, const PickCriteria &criteria);

// Whether `uuid` may name a claim file: letters, digits and '-' only, 1 to 96 of them.
bool plain_uuid(const std::string &uuid);

} // namespace nvsmi
