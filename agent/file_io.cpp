#include "file_io.hpp"

#include "exit_codes.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace nvsmi {
namespace {

std::string folder_of(const std::string &path) {
  std::size_t slash = path.rfind('/');
  if (slash == std::string::npos)
    return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

} // namespace

void io_failure(const std::string &what, const std::string &path) {
  throw AgentError(exit_io, what + " " + path + ": " + std::strerror(errno));
}

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

std::string read_capped(const std::string &path, std::size_t max_bytes) {
  bool from_stdin = path == "-";
  Descriptor fd(from_stdin ? STDIN_FILENO : ::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  std::string name = from_stdin ? "standard input" : path;
  if (fd.get() < 0)
    io_failure("cannot open", name);
  std::string content;
  char buffer[65536];
  while (true) {
    ssize_t n = ::read(fd.get(), buffer, sizeof buffer);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      io_failure("cannot read", name);
    if (n == 0)
      return content;
    if (content.size() + static_cast<std::size_t>(n) > max_bytes)
      throw AgentError(exit_bad_output,
                       name + " is larger than " + std::to_string(max_bytes) + " bytes");
    content.append(buffer, static_cast<std::size_t>(n));
  }
}

void replace_file_atomically(const std::string &path, const std::string &content) {
  std::string temporary = path + ".tmp.XXXXXX";
  Descriptor fd(::mkstemp(temporary.data()));
  if (fd.get() < 0)
    io_failure("cannot create a temporary file beside", path);
  // mkstemp makes the file 0600; give it the mode a plain new file would have.
  mode_t mask = ::umask(0);
  ::umask(mask);
  bool ok = ::fchmod(fd.get(), 0666 & ~mask) == 0 && write_all(fd.get(), content) &&
            ::fsync(fd.get()) == 0;
  int error = ok ? 0 : errno;
  if (::close(fd.release()) != 0 && ok) {
    ok = false;
    error = errno;
  }
  if (ok && ::rename(temporary.c_str(), path.c_str()) == 0) {
    // Make the rename itself durable.
    Descriptor folder(::open(folder_of(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (folder.get() >= 0)
      ::fsync(folder.get());
    return;
  }
  if (ok)
    error = errno;
  ::unlink(temporary.c_str());
  errno = error;
  io_failure("cannot write", path);
}

} // namespace nvsmi
