// The kernel log, read for NVIDIA Xid errors: /dev/kmsg (every record the ring buffer still holds,
// then each new one), or a file that another program appends to (a forwarded syslog, a test's),
// followed as it grows, is truncated or replaced; one that cannot be opened (not there yet, not
// permitted) is tried again now and then. Reads never block and are bounded per poll; the tallies
// are bounded (max_tallies distinct GPU/Xid pairs; past that, new pairs are counted in `dropped`
// and said once).
#pragma once

#include "nvsmi/snapshot.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace nvsmi {

constexpr const char *default_kernel_log = "/dev/kmsg";

class XidLog {
public:
  using Say = std::function<void(const std::string &line)>; // a problem, said once per cause

  // Opens `path` ("/dev/kmsg" is read as records; anything else as lines). A failure does not
  // throw: the log is then not readable, `say` is told why once, and every attach says so; poll
  // tries again once `retry_every` has passed since the last try. A missing or forbidden log
  // stays so for long, and each try costs a system call per sample: a minute by default, shorter
  // only where waiting that long would be the cost (a test).
  XidLog(std::string path, Say say,
         std::chrono::milliseconds retry_every = std::chrono::seconds(60));
  ~XidLog();
  XidLog(const XidLog &) = delete;
  XidLog &operator=(const XidLog &) = delete;

  // Reads what is new, at most `max_bytes_per_poll`, without blocking; retries a log that could
  // not be opened at most once per `retry_every`.
  void poll();
  // Copies the source, readability and tallies into snapshot.kernel_log.
  void attach(Snapshot &snapshot) const;

  bool readable() const;
  std::uint64_t dropped() const;
  // Whether the last poll reached the end of what the log holds (not stopped by
  // max_bytes_per_poll): a one-shot reader polls until it has.
  bool caught_up() const;

  static constexpr std::size_t max_tallies = 4096;
  static constexpr std::size_t max_bytes_per_poll = 4u << 20;

private:
  struct State;
  std::unique_ptr<State> state_;
};

} // namespace nvsmi
