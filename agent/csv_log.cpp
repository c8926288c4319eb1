#include "csv_log.hpp"

#include "exit_codes.hpp"
#include "file_io.hpp"
#include "formats.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace nvsmi {
namespace {

[[noreturn]] void fail(const std::string &what, const std::string &path) {
  throw AgentError(exit_io, what + " " + path + ": " + std::strerror(errno));
}

// The file's first line, up to `limit` bytes.
std::string first_line(int fd, std::size_t limit) {
  std::string line(limit, '\0');
  ssize_t n = ::pread(fd, line.data(), limit, 0);
  line.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
  std::size_t newline = line.find('\n');
  return newline == std::string::npos ? line : line.substr(0, newline);
}

} // namespace

CsvLog::CsvLog(CsvLogSettings settings) : settings_(std::move(settings)) { open(); }

CsvLog::~CsvLog() {
  if (fd_ >= 0)
    ::close(fd_);
}

void CsvLog::open() {
  fd_ = ::open(settings_.path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0666);
  if (fd_ < 0)
    fail("cannot open CSV log", settings_.path);
  struct stat info {};
  if (::fstat(fd_, &info) != 0)
    fail("cannot stat CSV log", settings_.path);
  size_ = static_cast<std::uint64_t>(info.st_size);
  if (size_ == 0)
    return;
  int reader = ::open(settings_.path.c_str(), O_RDONLY | O_CLOEXEC);
  if (reader < 0)
    fail("cannot read CSV log", settings_.path);
  std::string header = first_line(reader, 4096);
  ::close(reader);
  if (!header.empty() && header.back() == '\r')
    header.pop_back();
  if (header != csv_header(settings_.extra_fields)) {
    ::close(fd_);
    fd_ = -1;
    throw AgentError(exit_io, "CSV log " + settings_.path +
                                  " has other columns; refusing to mix them (its header: \"" +
                                  header.substr(0, 120) + "\"). Use a new file.");
  }
}

void CsvLog::rotate() {
  ::close(fd_);
  fd_ = -1;
  for (int i = settings_.keep; i >= 1; --i) {
    std::string from = i == 1 ? settings_.path : settings_.path + "." + std::to_string(i - 1);
    std::string to = settings_.path + "." + std::to_string(i);
    if (::rename(from.c_str(), to.c_str()) != 0 && errno != ENOENT)
      fail("cannot rotate CSV log to", to);
  }
  if (settings_.keep == 0)
    ::unlink(settings_.path.c_str());
  open();
}

void CsvLog::append(const Snapshot &snapshot) {
  std::string block = format_csv(snapshot, false);
  if (settings_.max_bytes > 0 && size_ > 0 && size_ + block.size() > settings_.max_bytes)
    rotate();
  if (size_ == 0)
    block = csv_header(settings_.extra_fields) + "\n" + block;
  if (!write_all(fd_, block)) {
    int error = errno;
    // Take back a partial block, so that the log holds whole rows only.
    if (::ftruncate(fd_, static_cast<off_t>(size_)) != 0) {
    }
    errno = error;
    fail("cannot write CSV log", settings_.path);
  }
  size_ += block.size();
}

void CsvLog::reopen() {
  ::close(fd_);
  fd_ = -1;
  open();
}

} // namespace nvsmi
