// Sending a signal to a process a person picked on a screen (`top`): only to the process that was
// shown, never to another that has since been given its pid, and with the kernel deciding who may.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <sys/types.h>

namespace nvsmi {

enum class SignalOutcome {
  sent,
  gone,          // the process has ended (ESRCH)
  not_permitted, // the kernel refused: another user's process (EPERM)
  reused,        // the pid now names a process that started later: not signalled
  start_unknown, // when the shown process started is not known: it cannot be told from another
  failed,        // any other error
};

struct SignalResult {
  SignalOutcome outcome = SignalOutcome::failed;
  std::string message; // one line for the person: "sent SIGTERM to pid 123", "not yours: ..."
};

// Sends `signal` to `pid` if it is still the process that started at `expected_start` (clock
// ticks after boot, /proc/PID/stat, as read when the pid was shown). The pid is first held by a
// pidfd (pidfd_open), then its start is compared, then the signal goes through the pidfd: a pid
// reused after the check still cannot be reached, since the pidfd names the process, not the
// number. Where the kernel has no pidfd (before Linux 5.3), kill() after the same check.
SignalResult signal_process(pid_t pid, std::optional<std::uint64_t> expected_start, int signal);

} // namespace nvsmi
