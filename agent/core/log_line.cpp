#include "core/log_line.hpp"

#include "core/number_text.hpp"

#include "nvsmi/utf8.hpp"

#include <cstdio>
#include <ctime>

namespace nvsmi {
namespace {

void write_line(const std::string &text) {
  std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", &utc);
  std::fprintf(stderr, "nvsmi-agent: %s %s\n", stamp, text.c_str());
}

LogRateLimit &limit() {
  static LogRateLimit instance(log_burst, log_interval);
  return instance;
}

} // namespace

std::vector<std::string> LogRateLimit::admit(std::string message, Clock::time_point now) {
  std::vector<std::string> lines;
  if (!window_start_ || now - *window_start_ >= interval_) {
    if (std::optional<std::string> count = finish())
      lines.push_back(std::move(*count));
    window_start_ = now;
    in_window_ = 0;
  }
  if (in_window_ < burst_) {
    ++in_window_;
    lines.push_back(std::move(message));
    return lines;
  }
  if (suppressed_++ == 0)
    lines.push_back("more than " + std::to_string(burst_) + " messages in " +
                    seconds_text(std::chrono::duration_cast<std::chrono::milliseconds>(interval_)) +
                    " s: the rest are counted, not shown");
  return lines;
}

std::optional<std::string> LogRateLimit::finish() {
  if (suppressed_ == 0)
    return std::nullopt;
  std::string line =
      std::to_string(suppressed_) + " message" + (suppressed_ == 1 ? "" : "s") + " suppressed";
  suppressed_ = 0;
  return line;
}

std::string printable_message(const std::string &message, std::size_t max_bytes) {
  if (message.size() <= max_bytes)
    return valid_utf8(message);
  std::size_t cut = max_bytes;
  // Back to the start of a character, so that cutting does not make a bad byte of a good one.
  // (Three bytes back at most: further, it was no character anyway.)
  for (int step = 0; step < 3 && (static_cast<unsigned char>(message[cut]) & 0xC0) == 0x80; ++step)
    --cut;
  return valid_utf8(std::string_view(message).substr(0, cut)) + " ... (" +
         std::to_string(message.size() - cut) + " more bytes)";
}

void log_line(const std::string &message, LogRate rate) {
  std::string text = printable_message(message, max_log_message_bytes);
  if (rate == LogRate::rare) {
    write_line(text);
    return;
  }
  for (const std::string &line : limit().admit(std::move(text), LogRateLimit::Clock::now()))
    write_line(line);
}

void finish_log() {
  if (std::optional<std::string> count = limit().finish())
    write_line(*count);
}

} // namespace nvsmi
