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
  // Read into a buffer on the stack and append what came, never into room made in `out` first:
  // std::string zero-fills what it is resized to, and that was most of a host reading's
  // instructions (1 MiB, later 64 KiB, for each /proc file of a few hundred bytes; see
  // docs/PERFORMANCE.md). 64 KiB holds any /proc or /sys file the agent reads in one call.
  char chunk[64 * 1024];
  std::size_t got = 0;
  bool ok = true;
  while (got < count) {
    std::size_t want = std::min(count - got, sizeof chunk);
    ssize_t n =
        at ? ::pread(fd, chunk, want, *at + static_cast<off_t>(got)) : ::read(fd, chunk, want);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      ok = n == 0;
      break;
    }
    out.append(chunk, static_cast<std::size_t>(n));
    got += static_cast<std::size_t>(n);
  }
  return ok;
}

} // namespace nvsmi
