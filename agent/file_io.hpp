#pragma once

#include <cstddef>
#include <string>

namespace nvsmi {

// Throws AgentError(exit_io): "WHAT PATH: strerror(errno)".
[[noreturn]] void io_failure(const std::string &what, const std::string &path);

// Closes the descriptor it holds (not stdin, stdout or stderr) when it goes.
class Descriptor {
public:
  explicit Descriptor(int fd) : fd_(fd) {}
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

// Reads a whole file ("-" for standard input). Throws AgentError: exit_io when it cannot be read,
// exit_bad_output when it holds more than `max_bytes`.
std::string read_capped(const std::string &path, std::size_t max_bytes);

// Replaces `path` with `content` atomically: a temporary file in the same folder, flushed to disk,
// then renamed over it. Readers see the old file or the new one, never a part. On failure the old
// file is untouched and the temporary removed. Throws AgentError(exit_io).
void replace_file_atomically(const std::string &path, const std::string &content);

} // namespace nvsmi
