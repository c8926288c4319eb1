// A signal as people name it in a question or a message ("send SIGTERM to pid 123?").
#pragma once

#include <string>

namespace nvsmi {

// "SIGTERM", "SIGKILL"; "signal 64" for a number the C library has no name for.
std::string signal_name(int signal);

} // namespace nvsmi
