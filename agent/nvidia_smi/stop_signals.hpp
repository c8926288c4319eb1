// The signals that would end the agent by default and that it can catch. Each command that runs
// nvidia-smi catches all of them, so that no way of stopping the agent leaves nvidia-smi and what
// it started running: it kills the process group, then exits 128 + the signal's number (as a
// shell reports a death by that signal). SIGPIPE and SIGXFSZ are ignored instead (a reader that
// left shows as EPIPE, a file past the size limit as EFBIG, each an error where it is written); the
// faults (SIGSEGV, SIGABRT, ...) keep their core dump, and for them, as for SIGKILL, the child's
// parent-death signal takes nvidia-smi down.
#pragma once

#include "core/exit_codes.hpp"
#include "core/log_line.hpp"

#include <boost/asio/signal_set.hpp>
#include <boost/system/system_error.hpp>

#include <csignal>
#include <cstring>
#include <string>

namespace nvsmi {

inline void add_stop_signals(boost::asio::signal_set &signals) {
  for (int signal : {SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2, SIGALRM, SIGVTALRM,
                     SIGPROF, SIGXCPU, SIGIO, SIGPWR, SIGSTKFLT})
    signals.add(signal);
  for (int signal = SIGRTMIN; signal <= SIGRTMAX; ++signal) {
    // A realtime signal that the process's runtime keeps for itself is refused with EINVAL
    // (valgrind keeps SIGRTMAX to end its threads): it was never the agent's to catch, and
    // refusing to start over it kept the agent from running under valgrind at all. Any other
    // failure is still an error.
    boost::system::error_code refused;
    signals.add(signal, refused);
    if (refused && refused != boost::system::errc::invalid_argument)
      throw boost::system::system_error(refused, "add");
  }
}

// What a long-running command (watch, serve) exits with when `signal` stops it: 0 for SIGINT and
// SIGTERM, a stop asked for (systemd's, Ctrl-C); 128 + N for any other, which the log names.
inline int exit_code_for_stop(int signal) {
  if (signal == SIGINT || signal == SIGTERM)
    return exit_ok;
  log_line(std::string("stopping on ") + strsignal(signal));
  return exit_for_signal(signal);
}

// A reader of standard output that goes away shows as EPIPE on write, and a file that reaches
// the size limit (RLIMIT_FSIZE) as EFBIG, not as a silent death with half a row written.
inline void ignore_write_signals() {
  std::signal(SIGPIPE, SIG_IGN);
  std::signal(SIGXFSZ, SIG_IGN);
}

} // namespace nvsmi
