// Which GPUs of a sample a job may have: free by the views' definition (nvsmi/gpu_state.hpp) under
// the caller's limits, best first. Pure: the caller brings the sample and the claims.
#pragma once

#include "nvsmi/snapshot.hpp"
#include "nvsmi/thresholds.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace nvsmi {

struct PickCriteria {
  double max_utilization_percent = gpu_thresholds::idle_below_percent; // under this counts as idle
  std::int64_t min_free_mib = 0; // at least this much memory free
  // The caller's own batch job (its SLURM_JOB_ID): a GPU allocated to it may be picked, one
  // allocated to any other job never is, even with no process on it.
  std::optional<std::string> own_job_id;
};

struct GpuChoice {
  int index = 0;
  std::string uuid;
  std::int64_t free_mib = 0;
  std::optional<std::int64_t> temperature_c;
};

// For one GPU of a sample: offered to a job (`choice`), or why not, in words for the one line a
// command prints when there are not enough ("GPU 1 in use (10% >= 5%)").
struct GpuVerdict {
  int index = 0;
  std::optional<GpuChoice> choice;
  std::string reason; // empty when offered
};

// Every GPU of `snapshot`, in its order. Offered: free (gpu_state free with
// `max_utilization_percent` as the idle threshold, so no compute process; not hot, not at the power
// limit), not allocated to a batch job other than the caller's (an allocated GPU of the caller's
// own job is free to it, however long it has been held), a known free memory of at least
// `min_free_mib`, MIG off (its instances have no UUIDs in
// a Snapshot, so a MIG GPU is never handed out whole), and a plain UUID (claims are files named by
// it). A UUID that nvidia-smi lists twice is one GPU: offered once, under its first index, and
// only when both listings find it free.
std::vector<GpuVerdict> judge_gpus(const Snapshot &snapshot, const PickCriteria &criteria);

// The offered GPUs of judge_gpus, best first: most free memory, then coolest (unknown last), then
// lowest index.
std::vector<GpuChoice> free_gpus(const Snapshot &snapshot, const PickCriteria &criteria);

// Whether `uuid` may name a claim file: letters, digits and '-' only, 1 to 96 of them.
bool plain_uuid(const std::string &uuid);

} // namespace nvsmi
