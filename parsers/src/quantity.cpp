#include "nvsmi/quantity.hpp"

#include <array>
#include <charconv>
#include <cmath>
#include <system_error>

namespace nvsmi {
namespace {

// nvidia-smi's own words for "no reading". XML prints them bare, CSV in brackets.
constexpr std::array<std::string_view, 8> unknown_messages{
    "N/A",
    "Not Supported",
    "Unknown Error",
    "Insufficient Permissions",
    "GPU is lost",
    "GPU requires reset",
    "Requested functionality has been deprecated",
    "Not Available",
};

std::string quoted(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 2);
  out += '"';
  out.append(text.data(), text.size());
  out += '"';
  return out;
}

[[noreturn]] void fail(std::string_view field, std::string_view problem, std::string_view text) {
  std::string message(field);
  message += ": ";
  message += problem;
  message += " in ";
  message += quoted(text);
  throw ParseError(message);
}

// Splits "81920 MiB" into "81920" and "MiB", checking the unit against the field's.
std::string_view number_part(std::string_view text, Unit unit, UnitPolicy policy,
                             std::string_view field) {
  std::size_t end = 0;
  while (end < text.size() && text[end] != ' ')
    ++end;
  std::string_view number = text.substr(0, end);
  std::string_view suffix = trim(text.substr(end));
  // "16x": the one unit nvidia-smi writes without a space.
  if (unit == Unit::lanes && suffix.empty() && !number.empty() && number.back() == 'x') {
    number.remove_suffix(1);
    suffix = text.substr(end - 1, 1);
  }
  if (suffix.empty()) {
    if (policy == UnitPolicy::required && unit != Unit::none)
      fail(field, "missing unit " + quoted(unit_symbol(unit)), text);
    return number;
  }
  if (unit == Unit::none)
    fail(field, "unexpected unit " + quoted(suffix), text);
  if (suffix != unit_symbol(unit))
    fail(field, "expected unit " + quoted(unit_symbol(unit)) + ", got " + quoted(suffix), text);
  return number;
}

// from_chars also takes "inf" and "nan"; nvidia-smi prints neither, so insist on a digit.
void require_digits(std::string_view number, std::string_view field, std::string_view text) {
  std::size_t first = (!number.empty() && number[0] == '-') ? 1 : 0;
  if (number.size() <= first || number[first] < '0' || number[first] > '9')
    fail(field, "not a number", text);
}

} // namespace

std::string_view unit_symbol(Unit unit) {
  switch (unit) {
  case Unit::none:
    return "";
  case Unit::mib:
    return "MiB";
  case Unit::watt:
    return "W";
  case Unit::celsius:
    return "C";
  case Unit::percent:
    return "%";
  case Unit::mhz:
    return "MHz";
  case Unit::lanes:
    return "x";
  case Unit::kib_per_s:
    return "KB/s";
  case Unit::bytes_per_s:
    return "B/s";
  }
  return "";
}

bool is_unknown(std::string_view text) {
  text = trim(text);
  if (text.empty())
    return true;
  if ((text.front() >= '0' && text.front() <= '9') || text.front() == '-')
    return false; // a number, the common case: none of the markers starts so
  if (text.front() == '[' && text.back() == ']')
    return true;
  for (std::string_view message : unknown_messages)
    if (text == message)
      return true;
  return false;
}

std::optional<double> parse_real(std::string_view text, Unit unit, UnitPolicy policy,
                                 std::string_view field) {
  text = trim(text);
  if (is_unknown(text))
    return std::nullopt;
  std::string_view number = number_part(text, unit, policy, field);
  require_digits(number, field, text);
  // A double holds every whole number only below 2^53: "9007199254740993" reads as ...992, the
  // same double as 2^53 itself. No reading nvidia-smi prints is near it, so refuse 2^53 and up
  // rather than print a number other than the one read.
  constexpr double limit = 9007199254740992.0;
  double value = 0;
  auto [end, error] = std::from_chars(number.data(), number.data() + number.size(), value);
  if (error == std::errc::result_out_of_range ||
      (error == std::errc() && !(std::fabs(value) < limit)))
    fail(field, "number out of range", text);
  if (error != std::errc() || end != number.data() + number.size())
    fail(field, "not a number", text);
  if (value < 0 && unit != Unit::celsius)
    fail(field, "negative value", text);
  // "-0" is zero: kept as -0.0, every format would print it with its sign ("-0.0", "-0.00").
  if (value == 0)
    return 0.0;
  return value;
}

std::optional<std::int64_t> parse_integer(std::string_view text, Unit unit, UnitPolicy policy,
                                          std::string_view field) {
  text = trim(text);
  if (is_unknown(text))
    return std::nullopt;
  std::string_view number = number_part(text, unit, policy, field);
  require_digits(number, field, text);
  std::int64_t value = 0;
  auto [end, error] = std::from_chars(number.data(), number.data() + number.size(), value);
  if (error == std::errc::result_out_of_range)
    fail(field, "number out of range", text);
  if (error != std::errc() || end != number.data() + number.size())
    fail(field, "not a whole number", text);
  if (value < 0 && unit != Unit::celsius)
    fail(field, "negative value", text);
  return value;
}

std::optional<std::string> parse_text(std::string_view text) {
  text = trim(text);
  if (is_unknown(text))
    return std::nullopt;
  return std::string(text);
}

std::optional<bool> parse_flag(std::string_view text, std::string_view yes, std::string_view no,
                               std::string_view field) {
  text = trim(text);
  if (is_unknown(text))
    return std::nullopt;
  if (text == yes || text == no)
    return text == yes;
  std::string message(field);
  message += ": expected ";
  message += quoted(yes);
  message += " or ";
  message += quoted(no);
  message += ", got ";
  message += quoted(text);
  throw ParseError(message);
}

} // namespace nvsmi
