#include "kernel_log/kmsg_record.hpp"

#include "core/local_time.hpp"

#include <ctime>

namespace nvsmi {
namespace {

// A decimal field up to ',' or ';', consumed with its separator.
std::optional<std::uint64_t> take_field(std::string_view &text) {
  std::uint64_t value = 0;
  std::size_t at = 0;
  // 19 digits always fit in 64 bits.
  while (at < text.size() && at < 19 && text[at] >= '0' && text[at] <= '9')
    value = value * 10 + static_cast<std::uint64_t>(text[at++] - '0');
  if (at == 0 || at == text.size() || (text[at] != ',' && text[at] != ';'))
    return std::nullopt;
  text.remove_prefix(at + (text[at] == ',' ? 1 : 0));
  return value;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  c = static_cast<char>(c | 0x20);
  return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

} // namespace

std::optional<KmsgRecord> parse_kmsg_record(std::string_view record) {
  std::size_t semicolon = record.substr(0, 257).find(';');
  // The header is a few short numbers and flags; far past that, this is not a record.
  if (semicolon == std::string_view::npos || semicolon > 256)
    return std::nullopt;
  std::string_view header = record.substr(0, semicolon + 1);
  auto prefix = take_field(header);
  if (!prefix || header.front() == ';')
    return std::nullopt;
  auto sequence = take_field(header);
  if (!sequence || header.front() == ';')
    return std::nullopt;
  auto usec = take_field(header);
  if (!usec)
    return std::nullopt;
  // The flags ("-", "c") and whatever fields later kernels add (caller id) are not needed.

  KmsgRecord out;
  out.facility = *prefix >> 3;
  out.level = static_cast<int>(*prefix & 7);
  out.sequence = *sequence;
  out.usec = *usec;
  // The message ends at the first newline; the lines after it are metadata.
  std::string_view body = record.substr(semicolon + 1);
  body = body.substr(0, body.find('\n'));
  out.message.reserve(body.size());
  for (std::size_t at = 0; at < body.size(); ++at) {
    if (body[at] == '\\' && at + 3 < body.size() && body[at + 1] == 'x') {
      int high = hex_digit(body[at + 2]), low = hex_digit(body[at + 3]);
      if (high >= 0 && low >= 0) {
        out.message += static_cast<char>(high * 16 + low);
        at += 3;
        continue;
      }
    }
    out.message += body[at];
  }
  return out;
}

std::optional<std::string> record_local_time(std::uint64_t usec, std::uint64_t boot_now_usec,
                                             std::int64_t wall_now_usec) {
  if (usec > boot_now_usec)
    return std::nullopt;
  std::int64_t wall_usec = wall_now_usec - static_cast<std::int64_t>(boot_now_usec - usec);
  std::time_t seconds = static_cast<std::time_t>(wall_usec / 1000000);
  std::int64_t rest = wall_usec % 1000000;
  if (rest < 0) { // before 1970: round toward the past, as the calendar counts
    --seconds;
    rest += 1000000;
  }
  return local_iso8601(seconds, static_cast<int>(rest / 1000));
}

} // namespace nvsmi
