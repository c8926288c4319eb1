#pragma once

#include <optional>
#include <string>
#include <sys/types.h>
#include <vector>

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

// One flock that /proc/locks lists: its holder (0 where the kernel does not name it) and kind.
struct Flock {
  pid_t pid = 0;
  bool exclusive = false;
};

// The flocks that `proc_locks` (the text of /proc/locks) lists on the file with this device and
// inode, waiters left out. Both must match: inode numbers repeat across file systems. A file
// system whose locks name another device than stat gives (btrfs subvolumes) matches nothing, and
// the kernel lists only the locks of processes in the reader's PID namespace: no line is no proof
// that nobody holds a lock.
std::vector<Flock> flocks_in(const std::string &proc_locks, dev_t device, ino_t inode);

// flocks_in for the file open at `fd`, from this system's /proc/locks (Linux).
std::vector<Flock> flocks_on(int fd);

// Another process that holds an exclusive flock on the file open at `fd`, where /proc/locks names
// one.
std::optional<pid_t> flock_holder(int fd);

} // namespace nvsmi
