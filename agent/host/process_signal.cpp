#include "host/process_signal.hpp"

#include "core/descriptor.hpp"
#include "core/signal_name.hpp"
#include "host/process_tree.hpp"
#include "host/user_names.hpp"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fstream>
#include <sys/syscall.h>
#include <unistd.h>

namespace nvsmi {
namespace {

// The real uid of `pid` from /proc/PID/status, for saying whose process it is.
std::optional<unsigned> owner_uid(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("Uid:", 0) == 0) {
      try {
        return static_cast<unsigned>(std::stoul(line.substr(4)));
      } catch (const std::exception &) {
        return std::nullopt;
      }
    }
  return std::nullopt;
}

std::string owner_text(pid_t pid) {
  std::optional<unsigned> uid = owner_uid(pid);
  if (!uid)
    return "another user";
  UserNames names;
  return names.names({*uid})[*uid];
}

SignalResult after_error(int error, pid_t pid, int signal) {
  std::string who = "pid " + std::to_string(pid);
  switch (error) {
  case ESRCH:
    return {SignalOutcome::gone, who + " has already gone"};
  case EPERM:
    return {SignalOutcome::not_permitted, "not yours: " + who + " belongs to " + owner_text(pid) +
                                              ", and the kernel refused " + signal_name(signal)};
  default:
    return {SignalOutcome::failed,
            signal_name(signal) + " to " + who + " failed: " + std::strerror(error)};
  }
}

} // namespace

SignalResult signal_process(pid_t pid, std::optional<std::uint64_t> expected_start, int signal) {
  std::string who = "pid " + std::to_string(pid);
  if (pid <= 0)
    return {SignalOutcome::failed, "not sent: " + who + " is no process"};
  if (!expected_start)
    return {SignalOutcome::start_unknown,
            "not sent: when " + who +
                " started is not known here, so it cannot be told from a "
                "later process given the same pid"};
  int pidfd = -1;
#ifdef SYS_pidfd_open
  pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  // ENOSYS: a kernel before 5.3; EPERM: a seccomp filter (an older container runtime's) that
  // refuses syscalls it does not know. Either way kill() after the check below.
  if (pidfd < 0 && errno != ENOSYS && errno != EPERM)
    return after_error(errno, pid, signal);
#endif
  Descriptor held(pidfd);
  std::optional<std::uint64_t> start = process_start_ticks(pid);
  if (!start)
    return {SignalOutcome::gone, who + " has already gone"};
  if (*start != *expected_start)
    return {SignalOutcome::reused,
            "not sent: " + who + " is now another process, started after the one shown"};
  long sent = -1;
#ifdef SYS_pidfd_send_signal
  if (held.get() >= 0)
    sent = ::syscall(SYS_pidfd_send_signal, held.get(), signal, nullptr, 0);
  else
#endif
    sent = ::kill(pid, signal);
  if (sent != 0)
    return after_error(errno, pid, signal);
  return {SignalOutcome::sent, "sent " + signal_name(signal) + " to " + who};
}

} // namespace nvsmi
