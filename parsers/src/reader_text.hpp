// What the line readers (CSV GPU query, compute-apps, pmon) share about the text they read.
#pragma once

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

// A line as it appears in a message: nvidia-smi's own words are worth showing, hostile megabytes
// are not.
inline std::string excerpt(std::string_view line) {
  constexpr std::size_t limit = 80;
  std::string out = "\"";
  out += line.substr(0, limit);
  out += line.size() > limit ? "...\"" : "\"";
  return out;
}

} // namespace nvsmi
