// The one way long-running commands (watch, serve) write to stderr: a timestamped line, valid
// UTF-8, short, and never a flood.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace nvsmi {

// Keeps a flood of messages (a chatty nvidia-smi, a stream of garbage, every restart of it) from
// filling the disk, the way journald does: at most `burst` messages in an interval that starts
// with the first of them. Past that, one line says so and the rest are only counted; the count is
// said with the first message after the interval, or at the end of the run.
class LogRateLimit {
public:
  using Clock = std::chrono::steady_clock;
  LogRateLimit(std::size_t burst, Clock::duration interval) : burst_(burst), interval_(interval) {}

  // The lines to write for `message` arriving at `now` (none while suppressing).
  std::vector<std::string> admit(std::string message, Clock::time_point now);
  // The count of what was suppressed since it was last said, if anything was.
  std::optional<std::string> finish();

private:
  std::size_t burst_;
  Clock::duration interval_;
  std::optional<Clock::time_point> window_start_;
  std::size_t in_window_ = 0;
  std::uint64_t suppressed_ = 0;
};

// What log_line() allows: 20 repeating messages in 30 s; any message at most 1024 bytes.
constexpr std::size_t log_burst = 20;
constexpr std::chrono::seconds log_interval{30};
constexpr std::size_t max_log_message_bytes = 1024;

// `message` cut to at most `max_bytes` (at a character boundary, saying how much was cut) and
// made valid UTF-8.
std::string printable_message(const std::string &message, std::size_t max_bytes);

// How often a message can come. `rare`: the agent's own events (listening, a restart, a child
// that exited), few by their nature, always written. `repeating`: what can come once per line of
// nvidia-smi's output (garbage, a message it prints over and over), rate-limited as above.
enum class LogRate { rare, repeating };

// One line on stderr: "nvsmi-agent: 2026-11-22T18:52:53Z message".
void log_line(const std::string &message, LogRate rate = LogRate::rare);
// At the end of a run: says how many messages were suppressed, if any were.
void finish_log();

} // namespace nvsmi
