#include "core/descriptor.hpp"

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
  std::size_t start = out.size(), got = 0;
  out.resize(start + count);
  bool ok = true;
  while (got < count) {
    char *into = out.data() + start + got;
    ssize_t n = at ? ::pread(fd, into, count - got, *at + static_cast<off_t>(got))
                   : ::read(fd, into, count - got);
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
