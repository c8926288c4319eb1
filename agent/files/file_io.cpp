#include "files/file_io.hpp"

#include "core/exit_codes.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <memory>
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

const char *file_kind(mode_t mode) {
  if (S_ISLNK(mode))
    return "a symbolic link";
  if (S_ISDIR(mode))
    return "a folder";
  if (S_ISCHR(mode))
    return "a character device";
  if (S_ISBLK(mode))
    return "a block device";
  if (S_ISFIFO(mode))
    return "a FIFO";
  if (S_ISSOCK(mode))
    return "a socket";
  return "of another kind";
}

void io_failure(const std::string &what, const std::string &path) {
  throw AgentError(exit_io, what + " " + path + ": " + std::strerror(errno));
}

std::string rename_without_replacing(const std::string &from, const std::string &to,
                                     const std::string &what) {
  for (int n = 1;; ++n) {
    std::string name = n == 1 ? to : to + "." + std::to_string(n);
    if (::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, name.c_str(), RENAME_NOREPLACE) == 0)
      return name;
    if (errno == EINVAL || errno == ENOSYS) { // a file system without RENAME_NOREPLACE
      if (::link(from.c_str(), name.c_str()) == 0) {
        ::unlink(from.c_str());
        return name;
      }
    }
    if (errno != EEXIST)
      io_failure("cannot move " + what + " " + from + " to", name);
  }
}

FileBytes read_capped(const std::string &path, std::size_t max_bytes) {
  bool from_stdin = path == "-";
  Descriptor fd(from_stdin ? STDIN_FILENO : ::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  std::string name = from_stdin ? "standard input" : path;
  if (fd.get() < 0)
    io_failure("cannot open", name);
  // The bytes are read straight into their buffer, of the file's size where it is known (one
  // byte more, for the read that finds the end, or that a file grown since shows in): copied
  // from a buffer of 64 KiB, or grown chunk by chunk, a recording cost a snapshot 5 % more
  // instructions (docs/PERFORMANCE.md).
  std::size_t capacity = std::min<std::size_t>(65536, max_bytes + 1);
  struct stat info {};
  if (::fstat(fd.get(), &info) == 0 && S_ISREG(info.st_mode) && info.st_size > 0)
    capacity = std::min(static_cast<std::size_t>(info.st_size), max_bytes) + 1;
  FileBytes bytes{std::unique_ptr<char[]>(new char[capacity]), 0};
  while (true) {
    if (bytes.size == capacity) {
      capacity = std::min(capacity * 2, max_bytes + 1);
      std::unique_ptr<char[]> grown(new char[capacity]);
      std::memcpy(grown.get(), bytes.data.get(), bytes.size);
      bytes.data = std::move(grown);
    }
    ssize_t n = ::read(fd.get(), bytes.data.get() + bytes.size, capacity - bytes.size);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      io_failure("cannot read", name);
    if (n == 0)
      return bytes;
    bytes.size += static_cast<std::size_t>(n);
    if (bytes.size > max_bytes)
      throw AgentError(exit_bad_output,
                       name + " is larger than " + std::to_string(max_bytes) + " bytes");
  }
}

std::string output_target(const std::string &path) {
  std::unique_ptr<char, decltype(&std::free)> resolved(::realpath(path.c_str(), nullptr),
                                                       &std::free);
  if (!resolved) {
    if (errno != ENOENT)
      io_failure("cannot write", path);
    struct stat link {};
    if (::lstat(path.c_str(), &link) == 0) { // the name exists, what it points to does not
      errno = ENOENT;
      io_failure("not writing through the dangling symbolic link", path);
    }
    return path; // a new file; a missing folder shows when its temporary cannot be made
  }
  std::string target = resolved.get();
  struct stat info {};
  if (::stat(target.c_str(), &info) != 0)
    io_failure("cannot write", path);
  struct stat name {};
  bool linked = ::lstat(path.c_str(), &name) == 0 && S_ISLNK(name.st_mode);
  if (!S_ISREG(info.st_mode))
    throw AgentError(exit_io, path + (linked ? " -> " + target : "") + " is " +
                                  file_kind(info.st_mode) +
                                  ", not a regular file; refusing to replace it");
  return target;
}

void replace_file_atomically(const std::string &path, const std::string &content) {
  std::string target = output_target(path);
  struct stat old {};
  bool replacing = ::stat(target.c_str(), &old) == 0;
  std::string temporary = target + ".tmp.XXXXXX";
  Descriptor fd(::mkstemp(temporary.data()));
  if (fd.get() < 0)
    io_failure("cannot create a temporary file beside", target);
  // mkstemp makes the file 0600 and ours. A replaced file keeps what its owner chose (a 0600 file
  // stays private); only root may give a file away, and a set-id bit must not outlive its owner.
  mode_t mode = 0644;
  if (replacing) {
    mode = old.st_mode & 07777;
    if (::fchown(fd.get(), old.st_uid, old.st_gid) != 0)
      mode &= ~static_cast<mode_t>(S_ISUID | S_ISGID);
  } else {
    mode_t mask = ::umask(0);
    ::umask(mask);
    mode &= ~mask;
  }
  bool ok = ::fchmod(fd.get(), mode) == 0 && write_all(fd.get(), content) && ::fsync(fd.get()) == 0;
  int error = ok ? 0 : errno;
  if (::close(fd.release()) != 0 && ok) {
    ok = false;
    error = errno;
  }
  if (ok && ::rename(temporary.c_str(), target.c_str()) == 0) {
    // Make the rename itself durable.
    Descriptor folder(::open(folder_of(target).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (folder.get() >= 0)
      ::fsync(folder.get());
    return;
  }
  if (ok)
    error = errno;
  ::unlink(temporary.c_str());
  errno = error;
  io_failure("cannot write", target);
}

void check_replaceable(const std::string &path) {
  std::string target = output_target(path);
  std::string temporary = target + ".tmp.XXXXXX";
  Descriptor fd(::mkstemp(temporary.data()));
  if (fd.get() < 0)
    io_failure("cannot create a temporary file beside", target);
  ::unlink(temporary.c_str());
}

void write_stdout(const std::string &text) {
  if (std::fwrite(text.data(), 1, text.size(), stdout) == text.size() && std::fflush(stdout) == 0)
    return;
  // The reader left (`| head -c 10`, `| grep -q`): it took what it wanted, as for `watch`.
  if (errno == EPIPE)
    return;
  throw AgentError(exit_io,
                   std::string("cannot write to standard output: ") + std::strerror(errno));
}

} // namespace nvsmi
