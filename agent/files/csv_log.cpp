#include "files/csv_log.hpp"

#include "core/exit_codes.hpp"
#include "files/file_io.hpp"
#include "files/file_lock.hpp"
#include "formats/formats.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace nvsmi {
namespace {

// Whether the file's first line is `header`, and that line (or as much of it as was read, for a
// message). As much is read as the header and its line end take, however long the header: a
// longer first line is another header, so nothing past that needs reading.
bool starts_with(int fd, const std::string &header, std::string &first_line) {
  std::string bytes;
  read_up_to(fd, header.size() + 2, 0, bytes); // "\r\n"; what could not be read is no header
  std::size_t newline = bytes.find('\n');
  first_line = bytes.substr(0, newline);
  if (newline == std::string::npos)
    return false;
  if (!first_line.empty() && first_line.back() == '\r')
    first_line.pop_back();
  return first_line == header;
}

std::uint64_t size_of(int fd, const std::string &path) {
  struct stat info {};
  if (::fstat(fd, &info) != 0)
    io_failure("cannot stat CSV log", path);
  return static_cast<std::uint64_t>(info.st_size);
}

} // namespace

CsvLog::CsvLog(CsvLogSettings settings) : settings_(std::move(settings)) { open(); }

CsvLog::~CsvLog() {
  if (fd_ >= 0)
    ::close(fd_);
}

void CsvLog::open() {
  // Read and write: the header is checked through the descriptor that holds the lock.
  fd_ = ::open(settings_.path.c_str(), O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0666);
  if (fd_ < 0)
    io_failure("cannot open CSV log", settings_.path);
  try {
    lock_exclusively(fd_, settings_.path, "CSV log");
    if (size_of(fd_, settings_.path) == 0)
      return;
    std::string header;
    if (!starts_with(fd_, csv_header(settings_.extra_fields), header))
      throw AgentError(exit_io, "CSV log " + settings_.path +
                                    " has other columns; refusing to mix them (its header: \"" +
                                    header.substr(0, 120) + "\"). Use a new file.");
  } catch (const AgentError &) {
    ::close(fd_);
    fd_ = -1;
    throw;
  }
}

void CsvLog::rotate() {
  // Renamed while still locked, so that no other writer takes the old file meanwhile.
  for (int i = settings_.keep; i >= 1; --i) {
    std::string from = i == 1 ? settings_.path : settings_.path + "." + std::to_string(i - 1);
    std::string to = settings_.path + "." + std::to_string(i);
    if (::rename(from.c_str(), to.c_str()) != 0 && errno != ENOENT)
      io_failure("cannot rotate CSV log to", to);
  }
  if (settings_.keep == 0)
    ::unlink(settings_.path.c_str());
  reopen();
}

void CsvLog::append(const Snapshot &snapshot) {
  std::string block = format_csv(snapshot, false);
  // Measured now, not remembered: the file may have been cut since (logrotate's copytruncate).
  std::uint64_t size = size_of(fd_, settings_.path);
  if (settings_.max_bytes > 0 && size > 0 && size + block.size() > settings_.max_bytes) {
    rotate();
    size = size_of(fd_, settings_.path);
  }
  if (size == 0)
    block = csv_header(settings_.extra_fields) + "\n" + block;
  if (!write_all(fd_, block)) {
    int error = errno;
    // Take back a partial block (a full disk), so that the log holds whole rows only. The lock
    // keeps other writers out, so the size just measured is where this block began.
    if (::ftruncate(fd_, static_cast<off_t>(size)) != 0) {
    }
    errno = error;
    io_failure("cannot write CSV log", settings_.path);
  }
}

void CsvLog::reopen() {
  ::close(fd_);
  fd_ = -1;
  open();
}

} // namespace nvsmi
