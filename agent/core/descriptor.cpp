#include "core/descriptor.hpp"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

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

bool release_descriptors_from(int lowest, bool now) {
#ifdef SYS_close_range
  if (::syscall(SYS_close_range, static_cast<unsigned>(lowest), ~0U,
                now ? 0U : CLOSE_RANGE_CLOEXEC) == 0)
    return true;
#endif
  // ENOSYS (before 5.9), EINVAL (close-on-exec before 5.11), EPERM (a seccomp filter): one by one.
  int folder = ::open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (folder < 0)
    return false;
  // getdents64's records, read into the stack: no allocation in the child of a fork.
  alignas(8) char buffer[4096];
  bool ok = true;
  for (;;) {
    long got = ::syscall(SYS_getdents64, folder, buffer, sizeof buffer);
    if (got < 0 && errno == EINTR)
      continue;
    if (got <= 0) {
      ok = got == 0;
      break;
    }
    for (long at = 0; at < got;) {
      // struct linux_dirent64: d_ino (8), d_off (8), d_reclen (2), d_type (1), d_name.
      unsigned short length;
      __builtin_memcpy(&length, buffer + at + 16, sizeof length);
      const char *name = buffer + at + 19;
      at += length;
      long fd = 0;
      bool digits = *name != '\0';
      for (const char *c = name; *c && digits; ++c) {
        digits = *c >= '0' && *c <= '9' && fd < INT_MAX / 10;
        fd = fd * 10 + (*c - '0');
      }
      if (!digits || fd < lowest || fd == folder)
        continue;
      if (now)
        ::close(static_cast<int>(fd));
      else
        ::fcntl(static_cast<int>(fd), F_SETFD, FD_CLOEXEC);
    }
  }
  ::close(folder);
  return ok;
}

} // namespace nvsmi
