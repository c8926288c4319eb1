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
  // `pick --mig [PROFILE]`: offer MIG instances rather than whole GPUs, of this profile
  // ("3g.40gb") or, empty, of any; nullopt: whole GPUs.
  std::optional<std::string> mig_profile;
};

struct GpuChoice {
  int index = 0;    // the GPU's, for an instance too
  std::string uuid; // the GPU's, or the instance's "MIG-..."
  std::int64_t free_mib = 0;
  std::optional<std::int64_t> temperature_c;
  // An instance's MIG device index, profile and GPU's UUID (a claim on the whole GPU keeps a job
  // off its instances too); nullopt for a whole GPU.
  std::optional<std::int64_t> mig_device;
  std::optional<std::string> profile;
  std::optional<std::string> gpu_uuid;
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
// `min_free_mib`, MIG off (a MIG GPU is never handed out whole: its refusal names its free
// instances), and a plain UUID (claims are files named by it). A UUID that nvidia-smi lists twice
// is one GPU: offered once, under its first index, and only when both listings find it free.
// With `mig_profile`, a verdict per MIG instance instead, in GPU and device order: offered where
// mig_state says free, of the profile asked, under the same allocation, memory and UUID rules (its
// own free memory, its "MIG-..." UUID from `nvidia-smi -L`); a GPU with MIG off is refused.
std::vector<GpuVerdict> judge_gpus(const Snapshot &snapshot, const PickCriteria &criteria);

// The offered GPUs of judge_gpus, best first: most free memory, then coolest (unknown last), then
// lowest index.
std::vector<GpuChoice> free_gpus(const Snapshot &snapshot, const PickCriteria &criteria);

// Whether `uuid` may name a claim file: letters, digits and '-' only, 1 to 96 of them.
bool plain_uuid(const std::string &uuid);

} // namespace nvsmi
