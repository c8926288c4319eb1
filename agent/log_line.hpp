#pragma once

#include <string>

namespace nvsmi {

// One line on stderr for a long-running command: "nvsmi-agent: 2026-11-22T18:52:53Z message".
void log_line(const std::string &message);

} // namespace nvsmi
