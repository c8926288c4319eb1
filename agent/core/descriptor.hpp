// File descriptors as every folder handles them: owned and closed, written whole, read in full.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <sys/types.h>

namespace nvsmi {

// Closes the descriptor it holds (not stdin, stdout or stderr) when it goes.
class Descriptor {
public:
  explicit Descriptor(int fd) : fd_(fd) {}
  Descriptor(Descriptor &&other) noexcept : fd_(other.release()) {}
  Descriptor(const Descriptor &) = delete;
  Descriptor &operator=(const Descriptor &) = delete;
  ~Descriptor();
  int get() const { return fd_; }
  int release();

private:
  int fd_;
};

// write(2) until all of `data` is written, retrying on EINTR; false (errno set) on failure.
bool write_all(int fd, const std::string &data);

// Appends up to `count` bytes of `fd` to `out`, fewer only at its end: from offset `at` with
// pread (the descriptor's own offset stays where it is), or, without `at`, with read from where
// it is (a pipe). Retries on EINTR; false (errno set, what was read kept) on an error.
bool read_up_to(int fd, std::size_t count, std::optional<off_t> at, std::string &out);

// Every descriptor from `lowest` up closed (`now`) or marked close-on-exec, so that a program the
// agent starts holds none of the agent's (serve's listening socket, its epoll, its log and lock
// files) but what it is handed below `lowest`. For the child of a fork: async-signal-safe, no
// allocation. close_range(2) where the kernel (5.11 for close-on-exec) and a seccomp filter allow
// it, else each descriptor that /proc/self/fd lists. False (errno set) where neither worked.
bool release_descriptors_from(int lowest, bool now);

} // namespace nvsmi
