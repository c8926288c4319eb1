#include "nvsmi/stream_readings.hpp"

#include "nvsmi/quantity.hpp"
#include "reader_text.hpp"

#include <limits>

namespace nvsmi {
namespace {

// A type is at most four letters and three '+'; what is shown of one that is not, at most this.
constexpr std::size_t max_shown_type_bytes = 16;

// Hostile text as a note shows it: printable ASCII only (anything else a '?'), cut short.
std::string shown(std::string_view text) {
  std::string out = "\"";
  for (std::size_t i = 0; i < text.size() && i < max_shown_type_bytes; ++i)
    out += text[i] > ' ' && text[i] < 0x7f ? text[i] : '?';
  out += text.size() > max_shown_type_bytes ? "...\"" : "\"";
  return out;
}

} // namespace

Reading stream_reading(std::string_view cell, const StreamColumn &column,
                       std::vector<std::string> &dropped) {
  cell = trim(cell);
  if (cell == "-" || is_unknown(cell))
    return std::nullopt;
  // parse_integer refuses a sign; a number below 0 is read here, to be dropped rather than make
  // the whole row unreadable.
  bool negative = cell.size() > 1 && cell.front() == '-';
  std::string field = std::string(column.stream) + " column " + std::string(column.name);
  std::optional<std::int64_t> parsed =
      parse_integer(negative ? cell.substr(1) : cell, Unit::none, UnitPolicy::optional, field);
  if (!parsed) // a sign before a marker: "-N/A"
    throw ParseError(field + ": not a number in " + excerpt(cell));
  std::int64_t value = *parsed;
  bool share = column.range == StreamRange::share;
  if (negative ? value != 0 : share && value > 100) {
    dropped.push_back(std::string(column.name) + " " + (negative ? "-" : "") +
                      std::to_string(value) + " " + std::string(column.unit) +
                      (share ? " (a share is 0-100 %)" : " (a rate is at least 0)"));
    return std::nullopt;
  }
  if (value > std::numeric_limits<std::int64_t>::max() / column.scale)
    throw ParseError(field + " value out of range: " + excerpt(cell));
  return value * column.scale;
}

Text process_type(std::string_view text, std::vector<std::string> *dropped) {
  Text type = parse_text(text);
  if (!type)
    return std::nullopt;
  // Letters and '+' in turn, each letter one of C, G, M, O and at most once.
  bool valid = !type->empty() && type->size() <= 7;
  std::string seen;
  for (std::size_t i = 0; valid && i < type->size(); ++i) {
    char c = (*type)[i];
    if (i % 2 == 1) {
      valid = c == '+' && i + 1 < type->size();
    } else {
      valid = (c == 'C' || c == 'G' || c == 'M' || c == 'O') && seen.find(c) == std::string::npos;
      seen += c;
    }
  }
  if (valid)
    return type;
  if (dropped)
    dropped->push_back("type " + shown(*type) +
                       " (not one nvidia-smi documents: C, G, M, O, or joined by '+')");
  return std::nullopt;
}

bool has_compute_context(const std::string &type) {
  return type.find('C') != std::string::npos || type.find('M') != std::string::npos;
}

std::string dropped_line(std::string_view row, const std::vector<std::string> &dropped) {
  std::string line(row);
  line += ": dropped, never read: ";
  for (std::size_t i = 0; i < dropped.size(); ++i) {
    if (i > 0)
      line += ", ";
    line += dropped[i];
  }
  return line;
}

} // namespace nvsmi
