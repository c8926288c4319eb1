// Claims on GPUs for the lifetime of a job: an advisory lock (flock) on a claim file per GPU UUID
// and user in the claims folder, held while the claim lives and dropped by the kernel when its
// process dies however it dies, so a `run` killed with SIGKILL leaves nothing to clean up. `pick`
// offers only GPUs nobody claims; `run` takes its claims before it starts the job, so two launches
// never share a GPU.
//
// Why a file per user: in a shared (sticky) folder a file can be removed by its owner, and a lock
// on a removed file keeps nobody else out. So each user locks only a file of their own
// (FOLDER/<uuid>.lock for root, FOLDER/<uuid>.<uid>.lock for another user), which no other user can
// remove, and after locking it looks at every other user's file of that GPU: held, it lets go.
// Two users taking one GPU at once each lock first and look second, so at least one of them sees
// the other (both may, and both then let go: never two jobs on one GPU). Opening only one's own
// file with O_CREAT also keeps clear of fs.protected_regular, which refuses O_CREAT on another
// user's file in a sticky folder, root included.
#pragma once

#include "core/descriptor.hpp"
#include "jobs/gpu_choice.hpp"

#include <optional>
#include <string>
#include <sys/types.h>
#include <vector>

namespace nvsmi {

// --lock-dir when given, else $NVSMI_LOCK_DIR when set and not empty, else
// /run/lock/nvsmi-agent (made at boot by the package's tmpfiles.d file: root's, mode 1777).
std::string claims_folder(const std::optional<std::string> &lock_dir);

// The claims folder is trusted only when it is owned by root or by the caller (nobody else can
// then remove or rename what is in it), writable by others only with the sticky bit (so that
// they cannot remove the caller's files either), not a symbolic link (its owner could repoint
// it), and every folder above it is one of root's or the caller's that others may write only with
// the sticky bit, reached through no symbolic link but root's (so that nobody can put another
// folder in its place); anything else is refused with AgentError(exit_io), naming the folder and
// why.

class GpuClaim {
public:
  // The claim on `uuid` (a plain_uuid), or nullopt when another process holds it, or when the
  // GPU cannot be claimed: something other than a regular file, or a file another user made,
  // sits where a claim file goes (said once on stderr). Makes a missing folder (root: mode 1777,
  // as /run/lock, for every user's jobs; another user: 0700, their own) and the caller's claim
  // file (mode 0644: others need to read it to see its lock). Claim files are never removed:
  // removing one while another process waits to lock it would let two processes hold "the" lock.
  // Never blocks. Throws AgentError(exit_io) when the folder is refused or cannot be made or
  // opened, or the file cannot be made, naming the path and the reason.
  static std::optional<GpuClaim> try_take(const std::string &folder, const std::string &uuid);

  const std::string &uuid() const { return uuid_; }

private:
  GpuClaim(Descriptor fd, std::string uuid) : fd_(std::move(fd)), uuid_(std::move(uuid)) {}
  Descriptor fd_;
  std::string uuid_;
};

// Who has `uuid` now, as far as this process can tell: nobody, a process (its pid where
// /proc/locks names it), or unusable (something not a claim file sits at a claim's path).
// Or blocked: a process that /proc/locks names holds a shared lock on a claim file (anyone who
// may read it can), which keeps every `run` out.
struct ClaimState {
  enum Kind { free, held, unusable, blocked } kind = free;
  std::optional<pid_t> holder; // held: the holder, where /proc/locks names it; blocked: the blocker
  std::string why; // unusable: what sits there; blocked: "blocked by pid N (uid U) holding ..."
};
// Never makes the folder or a file. Throws AgentError(exit_io) when the folder is refused.
ClaimState claim_state(const std::string &folder, const std::string &uuid);

// The process that holds the claim on `uuid` now (from /proc/locks), nullopt when none does or
// it cannot be told.
std::optional<pid_t> claim_holder(const std::string &folder, const std::string &uuid);

// Whether another process holds the claim on `uuid` now, named or not.
bool claimed(const std::string &folder, const std::string &uuid);

// The GPUs a job may have now: free by judge_gpus and claimed by nobody, best first, and why each
// other GPU of the sample is not ("GPU 3 claimed by pid 4242"; "GPU 3 claim unknown" when a
// process that /proc/locks does not name holds it, as a `run` outside this PID namespace), in the
// sample's order.
struct GpuAvailability {
  std::vector<GpuChoice> available;
  std::vector<std::string> reasons;
  bool instances = false; // MIG instances were asked for (PickCriteria::mig_profile)
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
