// The agent's documented exit codes (README "Exit codes"), and the error that carries one.
#pragma once

#include "nvsmi/quantity.hpp"

#include <stdexcept>
#include <string>

namespace nvsmi {

enum ExitCode : int {
  exit_ok = 0,
  exit_internal = 1,            // a bug: please report it
  exit_usage = 2,               // bad command line
  exit_not_found = 3,           // nvidia-smi missing or not executable
  exit_smi_failed = 4,          // nvidia-smi exited non-zero or was killed by a signal
  exit_timeout = 5,             // nvidia-smi did not finish before --timeout
  exit_bad_output = 6,          // output empty, too large, or not parseable
  exit_io = 7,                  // a fixture, a log or --output could not be read or written
  exit_locked = 8,              // --lock is held by another run
  exit_not_enough = 9,          // pick, run: fewer free GPUs than asked for, now (no --wait)
  exit_not_enough_in_time = 10, // pick, run: still fewer when --wait's time was up
};

// Stopped by signal N (nvidia-smi and its process group were killed first): 128 + N, what a
// shell shows for a death by that signal (130 for SIGINT, 143 for SIGTERM).
inline ExitCode exit_for_signal(int signal) { return static_cast<ExitCode>(128 + signal); }

class AgentError : public std::runtime_error {
public:
  AgentError(ExitCode code, const std::string &message)
      : std::runtime_error(message), code_(code) {}
  ExitCode code() const { return code_; }

private:
  ExitCode code_;
};

// Whether `error` is a run of nvidia-smi's own failure (not found, failed, timed out, output not
// understood: exit codes 3 to 6), which leaves what that run would have given unknown, or is worth
// a later try; anything else (a signal to the agent, 128 + N) ends the command.
inline bool nvidia_smi_failure(const AgentError &error) {
  return error.code() >= exit_not_found && error.code() <= exit_bad_output;
}

// The one place where what the readers refuse (ParseError) becomes the agent's error: exit code 6,
// the message prefixed by where the bytes came from ("nvidia-smi output", a fixture's path).
inline AgentError bad_output(const std::string &origin, const ParseError &error) {
  return AgentError(exit_bad_output, origin + ": " + error.what());
}

} // namespace nvsmi
