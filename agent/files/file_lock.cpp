#include "files/file_lock.hpp"

#include "core/exit_codes.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <iterator>
#include <sstream>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

namespace nvsmi {

FileLock::FileLock(const std::string &path)
    : fd_(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666)) {
  if (fd_ < 0)
    throw AgentError(exit_io, "cannot open lock file " + path + ": " + std::strerror(errno));
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    int error = errno;
    ::close(fd_);
    if (error == EWOULDBLOCK)
      throw AgentError(exit_locked, "another run holds " + path + "; leaving it to finish");
    throw AgentError(exit_io, "cannot lock " + path + ": " + std::strerror(error));
  }
}

FileLock::~FileLock() { ::close(fd_); }

void lock_exclusively(int fd, const std::string &path, const std::string &what) {
  if (::flock(fd, LOCK_EX | LOCK_NB) == 0)
    return;
  if (errno != EWOULDBLOCK)
    throw AgentError(exit_io, "cannot lock " + what + " " + path + ": " + std::strerror(errno));
  std::optional<pid_t> holder = flock_holder(fd);
  throw AgentError(exit_io, what + " " + path + " is in use by another process" +
                                (holder ? " (pid " + std::to_string(*holder) + ")" : "") +
                                "; two writers would corrupt it");
}

std::vector<Flock> flocks_in(const std::string &proc_locks, dev_t device, ino_t inode) {
  // Lines like "3: FLOCK  ADVISORY  WRITE 4242 08:01:1311766 0 EOF"; a waiter's has "->" after
  // the number. The device is MAJOR:MINOR in hex.
  std::vector<Flock> found;
  std::istringstream locks(proc_locks);
  for (std::string line; std::getline(locks, line);) {
    std::istringstream words(line);
    std::string number, kind, mode, access, file;
    long pid = 0;
    if (!(words >> number >> kind >> mode >> access >> pid >> file) || kind != "FLOCK" || pid < 0)
      continue;
    unsigned major_number = 0, minor_number = 0;
    unsigned long long file_inode = 0;
    if (std::sscanf(file.c_str(), "%x:%x:%llu", &major_number, &minor_number, &file_inode) != 3 ||
        file_inode != static_cast<unsigned long long>(inode) || major_number != major(device) ||
        minor_number != minor(device))
      continue;
    found.push_back({static_cast<pid_t>(pid), access == "WRITE"});
  }
  return found;
}

std::vector<Flock> flocks_on(int fd) {
  struct stat info {};
  if (::fstat(fd, &info) != 0)
    return {};
  std::ifstream locks("/proc/locks");
  std::string text((std::istreambuf_iterator<char>(locks)), std::istreambuf_iterator<char>());
  return flocks_in(text, info.st_dev, info.st_ino);
}

std::optional<pid_t> flock_holder(int fd) {
  for (const Flock &lock : flocks_on(fd))
    if (lock.exclusive && lock.pid > 0 && lock.pid != ::getpid())
      return lock.pid;
  return std::nullopt;
}

} // namespace nvsmi
