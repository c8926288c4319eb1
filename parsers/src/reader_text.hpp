// What the line readers (CSV GPU query, compute-apps, pmon) share about the text they read.
#pragma once

#include "nvsmi/utf8.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace nvsmi {

// "memory.used [MiB]" -> name "memory.used", unit "MiB" (empty when there is none).
inline void split_header_cell(std::string_view cell, std::string_view &name,
                              std::string_view &unit) {
  std::size_t bracket = cell.find(" [");
  name = cell.substr(0, bracket);
  unit = {};
  if (bracket != std::string_view::npos && cell.back() == ']')
    unit = cell.substr(bracket + 2, cell.size() - bracket - 3);
}

// ASCII letters compared without case (nvidia-smi's words change case between drivers), without
// the locale std::tolower would consult.
inline bool equal_ignoring_case(std::string_view a, std::string_view b) {
  auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
  if (a.size() != b.size())
    return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (lower(a[i]) != lower(b[i]))
      return false;
  return true;
}

// A line as it appears in a message: nvidia-smi's own words are worth showing, hostile megabytes
// are not, nor a control character (an escape sequence on the operator's terminal, C0 or C1):
// each is '?'. Valid UTF-8 whatever the line holds (printable_line).
inline std::string excerpt(std::string_view line) {
  constexpr std::size_t limit = 80;
  return "\"" + printable_line(line, limit, '?') + (line.size() > limit ? "...\"" : "\"");
}

// Why a line-by-line reader (pmon, dmon, the compute-apps loop) skips a line longer than it holds,
// or nullopt for a line it reads: one message for all of them.
inline std::optional<std::string> overlong_line(std::string_view reader, std::string_view line,
                                                std::size_t max_bytes) {
  if (line.size() <= max_bytes)
    return std::nullopt;
  return std::string(reader) + " line of " + std::to_string(line.size()) +
         " bytes skipped (longer than " + std::to_string(max_bytes) + ")";
}

// The next token of `rest` separated by spaces or tabs (the text tables pmon and dmon print), which
// `rest` loses.
inline std::string_view next_token(std::string_view &rest) {
  auto space = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
  std::size_t begin = 0;
  while (begin < rest.size() && space(rest[begin]))
    ++begin;
  std::size_t end = begin;
  while (end < rest.size() && !space(rest[end]))
    ++end;
  std::string_view token = rest.substr(begin, end - begin);
  rest.remove_prefix(end);
  return token;
}

} // namespace nvsmi
