#include "host/running_program.hpp"

#include "core/privilege.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cctype>
#include <memory>
#include <string>

namespace nvsmi {

std::string host_root() { return caller_named_variable("NVSMI_HOST_ROOT").value_or("/"); }

bool program_runs(std::string_view comm) {
  std::string root = host_root();
  if (root.empty() || root.back() != '/')
    root += '/';
  std::unique_ptr<DIR, int (*)(DIR *)> proc(::opendir((root + "proc").c_str()), ::closedir);
  if (!proc)
    return false;
  while (const dirent *entry = ::readdir(proc.get())) {
    if (!std::isdigit(static_cast<unsigned char>(entry->d_name[0])))
      continue;
    std::string path = root + "proc/" + entry->d_name + "/comm";
    // Non-blocking: a FIFO planted under NVSMI_HOST_ROOT must not hang the start.
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
      continue;
    char name[32];
    ssize_t got = ::read(fd, name, sizeof name);
    ::close(fd);
    if (got <= 0)
      continue;
    std::string_view read(name, static_cast<std::size_t>(got));
    if (!read.empty() && read.back() == '\n')
      read.remove_suffix(1);
    if (read == comm)
      return true;
  }
  return false;
}

} // namespace nvsmi
