// Runs a command to completion under a deadline and an output cap, in its own process group so
// that it and anything it started can be killed together.
#pragma once

#include "nvidia_smi/run_cost.hpp"

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <sys/types.h>
#include <vector>

namespace nvsmi {

struct CommandLimits {
  std::chrono::milliseconds timeout{10000};
  std::size_t max_output_bytes = 64u << 20;
  // After the command exits, how long descendants may keep its pipes open before they are killed.
  std::chrono::milliseconds exit_grace{200};
  // Where the run's start and CPU are counted; none: not counted.
  std::shared_ptr<RunCost> cost;
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

// Calls `use` with the pids of the children that run_bounded runs now, in any thread, while no
// run_bounded can start another. run_bounded waits for its child itself: a sweep of this process's
// zombies (`run`'s, as a subreaper) must leave these, or their exit is taken from run_bounded, and
// it must sweep within `use`, so that a child started and ended after a copy of the list was
// taken, and not on it, is not reaped either.
void with_bounded_children(const std::function<void(const std::vector<pid_t> &)> &use);

} // namespace nvsmi
