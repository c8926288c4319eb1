// Claims on GPUs for the lifetime of a job: an advisory lock (flock) on FOLDER/<uuid>.lock, held
// while the claim lives and dropped by the kernel when its process dies however it dies, so a
// `run` killed with SIGKILL leaves nothing to clean up. `pick` offers only GPUs nobody claims;
// `run` takes its claims before it starts the job, so two launches never share a GPU.
#pragma once

#include "core/descriptor.hpp"
#include "jobs/gpu_choice.hpp"

#include <optional>
#include <string>
#include <sys/types.h>
#include <vector>

namespace nvsmi {

// --lock-dir when given, else $NVSMI_LOCK_DIR when set and not empty, else
// /run/lock/nvsmi-agent.
std::string claims_folder(const std::optional<std::string> &lock_dir);

class GpuClaim {
public:
  // The claim on `uuid` (a plain_uuid), or nullopt when another process holds it. Makes the
  // folder (mode 1777, as /run/lock: every user's jobs share it, none may remove another's file)
  // and the lock file (mode 0644; flock needs only read access, so any user can lock a file
  // another user made). Lock files are never removed: removing one while another process
  // waits to lock it would let two processes hold "the" lock. Throws AgentError(exit_io) when the
  // folder or the file cannot be made or opened, naming the path and the reason.
  static std::optional<GpuClaim> try_take(const std::string &folder, const std::string &uuid);

  const std::string &uuid() const { return uuid_; }

private:
  GpuClaim(Descriptor fd, std::string uuid) : fd_(std::move(fd)), uuid_(std::move(uuid)) {}
  Descriptor fd_;
  std::string uuid_;
};

// The process that holds the claim on `uuid` now (from /proc/locks), nullopt when none does or
// it cannot be told. A claim this process holds counts too.
std::optional<pid_t> claim_holder(const std::string &folder, const std::string &uuid);

// Whether another process holds the claim on `uuid` now. Never makes the folder or the file.
bool claimed(const std::string &folder, const std::string &uuid);

// The GPUs a job may have now: free by judge_gpus and claimed by nobody, best first, and why each
// other GPU of the sample is not ("GPU 3 claimed by pid 4242"), in the sample's order.
struct GpuAvailability {
  std::vector<GpuChoice> available;
  std::vector<std::string> reasons;
  // "3 of 4 GPUs free<when>: GPU 1 in use (10% >= 5%), GPU 3 claimed by pid 4242"
  std::string shortage(std::size_t asked, const std::string &when = "") const;
};
GpuAvailability available_gpus(const Snapshot &snapshot, const PickCriteria &criteria,
                               const std::string &folder);

// Claims on the first `count` of `choices` (best first) that nobody holds, in their order; fewer
// when fewer can be had (the caller decides whether that is enough, and lets go by dropping them).
std::vector<GpuClaim> take_claims(const std::string &folder, const std::vector<GpuChoice> &choices,
                                  std::size_t count);

} // namespace nvsmi
