#include "host/running_program.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cctype>
#include <memory>
#include <string>

namespace nvsmi {

bool program_runs(std::string_view comm) {
  std::unique_ptr<DIR, int (*)(DIR *)> proc(::opendir("/proc"), ::closedir);
  if (!proc)
    return false;
  while (const dirent *entry = ::readdir(proc.get())) {
    if (!std::isdigit(static_cast<unsigned char>(entry->d_name[0])))
      continue;
    std::string path = std::string("/proc/") + entry->d_name + "/comm";
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
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
