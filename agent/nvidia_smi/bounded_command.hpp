// Runs a command to completion under a deadline and an output cap, in its own process group so
// that it and anything it started can be killed together.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

namespace nvsmi {

struct CommandLimits {
  std::chrono::milliseconds timeout{10000};
  std::size_t max_output_bytes = 64u << 20;
  // After the command exits, how long descendants may keep its pipes open before they are killed.
  std::chrono::milliseconds exit_grace{200};
};

struct CommandResult {
  int exit_code = 0;   // valid when term_signal == 0
  int term_signal = 0; // the signal that killed it, or 0
  std::string out, err;
};

// argv[0] is a path, or a name looked up on PATH. Throws AgentError: exit_not_found when it cannot
// be started, exit_timeout past the deadline, exit_bad_output past the output cap. In each case
// the whole process group has been killed first.
CommandResult run_bounded(const std::vector<std::string> &argv, const CommandLimits &limits);

} // namespace nvsmi
