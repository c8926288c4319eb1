// Whether a program runs on this machine, by the name the kernel keeps for it (/proc/PID/comm):
// for what the agent must not do beside it (GPM beside DCGM's nv-hostengine).
#pragma once

#include <string_view>

namespace nvsmi {

// True when a process visible here has this comm (the first 15 bytes of its program's name).
// Processes in another PID namespace are not seen; one that exits during the scan is skipped.
bool program_runs(std::string_view comm);

} // namespace nvsmi
