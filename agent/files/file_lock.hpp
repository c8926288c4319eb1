#pragma once

#include <optional>
#include <string>
#include <sys/types.h>

namespace nvsmi {

// An advisory lock (flock) held for the object's life, so that a cron run that finds the previous
// one still going can leave at once instead of piling up behind a hung driver. The kernel drops
// it when the process dies, so a crash leaves no stale lock.
class FileLock {
public:
  // Throws AgentError: exit_locked when another process holds it, exit_io when the file cannot
  // be opened.
  explicit FileLock(const std::string &path);
  ~FileLock();
  FileLock(const FileLock &) = delete;
  FileLock &operator=(const FileLock &) = delete;

private:
  int fd_;
};

// Takes an exclusive flock on the open file `fd` without waiting, for a file that one process
// alone may write (two `watch` appending to one log would take back each other's rows). Throws
// AgentError(exit_io) when another process holds it, naming that process where it can be told.
void lock_exclusively(int fd, const std::string &path, const std::string &what);

// The process that holds a flock on the file open at `fd`, from /proc/locks (Linux).
std::optional<pid_t> flock_holder(int fd);

} // namespace nvsmi
