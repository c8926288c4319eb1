#pragma once
// The name a person most likely meant, for every "did you mean": a command, an option, a metric
// family.
#include <string>
#include <vector>

namespace nvsmi {

// The candidate closest to `typed`: one it begins (snap, snapshot) or one a slip or two away
// (--formt, --format; tpo, top: inserts, deletes, replacements and swapped neighbours), compared
// without leading dashes. Empty when none is that close, since a far guess misleads. Typed text
// past 64 bytes resembles nothing (and costs nothing).
std::string closest_name(const std::string &typed, const std::vector<std::string> &candidates);

// `name` without its leading dashes ("--format" -> "format").
std::string without_dashes(const std::string &name);

} // namespace nvsmi
