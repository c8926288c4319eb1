#include "core/descriptor.hpp"

#include <algorithm>
#include <cerrno>
#include <unistd.h>

namespace nvsmi {

Descriptor::~Descriptor() {
  if (fd_ > STDERR_FILENO)
    ::close(fd_);
}

int Descriptor::release() {
  int fd = fd_;
  fd_ = -1;
  return fd;
}

bool write_all(int fd, const std::string &data) {
  std::size_t written = 0;
  while (written < data.size()) {
    ssize_t n = ::write(fd, data.data() + written, data.size() - written);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return false;
    written += static_cast<std::size_t>(n);
  }
  return true;
}

bool read_up_to(int fd, std::size_t count, std::optional<off_t> at, std::string &out) {
  // The room grows as the bytes come, from 64 KiB (more than any /proc or /sys file the agent
  // reads holds, so that each is still read in one call), not to `count` at once: the host's
  // I/O rates read /proc/diskstats and /proc/net/dev with a cap of 1 MiB, and zero-filling that
  // twice a sample was an eighth of watch's CPU (docs/PERFORMANCE.md).
  constexpr std::size_t first_room = 64 * 1024;
  std::size_t start = out.size(), got = 0, room = std::min(count, first_room);
  bool ok = true;
  while (got < count) {
    if (got == room)
      room = std::min(count, room * 2);
    out.resize(start + room);
    char *into = out.data() + start + got;
    ssize_t n = at ? ::pread(fd, into, room - got, *at + static_cast<off_t>(got))
                   : ::read(fd, into, room - got);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      ok = n == 0;
      break;
    }
    got += static_cast<std::size_t>(n);
  }
  int error = errno;
  out.resize(start + got);
  errno = error;
  return ok;
}

} // namespace nvsmi
