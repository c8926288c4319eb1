#include "kernel_log/xid_log.hpp"

#include "core/descriptor.hpp"
#include "kernel_log/kmsg_record.hpp"

#include "nvsmi/xid.hpp"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <map>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <utility>
#include <vector>

namespace nvsmi {
namespace {

using Clock = std::chrono::steady_clock;

// An Xid line is a few hundred bytes; a longer line is something else, and keeping it whole would
// let one endless line hold any amount of memory.
constexpr std::size_t max_line_bytes = 64 * 1024;
// The kernel's longest record with its metadata is 8 KiB (CONSOLE_EXT_LOG_MAX); a smaller buffer
// loses the record (EINVAL).
constexpr std::size_t kmsg_buffer_bytes = 16 * 1024;
constexpr std::size_t file_chunk_bytes = 64 * 1024;

std::uint64_t clock_usec(clockid_t clock) {
  timespec now{};
  ::clock_gettime(clock, &now);
  return static_cast<std::uint64_t>(now.tv_sec) * 1000000 +
         static_cast<std::uint64_t>(now.tv_nsec / 1000);
}

bool is_kmsg_device(const struct stat &status) {
  return S_ISCHR(status.st_mode) && major(status.st_rdev) == 1 && minor(status.st_rdev) == 11;
}

} // namespace

struct XidLog::State {
  std::string path;
  Say say;
  std::chrono::milliseconds retry_every{0};

  std::optional<Descriptor> fd;
  bool kmsg = false;    // records, else lines
  bool regular = false; // a file with a size and an offset (not a pipe)
  dev_t device = 0;
  ino_t inode = 0;
  off_t offset = 0;
  std::string pending;   // the start of a line whose end has not been written yet
  bool skipping = false; // inside a line past max_line_bytes
  bool caught_up = false;

  bool readable = false;
  Text error;
  Text said_error; // the cause last said, so that it is said once
  std::optional<Clock::time_point> last_attempt;

  // Read once per poll: when the records read in it were logged.
  std::uint64_t boot_now_usec = 0;
  std::int64_t wall_now_usec = 0;

  std::map<std::pair<std::string, int>, XidTally> tallies; // by pci_device, then xid
  std::uint64_t dropped = 0;
  bool said_dropped = false, said_long_line = false;
  std::vector<char> buffer;

  std::string about() const { return "kernel log " + path + ": "; }

  void fail(int error_number) {
    fd.reset();
    readable = false;
    error = std::strerror(error_number);
    last_attempt = Clock::now();
    if (said_error == error)
      return;
    said_error = error;
    std::string hint;
    if (kmsg_path() && (error_number == EPERM || error_number == EACCES))
      hint = " (kernel.dmesg_restrict: needs CAP_SYSLOG; see docs/XID.md)";
    say(about() + *error + hint + ": Xid errors are not counted (nvsmi_xid_readable 0)");
  }

  bool kmsg_path() const { return kmsg || path == default_kernel_log; }

  void open_log() {
    last_attempt = Clock::now();
    int raw = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (raw < 0)
      return fail(errno);
    Descriptor opened(raw);
    struct stat status {};
    if (::fstat(raw, &status) != 0)
      return fail(errno);
    if (S_ISDIR(status.st_mode))
      return fail(EISDIR);
    kmsg = is_kmsg_device(status);
    regular = S_ISREG(status.st_mode);
    device = status.st_dev;
    inode = status.st_ino;
    offset = 0;
    pending.clear();
    skipping = false;
    fd.emplace(std::move(opened));
    readable = true;
    error.reset();
    if (said_error) {
      said_error.reset();
      say(about() + "readable again: Xid errors are counted");
    }
  }

  void count(const XidEvent &event, const Text &when) {
    auto key = std::make_pair(event.pci_device, event.xid);
    auto found = tallies.find(key);
    if (found == tallies.end()) {
      if (tallies.size() >= max_tallies) {
        ++dropped;
        if (!said_dropped) {
          said_dropped = true;
          say(about() + "more than " + std::to_string(max_tallies) +
              " GPU and Xid pairs; new pairs are not counted");
        }
        return;
      }
      found = tallies.emplace(key, XidTally{event.pci_device, event.xid, 0, {}, {}}).first;
    }
    ++found->second.count;
    found->second.last_message = event.message;
    found->second.last_seen = when;
  }

  // One record's message: it can hold several lines (escaped newlines). `usec`: when the kernel
  // logged it, for a record read from /dev/kmsg.
  void read_message(std::string_view message, std::optional<std::uint64_t> usec) {
    while (!message.empty()) {
      std::size_t end = message.find('\n');
      if (auto event = parse_xid_line(message.substr(0, end))) {
        // Only for an Xid: local time costs a look at the zone, and most records are not.
        Text when;
        if (usec)
          when = record_local_time(*usec, boot_now_usec, wall_now_usec);
        count(*event, when);
      }
      if (end == std::string_view::npos)
        break;
      message.remove_prefix(end + 1);
    }
  }

