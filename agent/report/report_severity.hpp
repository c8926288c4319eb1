// How serious a finding is, so that a reader can go to the worst first: the HTML page colours by
// it, the text and JSON reports carry its word.
#pragma once

#include <string>

namespace nvsmi {

// info: nothing to fix, or too little to judge. warning: the GPU's time is wasted or slowed
// (starved, idle while held, capped). critical: close to a failure (heat, out of memory).
enum class Severity { info, warning, critical };

// "info", "warning", "critical".
const char *severity_name(Severity severity);

struct Finding {
  Severity severity = Severity::info;
  std::string text;
};

} // namespace nvsmi
