#include "jobs/gpu_claims.hpp"

#include "core/exit_codes.hpp"
#include "core/log_line.hpp"
#include "core/mig_text.hpp"
#include "core/privilege.hpp"
#include "files/file_io.hpp"
#include "files/file_lock.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <mutex>
#include <set>
#include <sys/file.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

namespace nvsmi {
namespace {

// A lock that is refused but held by nobody /proc/locks names exclusively is most likely a
// passing look (another `pick` trying the file shared): tried again for up to ~0.4 s.
constexpr int lock_tries = 200;
constexpr std::chrono::milliseconds between_tries{2};

[[noreturn]] void cannot(const std::string &what, const std::string &path) {
  throw AgentError(exit_io, "cannot " + what + " " + path + ": " + std::strerror(errno) +
                                " (--lock-dir or NVSMI_LOCK_DIR names another folder)");
}

// The caller's own claim file of `uuid`: root's keeps the name every claim had before claims were
// per user.
std::string own_name(const std::string &uuid) {
  uid_t uid = ::geteuid();
  return uid == 0 ? uuid + ".lock" : uuid + "." + std::to_string(uid) + ".lock";
}

// Whether `name` is some user's claim file of `uuid`: "<uuid>.lock" or "<uuid>.<digits>.lock".
bool claim_name(const std::string &name, const std::string &uuid) {
  const std::string prefix = uuid + ".", suffix = ".lock";
  if (name == uuid + suffix)
    return true;
  if (name.size() <= prefix.size() + suffix.size() || name.compare(0, prefix.size(), prefix) != 0 ||
      name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
    return false;
  return std::all_of(name.begin() + static_cast<long>(prefix.size()),
                     name.end() - static_cast<long>(suffix.size()),
                     [](char c) { return c >= '0' && c <= '9'; });
}

// Says once per process why a GPU is never offered, though every sample of `--wait` finds it.
void say_once(const std::string &message) {
  static std::mutex mutex;
  static std::set<std::string> said;
  std::lock_guard<std::mutex> lock(mutex);
  if (said.insert(message).second)
    log_line(message);
}

ClaimState unusable(const std::string &path, const std::string &why) {
  say_once(path + " " + why + ": its GPU is not offered until it is removed");
  return {ClaimState::unusable, std::nullopt, why};
}

[[noreturn]] void refuse(const std::string &folder, const std::string &why) {
  throw AgentError(exit_io, "refusing the claims folder " + folder + ": " + why +
                                " (systemd-tmpfiles --create makes /run/lock/nvsmi-agent; "
                                "--lock-dir or NVSMI_LOCK_DIR names another folder)");
}

// Why another user could put another folder at `path` (absolute, no trailing slash) in place of
// the one there: a folder above it that they own or may rename things in, or a symbolic link of
// theirs. "" when nobody but root and the caller could. A root's link is followed as root made it,
// and then the folders it leads to are looked at too.
std::string swappable_parent(const std::string &path) {
  const std::size_t last = path.find_last_of('/');
  std::vector<std::string> parents{"/"};
  for (std::size_t at = path.find('/', 1); at != std::string::npos && at <= last;
       at = path.find('/', at + 1))
    if (path[at - 1] != '/')
      parents.push_back(path.substr(0, at));
  bool through_link = false;
  for (const std::string &parent : parents) {
    struct stat info {};
    if (::lstat(parent.c_str(), &info) != 0)
      break; // opening the folder says why
    std::string owner = "uid " + std::to_string(info.st_uid);
    if (S_ISLNK(info.st_mode) && info.st_uid != 0)
      return "its parent " + parent + " is a symbolic link of " + owner + ", who could repoint it";
    through_link = through_link || S_ISLNK(info.st_mode);
    if (!S_ISDIR(info.st_mode))
      continue;
    if (info.st_uid != 0 && info.st_uid != ::geteuid())
      return "its parent " + parent + " belongs to " + owner +
             ", neither root nor you, who could put another folder in its place";
    if ((info.st_mode & (S_IWGRP | S_IWOTH)) && !(info.st_mode & S_ISVTX))
      return "its parent " + parent +
             " is writable by others without the sticky bit, so they could put another folder "
             "in its place";
  }
  if (!through_link)
    return "";
  char *resolved = ::realpath(last == 0 ? "/" : path.substr(0, last).c_str(), nullptr);
  if (!resolved)
    return ""; // opening the folder says why
  std::string real(resolved);
  std::free(resolved);
  return swappable_parent((real == "/" ? "" : real) + path.substr(last));
}

// `folder` as an absolute path without trailing slashes, so that O_NOFOLLOW applies to its last
// component.
std::string absolute(const std::string &folder) {
  std::string path = folder;
  if (path.empty() || path[0] != '/') {
    char *here = ::getcwd(nullptr, 0);
    if (!here)
      cannot("find the current folder for", folder);
    path = std::string(here) + "/" + path;
    std::free(here);
  }
  while (path.size() > 1 && path.back() == '/')
    path.pop_back();
  return path;
}

// The folder, open, once it is one claims can be trusted in; nullopt when it does not exist and
// `make` is false. Its parents are looked at by path, the folder itself by the descriptor that is
// kept, so that no swap between the look and the open can win.
std::optional<Descriptor> open_folder(const std::string &folder, bool make) {
  const std::string path = absolute(folder);
  const std::string parent_why = swappable_parent(path);
  if (!parent_why.empty())
    refuse(folder, parent_why);
  const int flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
  int fd = ::open(path.c_str(), flags);
  if (fd < 0 && errno == ENOENT) {
    if (!make)
      return std::nullopt;
    uid_t uid = ::geteuid();
    // Root's is everybody's, as systemd-tmpfiles makes it; another user's is theirs alone, since
    // a folder they own is one they could empty under anybody else's claims.
    if (::mkdir(path.c_str(), uid == 0 ? 01777 : 0700) != 0 && errno != EEXIST)
      cannot("make the claims folder", folder);
    fd = ::open(path.c_str(), flags);
    struct stat made {};
    if (fd >= 0 && uid == 0 && ::fstat(fd, &made) == 0 && made.st_uid == 0 &&
        (made.st_mode & 07777) != 01777)
      ::fchmod(fd, 01777); // mkdir's mode went through the umask
  }
  if (fd < 0 && (errno == ELOOP || errno == ENOTDIR)) {
    struct stat link {};
    if (::lstat(path.c_str(), &link) == 0 && S_ISLNK(link.st_mode))
      refuse(folder, "it is a symbolic link, which its owner (uid " + std::to_string(link.st_uid) +
                         ") could repoint to another folder");
  }
  if (fd < 0)
    cannot("open the claims folder", folder);
  Descriptor descriptor(fd);
  struct stat info {};
  if (::fstat(fd, &info) != 0)
    cannot("read the claims folder", folder);
  if (info.st_uid != 0 && info.st_uid != ::geteuid())
    refuse(folder, "it belongs to uid " + std::to_string(info.st_uid) +
                       ", neither root nor you, so others could remove the claims in it");
  if ((info.st_mode & (S_IWGRP | S_IWOTH)) && !(info.st_mode & S_ISVTX))
    refuse(folder, "it is writable by others without the sticky bit, so others could remove the "
                   "claims in it");
  return descriptor;
}

// The names of the claim files of `uuid` in the folder open at `folder_fd`.
std::vector<std::string> claim_files(int folder_fd, const std::string &folder,
                                     const std::string &uuid) {
  int fd = ::openat(folder_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR *listing = fd < 0 ? nullptr : ::fdopendir(fd);
  if (!listing) {
    if (fd >= 0)
      ::close(fd);
    cannot("list the claims folder", folder);
  }
  std::vector<std::string> names;
  while (dirent *entry = ::readdir(listing))
    if (claim_name(entry->d_name, uuid))
      names.push_back(entry->d_name);
  ::closedir(listing);
  std::sort(names.begin(), names.end());
  return names;
}

// " (uid U)" of the process `pid`, "" when it cannot be told.
std::string owner_of(pid_t pid) {
  struct stat info {};
  if (::stat(("/proc/" + std::to_string(pid)).c_str(), &info) != 0)
    return "";
  return " (uid " + std::to_string(info.st_uid) + ")";
}

// A process other than this one that holds a shared flock on the file open at `fd` all through
// the ~0.4 s that a passing look (a `pick`) would take: it keeps every `run` out, though a shared
// trial lock still succeeds. Anyone who may read a claim file can do that.
std::optional<pid_t> lasting_shared_lock(int fd) {
  std::set<pid_t> lasting;
  for (int attempt = 0; attempt < lock_tries; ++attempt) {
    if (attempt > 0)
      std::this_thread::sleep_for(between_tries);
    std::set<pid_t> now;
    for (const Flock &lock : flocks_on(fd))
      if (!lock.exclusive && lock.pid > 0 && lock.pid != ::getpid() &&
          (attempt == 0 || lasting.count(lock.pid)))
        now.insert(lock.pid);
    if (now.empty())
      return std::nullopt;
    lasting = std::move(now);
  }
  return *lasting.begin();
}

// Whether someone holds the claim file `name` (any user's; `mine` when it has the caller's own
// name): never blocks, never follows a link, never opens anything but a regular file.
ClaimState look_at(int folder_fd, const std::string &folder, const std::string &name, bool mine) {
  std::string path = folder + "/" + name;
  struct stat info {};
  if (::fstatat(folder_fd, name.c_str(), &info, AT_SYMLINK_NOFOLLOW) != 0)
    return errno == ENOENT ? ClaimState{} : unusable(path, std::strerror(errno));
  if (!S_ISREG(info.st_mode))
    return unusable(path, std::string("is ") + file_kind(info.st_mode));
  int fd =
      ::openat(folder_fd, name.c_str(), O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
  if (fd < 0)
    return errno == ENOENT ? ClaimState{} : unusable(path, std::strerror(errno));
  Descriptor descriptor(fd);
  if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode))
    return unusable(path, std::string("is ") + file_kind(info.st_mode));
  if (mine && info.st_uid != ::geteuid()) // never locked by the caller: see try_take
    return unusable(path, "belongs to uid " + std::to_string(info.st_uid) + ", not to you");
  if (std::optional<pid_t> holder = flock_holder(fd))
    return {ClaimState::held, holder, ""};
  if (std::optional<pid_t> blocker = lasting_shared_lock(fd))
    return {ClaimState::blocked, blocker,
            "blocked by pid " + std::to_string(*blocker) + owner_of(*blocker) +
                " holding a shared lock on " + path};
  // /proc/locks names no holder: none, or one it does not show (another PID namespace, another
  // device number). A shared lock taken and let go at once tells (a `run` taking the file at that
  // very instant tries again).
  if (::flock(fd, LOCK_SH | LOCK_NB) == 0) {
    ::flock(fd, LOCK_UN);
    return {};
  }
  if (errno == EWOULDBLOCK || errno == EINTR) // taken since /proc/locks was read, perhaps
    return {ClaimState::held, flock_holder(fd), ""};
  return unusable(path, std::string("cannot be locked: ") + std::strerror(errno));
}

// The state of `uuid` from all its claim files, `skip` (the caller's own, held) left out: held or
// unusable by the first that is.
ClaimState state_in(int folder_fd, const std::string &folder, const std::string &uuid,
                    const std::string &skip = "") {
  for (const std::string &name : claim_files(folder_fd, folder, uuid)) {
    if (name == skip)
      continue;
    ClaimState state = look_at(folder_fd, folder, name, name == own_name(uuid));
    if (state.kind != ClaimState::free)
      return state;
  }
  return {};
}

// Whether a process that /proc/locks names holds the file open at `fd` exclusively: a claim
// rather than someone's passing look.
bool held_exclusively(int fd) {
  std::vector<Flock> locks = flocks_on(fd);
  return std::any_of(locks.begin(), locks.end(), [](const Flock &lock) { return lock.exclusive; });
}

bool same_file(const struct stat &a, const struct stat &b) {
  return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
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
  Descriptor directory = *open_folder(folder, true);
  const int folder_fd = directory.get();
  const std::string name = own_name(uuid), path = folder + "/" + name;
  for (int attempt = 0; attempt < lock_tries; ++attempt) {
    if (attempt > 0)
      std::this_thread::sleep_for(between_tries);
    // An existing file is opened without O_CREAT, which fs.protected_regular may refuse.
    const int flags = O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC;
    struct stat found {};
    if (::fstatat(folder_fd, name.c_str(), &found, AT_SYMLINK_NOFOLLOW) == 0 &&
        !S_ISREG(found.st_mode)) {
      unusable(path,
               std::string("is ") + file_kind(found.st_mode)); // never opened: a device, a FIFO
      return std::nullopt;
    }
    int fd = ::openat(folder_fd, name.c_str(), flags);
    bool made = false;
    if (fd < 0 && errno == ENOENT) {
      fd = ::openat(folder_fd, name.c_str(), flags | O_CREAT | O_EXCL, 0644);
      if (fd < 0 && errno == EEXIST)
        continue; // made by another run of ours just now: open it next time
      if (fd < 0)
        cannot("make the claim", path);
      made = true;
    }
    if (fd < 0) { // something someone else put there
      if (errno == ELOOP)
        unusable(path, "is a symbolic link");
      else if (errno == EACCES || errno == ENXIO || errno == EPERM)
        unusable(path, std::strerror(errno));
      else
        cannot("open the claim", path);
      return std::nullopt;
    }
    Descriptor descriptor(fd);
    struct stat opened {};
    if (::fstat(fd, &opened) != 0)
      cannot("read the claim", path);
    if (!S_ISREG(opened.st_mode)) {
      unusable(path, std::string("is ") + file_kind(opened.st_mode));
      return std::nullopt;
    }
    if (opened.st_uid != ::geteuid()) {
      // Its owner could remove it under a claim of ours.
      unusable(path, "belongs to uid " + std::to_string(opened.st_uid) + ", not to you");
      return std::nullopt;
    }
    if (made)
      ::fchmod(fd, 0644); // the umask may have taken read bits away
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      if (errno != EWOULDBLOCK && errno != EINTR)
        cannot("lock the claim", path);
      if (held_exclusively(fd))
        return std::nullopt; // another run of ours has it
      continue;
    }
    // Still the file at that path, or the lock keeps nobody out.
    struct stat there {};
    if (::fstatat(folder_fd, name.c_str(), &there, AT_SYMLINK_NOFOLLOW) != 0 ||
        !same_file(opened, there))
      continue;
    // Another user's claim on the same GPU, taken before ours: theirs stands.
    if (state_in(folder_fd, folder, uuid, name).kind != ClaimState::free)
      return std::nullopt;
    return GpuClaim(std::move(descriptor), uuid);
  }
  return std::nullopt;
}

ClaimState claim_state(const std::string &folder, const std::string &uuid) {
  if (!plain_uuid(uuid))
    return {};
  std::optional<Descriptor> directory = open_folder(folder, false);
  if (!directory)
    return {}; // no folder, no claims
  return state_in(directory->get(), folder, uuid);
}

std::optional<pid_t> claim_holder(const std::string &folder, const std::string &uuid) {
  return claim_state(folder, uuid).holder;
}

bool claimed(const std::string &folder, const std::string &uuid) {
  return claim_state(folder, uuid).kind == ClaimState::held;
}

namespace {

// Why the claim on `uuid` keeps a job off it, naming it `name`; empty where nobody holds it.
std::string claim_refusal(const std::string &folder, const std::string &uuid,
                          const std::string &name) {
  ClaimState state = claim_state(folder, uuid);
  switch (state.kind) {
  case ClaimState::unusable:
    return name + " claim unusable";
  case ClaimState::blocked:
    return name + " claim " + state.why;
  case ClaimState::held:
    return state.holder ? name + " claimed by pid " + std::to_string(*state.holder)
                        : name + " claim unknown (held by a process not visible here)";
  case ClaimState::free:
    break;
  }
  return "";
}

} // namespace

GpuAvailability available_gpus(const Snapshot &snapshot, const PickCriteria &criteria,
                               const std::string &folder) {
  GpuAvailability result;
  result.instances = criteria.mig_profile.has_value();
  std::vector<std::string> unclaimed; // UUIDs
  for (const GpuVerdict &verdict : judge_gpus(snapshot, criteria)) {
    if (!verdict.choice) {
      result.reasons.push_back(verdict.reason);
      continue;
    }
    const GpuChoice &choice = *verdict.choice;
    std::string gpu = "GPU " + std::to_string(verdict.index);
    std::string refused = claim_refusal(
        folder, choice.uuid,
        choice.mig_device ? mig_instance_name(verdict.index, choice.mig_device) : gpu);
    // An instance of a GPU that a job holds whole (claimed before MIG was on) is that job's.
    if (refused.empty() && choice.gpu_uuid && plain_uuid(*choice.gpu_uuid))
      refused = claim_refusal(folder, *choice.gpu_uuid, gpu);
    if (refused.empty())
      unclaimed.push_back(choice.uuid);
    else
      result.reasons.push_back(refused);
  }
  for (const GpuChoice &choice : free_gpus(snapshot, criteria))
    if (std::find(unclaimed.begin(), unclaimed.end(), choice.uuid) != unclaimed.end())
      result.available.push_back(choice);
  return result;
}

std::string GpuAvailability::shortage(std::size_t asked, const std::string &when) const {
  std::string message = std::to_string(available.size()) + " of " + std::to_string(asked) +
                        (instances ? " MIG instances free" : " GPUs free") + when;
  if (reasons.empty())
    return message +
           (instances ? ": nvidia-smi lists no other" : ": nvidia-smi lists no other GPU");
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
