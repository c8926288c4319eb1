#include "file_lock.hpp"

#include "exit_codes.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/file.h>
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

} // namespace nvsmi
