#include "files/rotating_log.hpp"

#include "core/exit_codes.hpp"
#include "core/log_line.hpp"
#include "files/file_io.hpp"
#include "files/file_lock.hpp"

#include <cerrno>
#include <cstdio>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace nvsmi {

RotatingLog::RotatingLog(std::string what, std::string path, RotationSettings rotation,
                         std::string header, FoundFile found)
    : what_(std::move(what)), path_(std::move(path)), rotation_(rotation),
      header_(std::move(header)), found_(std::move(found)) {
  open();
}

RotatingLog::~RotatingLog() {
  if (fd_ >= 0)
    ::close(fd_);
}

std::uint64_t RotatingLog::size() const {
  struct stat info {};
  if (::fstat(fd_, &info) != 0)
    io_failure("cannot stat " + what_, path_);
  return static_cast<std::uint64_t>(info.st_size);
}

void RotatingLog::open() {
  // A file moved aside is followed by a new one. Should another process put a file there again at
  // once, that one is refused below rather than moved aside in turn, over and over.
  bool moved = false;
  while (true) {
    // Read and write: what the file holds is checked through the descriptor that holds the lock.
    // Never through a symbolic link: in a folder others may write, one planted at the path (or
    // put there between a rotation's rename and this open) would send the log anywhere it points,
    // creating the file it names.
    fd_ = ::open(path_.c_str(), O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0666);
    if (fd_ < 0 && errno == ELOOP)
      throw AgentError(exit_io, what_ + " " + path_ +
                                    " is a symbolic link; refusing to follow it (name the file "
                                    "itself)");
    if (fd_ < 0)
      io_failure("cannot open " + what_, path_);
    try {
      struct stat info {};
      if (::fstat(fd_, &info) != 0)
        io_failure("cannot stat " + what_, path_);
      if (!S_ISREG(info.st_mode)) // a FIFO would block the sampling as soon as it filled
        throw AgentError(exit_io, what_ + " " + path_ + " is not a regular file");
      lock_exclusively(fd_, path_, what_);
      if (size() == 0 || !found_)
        return;
      std::optional<MoveAside> aside = found_(fd_);
      if (!aside)
        return;
      if (moved)
        throw AgentError(exit_io, what_ + " " + path_ + " " + aside->reason +
                                      " again at once after it was moved aside; giving up");
      // Renamed while still locked, so that no other writer takes the old file meanwhile.
      std::string to = rename_without_replacing(path_, path_ + aside->suffix, what_);
      log_line(what_ + " " + path_ + " " + aside->reason + ": moved it to " + to +
               " and started a new one");
      moved = true;
    } catch (const AgentError &) {
      ::close(fd_);
      fd_ = -1;
      throw;
    }
    ::close(fd_);
    fd_ = -1;
  }
}

void RotatingLog::rotate() {
  // Renamed while still locked, so that no other writer takes the old file meanwhile.
  for (int i = rotation_.keep; i >= 1; --i) {
    std::string from = i == 1 ? path_ : path_ + "." + std::to_string(i - 1);
    std::string to = path_ + "." + std::to_string(i);
    if (::rename(from.c_str(), to.c_str()) != 0 && errno != ENOENT)
      io_failure("cannot rotate " + what_ + " to", to);
  }
  if (rotation_.keep == 0)
    ::unlink(path_.c_str());
  reopen();
}

void RotatingLog::append(const std::string &block) {
  // Measured now, not remembered: the file may have been cut since (logrotate's copytruncate).
  std::uint64_t at = size();
  if (rotation_.max_bytes > 0 && at > 0 && at + block.size() > rotation_.max_bytes) {
    rotate();
    at = size();
  }
  bool ok = at == 0 && !header_.empty() ? write_all(fd_, header_ + block) : write_all(fd_, block);
  if (!ok) {
    int error = errno;
    // Take back a partial block (a full disk), so that the log holds whole blocks only. The lock
    // keeps other writers out, so the size just measured is where this block began.
    if (::ftruncate(fd_, static_cast<off_t>(at)) != 0) {
    }
    errno = error;
    io_failure("cannot write " + what_, path_);
  }
}

void RotatingLog::reopen() {
  ::close(fd_);
  fd_ = -1;
  open();
}

} // namespace nvsmi
