#pragma once

#include <string>

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

} // namespace nvsmi