  void read_record(std::string_view bytes, bool timed) {
    auto record = parse_kmsg_record(bytes);
    if (!record)
      return read_message(bytes, std::nullopt);
    // Only the kernel's own: anyone allowed to write /dev/kmsg could otherwise forge an Xid.
    if (record->facility != 0)
      return;
    read_message(record->message,
                 timed ? std::optional<std::uint64_t>(record->usec) : std::nullopt);
  }

  void read_kmsg() {
    std::size_t total = 0;
    // Each read returns one record; EPIPE and EINVAL move on by one too, so this ends.
    for (std::size_t reads = 0; total < max_bytes_per_poll && reads < 1000000; ++reads) {
      ssize_t got = ::read(fd->get(), buffer.data(), buffer.size());
      if (got > 0) {
        total += static_cast<std::size_t>(got);
        read_record(std::string_view(buffer.data(), static_cast<std::size_t>(got)), true);
        continue;
      }
      if (got == 0 || errno == EAGAIN) {
        caught_up = true;
        return;
      }
      // EPIPE: records were overwritten before they were read; the next read is the oldest
      // kept. EINVAL: a record too long for the buffer, skipped.
      if (errno == EINTR || errno == EPIPE || errno == EINVAL)
        continue;
      return fail(errno);
    }
  }

  // Lines from a file: whole lines are read, a partial one waits for its end.
  void feed(std::string_view bytes) {
    while (!bytes.empty()) {
      std::size_t end = bytes.find('\n');
      std::string_view piece = bytes.substr(0, end);
      if (!skipping) {
        if (pending.size() + piece.size() > max_line_bytes) {
          pending.clear();
          skipping = true;
          if (!said_long_line) {
            said_long_line = true;
            say(about() + "a line longer than " + std::to_string(max_line_bytes / 1024) +
                " KiB is skipped (and any later one, unsaid)");
          }
        } else {
          pending.append(piece);
        }
      }
      if (end == std::string_view::npos)
        return;
      if (!skipping)
        read_record(pending, false);
      pending.clear();
      skipping = false;
      bytes.remove_prefix(end + 1);
    }
  }

  // Reads what was appended, within `budget`; true when at the end.
  bool read_appended(std::size_t &budget) {
    std::string chunk;
    while (budget > 0) {
      chunk.clear();
      std::size_t want = std::min(file_chunk_bytes, budget);
      bool ok = regular ? read_up_to(fd->get(), want, offset, chunk)
                        : read_up_to(fd->get(), want, std::nullopt, chunk);
      if (!ok && errno != EAGAIN) {
        fail(errno);
        return false;
      }
      offset += static_cast<off_t>(chunk.size());
      budget -= chunk.size();
      feed(chunk);
      if (chunk.size() < want)
        return true;
    }
    return false;
  }

  void read_file() {
    std::size_t budget = max_bytes_per_poll;
    if (regular) {
      // Replaced (logrotate moved it away and a new file took its name): what was appended to the
      // old one first, then the new one from its start. A name that is gone for now keeps the old.
      struct stat named {};
      if (::stat(path.c_str(), &named) == 0 && (named.st_dev != device || named.st_ino != inode)) {
        read_appended(budget);
        if (!fd)
          return;
        if (!pending.empty() && !skipping)
          read_record(pending, false); // the old file's last line will not grow any more
        open_log();
        if (!fd)
          return;
      }
      struct stat status {};
      if (::fstat(fd->get(), &status) != 0)
        return fail(errno);
      // Truncated (copytruncate): it starts again.
      if (status.st_size < offset) {
        offset = 0;
        pending.clear();
        skipping = false;
      }
    }
    caught_up = read_appended(budget);
  }
};

XidLog::XidLog(std::string path, Say say, std::chrono::milliseconds retry_every)
    : state_(std::make_unique<State>()) {
  state_->path = std::move(path);
  state_->say = say ? std::move(say) : [](const std::string &) {};
  state_->retry_every = retry_every;
  state_->buffer.resize(kmsg_buffer_bytes);
  state_->open_log();
}

XidLog::~XidLog() = default;

void XidLog::poll() {
  State &s = *state_;
  s.caught_up = false;
  if (!s.fd) {
    if (s.last_attempt && Clock::now() - *s.last_attempt < s.retry_every)
      return;
    s.open_log();
    if (!s.fd)
      return;
  }
  s.boot_now_usec = clock_usec(CLOCK_BOOTTIME);
  s.wall_now_usec = static_cast<std::int64_t>(clock_usec(CLOCK_REALTIME));
  if (s.kmsg)
    s.read_kmsg();
  else
    s.read_file();
}

void XidLog::attach(Snapshot &snapshot) const {
  const State &s = *state_;
  KernelLog log;
  log.source = s.path;
  log.readable = s.readable;
  log.error = s.error;
  // What was counted while it was readable stays true; `readable` says whether it still grows.
  log.xids.reserve(s.tallies.size());
  for (const auto &entry : s.tallies)
    log.xids.push_back(entry.second);
  snapshot.kernel_log = std::move(log);
}

bool XidLog::readable() const { return state_->readable; }

std::uint64_t XidLog::dropped() const { return state_->dropped; }

bool XidLog::caught_up() const { return state_->caught_up; }

} // namespace nvsmi
