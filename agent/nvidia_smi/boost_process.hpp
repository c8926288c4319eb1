// Boost.Process v2 as shipped in Boost 1.81, header-only on std::filesystem (its config header
// forgets <boost/optional.hpp> and <boost/type_traits.hpp> in that mode, so they come first
// here), and what the agent's runs of nvidia-smi share.
#pragma once

#include <boost/optional.hpp>
#include <boost/type_traits.hpp>

#include <boost/process/v2/environment.hpp>
#include <boost/process/v2/process.hpp>
#include <boost/process/v2/stdio.hpp>

#include "core/descriptor.hpp"
#include "core/privilege.hpp"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <optional>
#include <string>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

namespace nvsmi {

// What every run of nvidia-smi needs around fork and exec:
// - in the child, its own process group, so that it and everything it starts can be signalled
//   together;
// - in the child, SIGKILL when the agent dies, the one death (SIGKILL, a crash) the agent cannot
//   clean up after itself. It reaches the child only, not what the child started;
// - in the child, SIGPIPE and SIGXFSZ back to their default: the agent ignores them, and exec
//   keeps that;
// - in the child, no descriptor of the agent's past exec but 0-2: Boost 1.81's own close_all
//   leaves open every descriptor below its exec-error pipe (it compares each listed descriptor
//   with itself), so serve's listening socket reached nvidia-smi and what it started, and a
//   restarted serve could not bind its port while one of them lived;
// - in the agent, the child reaped when exec fails. Boost.Process returns the error without
//   waiting for the child it forked, which would stay a zombie for as long as the agent runs.
struct NewProcessGroup {
  pid_t parent = ::getpid(); // in the agent, before fork

  template <typename Launcher>
  boost::process::v2::error_code
  on_exec_setup(Launcher &, const boost::process::v2::filesystem::path &, const char *const *&) {
    // Only async-signal-safe calls from here on: the child of a fork.
    struct sigaction default_action {};
    default_action.sa_handler = SIG_DFL;
    ::sigemptyset(&default_action.sa_mask);
    sigset_t none;
    ::sigemptyset(&none);
    if (::setpgid(0, 0) != 0 || ::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 ||
        ::sigaction(SIGPIPE, &default_action, nullptr) != 0 ||
        ::sigaction(SIGXFSZ, &default_action, nullptr) != 0 ||
        ::sigprocmask(SIG_SETMASK, &none, nullptr) != 0 || !release_descriptors_from(3, false))
      return boost::process::v2::error_code(errno, boost::process::v2::system_category());
    // The agent may have died between fork and prctl: then nothing would send the signal.
    if (::getppid() != parent)
      return boost::process::v2::error_code(ESRCH, boost::process::v2::system_category());
    return {};
  }

  template <typename Launcher>
  void on_error(Launcher &launcher, const boost::process::v2::filesystem::path &,
                const char *const *&, const boost::process::v2::error_code &) {
    if (launcher.pid <= 0) // it failed before fork
      return;
    // The child has exited or is about to (exec failed); should it be running after all, it must
    // not outlive the error.
    ::kill(launcher.pid, SIGKILL);
    while (::waitpid(launcher.pid, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
  // Boost 1.81 looks for the hook with this signature (and then calls the one above).
  template <typename Launcher>
  void on_error(Launcher &launcher, const boost::process::v2::error_code &,
                const boost::process::v2::filesystem::path &executable, const char *const *&argv,
                const boost::process::v2::error_code &error) {
    on_error(launcher, executable, argv, error);
  }
};

// A path as given, or a bare name looked up on PATH; empty when not found. Under sudo or setuid
// the caller's PATH would choose the program run with the agent's rights: a bare name is looked
// up in trusted_program_path instead.
inline boost::process::v2::filesystem::path find_program(const std::string &program) {
  if (program.find('/') != std::string::npos)
    return program;
  if (!elevated_privilege())
    return boost::process::v2::environment::find_executable(program);
  std::string folders = trusted_program_path;
  for (std::size_t start = 0; start <= folders.size();) {
    std::size_t end = std::min(folders.find(':', start), folders.size());
    std::string candidate = folders.substr(start, end - start) + "/" + program;
    struct stat info {};
    if (::stat(candidate.c_str(), &info) == 0 && S_ISREG(info.st_mode) &&
        ::access(candidate.c_str(), X_OK) == 0)
      return candidate;
    start = end + 1;
  }
  return {};
}

// What a run says when find_program found nothing: where it looked.
inline std::string program_not_found(const std::string &program) {
  if (std::optional<std::string> why = elevated_privilege())
    return program + ": not found in " + trusted_program_path + " (the caller's PATH is not used " +
           *why + ")";
  // The ways on, since a machine without the driver's tools is where a first try most often ends.
  return program + ": not found on PATH; give its path with --nvidia-smi PATH or NVIDIA_SMI, or "
                   "read a recording with --fixture FILE";
}

} // namespace nvsmi
