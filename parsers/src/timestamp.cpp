#include "nvsmi/timestamp.hpp"

#include "nvsmi/quantity.hpp"

#include <array>
#include <cstdio>
#include <cstdlib>

namespace nvsmi {
namespace {

// One to four digits, nothing else ("-2" is no field of a time), summed as they are checked:
// from_chars after the check cost more than the check, seven times per timestamp.
bool read_int(std::string_view text, int &value) {
  if (text.empty() || text.size() > 4)
    return false;
  int sum = 0;
  for (char c : text) {
    if (c < '0' || c > '9')
      return false;
    sum = sum * 10 + (c - '0');
  }
  value = sum;
  return true;
}

// Reads "HH:MM:SS" or "HH:MM:SS.mmm".
bool read_clock(std::string_view text, Timestamp &out) {
  if (text.size() < 8 || text[2] != ':' || text[5] != ':')
    return false;
  if (!read_int(text.substr(0, 2), out.hour) || !read_int(text.substr(3, 2), out.minute) ||
      !read_int(text.substr(6, 2), out.second))
    return false;
  if (text.size() == 8)
    return true;
  // A fraction of one to three digits: ".5" is 500 ms.
  std::string_view fraction = text.substr(9);
  int millisecond = 0;
  if (text[8] != '.' || fraction.size() > 3 || !read_int(fraction, millisecond))
    return false;
  for (std::size_t digits = fraction.size(); digits < 3; ++digits)
    millisecond *= 10;
  out.millisecond = millisecond;
  return true;
}

bool plausible(const Timestamp &t) {
  return t.year >= 1970 && t.year <= 9999 && t.month >= 1 && t.month <= 12 && t.day >= 1 &&
         t.day <= 31 && t.hour >= 0 && t.hour <= 23 && t.minute >= 0 && t.minute <= 59 &&
         t.second >= 0 && t.second <= 60 && (!t.millisecond || *t.millisecond <= 999);
}

int month_number(std::string_view name) {
  constexpr std::array<std::string_view, 12> months{"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                    "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  for (std::size_t i = 0; i < months.size(); ++i)
    if (name == months[i])
      return static_cast<int>(i) + 1;
  return 0;
}

// Splits on runs of spaces: "Fri Aug  4 11:44:30 2023" has a double space before a one-digit day.
template <std::size_t N>
bool split_words(std::string_view text, std::array<std::string_view, N> &out) {
  std::size_t count = 0;
  while (!text.empty()) {
    std::size_t start = text.find_first_not_of(' ');
    if (start == std::string_view::npos)
      break;
    text.remove_prefix(start);
    std::size_t end = text.find(' ');
    if (count == N)
      return false;
    out[count++] = text.substr(0, end);
    text.remove_prefix(end == std::string_view::npos ? text.size() : end);
  }
  return count == N;
}

} // namespace

std::optional<Timestamp> parse_xml_timestamp(std::string_view text) {
  text = trim(text);
  if (is_unknown(text))
    return std::nullopt;
  std::array<std::string_view, 5> words; // weekday, month, day, clock, year
  Timestamp t;
  if (!split_words(text, words) || !read_clock(words[3], t) || !read_int(words[2], t.day) ||
      !read_int(words[4], t.year))
    return std::nullopt;
  t.month = month_number(words[1]);
  if (!plausible(t))
    return std::nullopt;
  return t;
}

std::optional<Timestamp> parse_csv_timestamp(std::string_view text) {
  text = trim(text);
  if (is_unknown(text) || text.size() < 19 || text[4] != '/' || text[7] != '/' || text[10] != ' ')
    return std::nullopt;
  Timestamp t;
  if (!read_int(text.substr(0, 4), t.year) || !read_int(text.substr(5, 2), t.month) ||
      !read_int(text.substr(8, 2), t.day) || !read_clock(text.substr(11), t) || !plausible(t))
    return std::nullopt;
  return t;
}

std::optional<Timestamp> parse_iso8601_timestamp(std::string_view text) {
  text = trim(text);
  if (is_unknown(text) || text.size() < 19 || text[4] != '-' || text[7] != '-' ||
      (text[10] != 'T' && text[10] != ' '))
    return std::nullopt;
  Timestamp t;
  if (!read_int(text.substr(0, 4), t.year) || !read_int(text.substr(5, 2), t.month) ||
      !read_int(text.substr(8, 2), t.day))
    return std::nullopt;
  std::string_view clock = text.substr(11);
  std::size_t zone = clock.find_first_of("Z+-");
  if (zone != std::string_view::npos) {
    std::string_view offset = clock.substr(zone);
    clock = clock.substr(0, zone);
    int hours = 0, minutes = 0;
    if (offset == "Z")
      t.utc_offset_minutes = 0;
    else if (offset.size() == 6 && offset[3] == ':' && read_int(offset.substr(1, 2), hours) &&
             read_int(offset.substr(4, 2), minutes) && hours <= 23 && minutes <= 59)
      t.utc_offset_minutes = (offset[0] == '-' ? -1 : 1) * (hours * 60 + minutes);
    else
      return std::nullopt;
  }
  if ((clock.size() != 8 && clock.size() != 12) || !read_clock(clock, t) || !plausible(t))
    return std::nullopt;
  return t;
}

std::string to_iso8601(const Timestamp &t) {
  char buffer[48];
  int length = std::snprintf(buffer, sizeof buffer, "%04d-%02d-%02dT%02d:%02d:%02d", t.year,
                             t.month, t.day, t.hour, t.minute, t.second);
  std::string out(buffer, static_cast<std::size_t>(length));
  if (t.millisecond) {
    std::snprintf(buffer, sizeof buffer, ".%03d", *t.millisecond);
    out += buffer;
  }
  if (t.utc_offset_minutes) {
    int offset = *t.utc_offset_minutes;
    std::snprintf(buffer, sizeof buffer, "%c%02d:%02d", offset < 0 ? '-' : '+',
                  std::abs(offset) / 60, std::abs(offset) % 60);
    out += buffer;
  }
  return out;
}

} // namespace nvsmi
