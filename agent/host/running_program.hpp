// Whether a program runs on this machine, by the name the kernel keeps for it (/proc/PID/comm):
// for what the agent must not do beside it (GPM beside DCGM's nv-hostengine).
#pragma once

#include <string>
#include <string_view>

namespace nvsmi {

// Where a host's proc/ and sys/ are read: NVSMI_HOST_ROOT names a folder that holds them (the
// host's own, mounted into a container; a test's copy), as node_exporter's --path.procfs and
// --path.sysfs do; else "/". Refused under sudo: core/privilege.hpp.
std::string host_root();

// True when a process under host_root()'s proc/ has this comm (the first 15 bytes of its program's
// name). Processes in another PID namespace are not seen; one that exits during the scan is
// skipped.
bool program_runs(std::string_view comm);

} // namespace nvsmi
