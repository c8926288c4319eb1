#include "jobs/gpu_claims.hpp"

#include "core/exit_codes.hpp"
#include "core/privilege.hpp"
#include "files/file_lock.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

namespace nvsmi {
namespace {

std::string claim_path(const std::string &folder, const std::string &uuid) {
  return folder + "/" + uuid + ".lock";
}

[[noreturn]] void cannot(const std::string &what, const std::string &path) {
  throw AgentError(exit_io, "cannot " + what + " " + path + ": " + std::strerror(errno) +
                                " (--lock-dir or NVSMI_LOCK_DIR names another folder)");
}

void make_folder(const std::string &folder) {
  if (::mkdir(folder.c_str(), 01777) == 0) {
    ::chmod(folder.c_str(), 01777); // mkdir's mode went through the umask
    return;
  }
  struct stat info {};
  if (errno != EEXIST || ::stat(folder.c_str(), &info) != 0 || !S_ISDIR(info.st_mode))
    cannot("make the claims folder", folder);
}

} // namespace

std::string claims_folder(const std::optional<std::string> &lock_dir) {
  if (lock_dir)
    return *lock_dir;
  if (std::optional<std::string> from_environment = caller_named_variable("NVSMI_LOCK_DIR"))
    return *from_environment;
  return "/run/lock/nvsmi-agent";
}

std::optional<GpuClaim> GpuClaim::try_take(const std::string &folder, const std::string &uuid) {
  if (!plain_uuid(uuid))
    throw AgentError(exit_bad_output, "a GPU UUID that cannot name a claim: \"" + uuid + "\"");
  make_folder(folder);
  std::string path = claim_path(folder, uuid);
  int fd = ::open(path.c_str(), O_RDONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0)
    cannot("open the claim", path);
  Descriptor descriptor(fd);
  ::fchmod(fd, 0644); // a no-op unless we made it: the umask may have taken read bits away
  while (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK)
      return std::nullopt;
    if (errno != EINTR)
      cannot("lock the claim", path);
  }
  return GpuClaim(std::move(descriptor), uuid);
}

std::optional<pid_t> claim_holder(const std::string &folder, const std::string &uuid) {
  if (!plain_uuid(uuid))
    return std::nullopt;
  int fd = ::open(claim_path(folder, uuid).c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0)
    return std::nullopt;
  Descriptor descriptor(fd);
  // Read from /proc/locks rather than tried: a trial lock, however short, could make a `run`
  // starting at that instant pass this GPU over.
  return flock_holder(fd);
}

bool claimed(const std::string &folder, const std::string &uuid) {
  return claim_holder(folder, uuid).has_value();
}

GpuAvailability available_gpus(const Snapshot &snapshot, const PickCriteria &criteria,
                               const std::string &folder) {
  GpuAvailability result;
  std::vector<std::string> unclaimed; // UUIDs
  for (const GpuVerdict &verdict : judge_gpus(snapshot, criteria)) {
    if (!verdict.choice)
      result.reasons.push_back(verdict.reason);
    else if (std::optional<pid_t> holder = claim_holder(folder, verdict.choice->uuid))
      result.reasons.push_back("GPU " + std::to_string(verdict.index) + " claimed by pid " +
                               std::to_string(*holder));
    else
      unclaimed.push_back(verdict.choice->uuid);
  }
  for (const GpuChoice &choice : free_gpus(snapshot, criteria))
    if (std::find(unclaimed.begin(), unclaimed.end(), choice.uuid) != unclaimed.end())
      result.available.push_back(choice);
  return result;
}

std::string GpuAvailability::shortage(std::size_t asked, const std::string &when) const {
  std::string message =
      std::to_string(available.size()) + " of " + std::to_string(asked) + " GPUs free" + when;
  if (reasons.empty())
    return message + ": nvidia-smi lists no other GPU";
  message += ": ";
  for (std::size_t i = 0; i < reasons.size(); ++i)
    message += (i == 0 ? "" : ", ") + reasons[i];
  return message;
}

std::vector<GpuClaim> take_claims(const std::string &folder, const std::vector<GpuChoice> &choices,
                                  std::size_t count) {
  std::vector<GpuClaim> taken;
  for (const GpuChoice &choice : choices) {
    if (taken.size() == count)
      break;
    if (std::optional<GpuClaim> claim = GpuClaim::try_take(folder, choice.uuid))
      taken.push_back(std::move(*claim));
  }
  return taken;
}

} // namespace nvsmi
