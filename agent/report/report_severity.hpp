// How serious a finding is, on the agent's one scale (core/severity.hpp), so that a reader can go
// to the worst first: the HTML page colours by it, the text and JSON reports carry its word.
#pragma once

#include "core/severity.hpp"

#include <string>

namespace nvsmi {

// The report's words: "info" (Severity::ok: nothing to fix, or too little to judge), "warning"
// (the GPU's time is wasted or slowed: starved, idle while held, capped), "critical" (close to a
// failure: heat, out of memory).
const char *severity_name(Severity severity);

struct Finding {
  Severity severity = Severity::ok;
  std::string text;
};

} // namespace nvsmi
