// Boost.Process v2 as shipped in Boost 1.81, header-only on std::filesystem (its config header
// forgets <boost/optional.hpp> and <boost/type_traits.hpp> in that mode, so they come first
// here), and what the agent's runs of nvidia-smi share.
#pragma once

#include <boost/optional.hpp>
#include <boost/type_traits.hpp>

#include <boost/process/v2/environment.hpp>
#include <boost/process/v2/process.hpp>
#include <boost/process/v2/stdio.hpp>

#include <cerrno>
#include <string>
#include <unistd.h>

namespace nvsmi {

// Puts the child in a process group of its own (in the child, between fork and exec), so that it
// and everything it starts can be signalled together.
struct NewProcessGroup {
  template <typename Launcher>
  boost::process::v2::error_code
  on_exec_setup(Launcher &, const boost::process::v2::filesystem::path &, const char *const *&) {
    if (::setpgid(0, 0) == 0)
      return {};
    return boost::process::v2::error_code(errno, boost::process::v2::system_category());
  }
};

// A path as given, or a bare name looked up on PATH; empty when not found.
inline boost::process::v2::filesystem::path find_program(const std::string &program) {
  if (program.find('/') != std::string::npos)
    return program;
  return boost::process::v2::environment::find_executable(program);
}

} // namespace nvsmi
