#include "host/process_tree.hpp"

#include "host/process_reader.hpp"

#include <dirent.h>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <sstream>

namespace nvsmi {
namespace {

std::optional<std::string> read_small(const std::string &path, std::size_t max_bytes) {
  std::ifstream file(path);
  if (!file)
    return std::nullopt;
  std::string text;
  text.resize(max_bytes);
  file.read(text.data(), static_cast<std::streamsize>(max_bytes));
  text.resize(static_cast<std::size_t>(file.gcount()));
  return text;
}

struct StatLine {
  std::string name;
  char state = '?';
  pid_t parent = 0;
  pid_t group = 0;
  std::uint64_t start_ticks = 0;
};

// /proc/PID/stat: the name in parentheses may hold spaces and ')', so the fields are read from
// the last ')'; the process group is the 5th field, the start the 22nd, the 20th after the name.
std::optional<StatLine> read_stat(pid_t pid) {
  std::optional<std::string> stat = read_small("/proc/" + std::to_string(pid) + "/stat", 4096);
  if (!stat)
    return std::nullopt;
  std::size_t open = stat->find('('), paren = stat->rfind(')');
  if (open == std::string::npos || paren == std::string::npos || paren < open)
    return std::nullopt;
  StatLine line;
  line.name = stat->substr(open + 1, paren - open - 1);
  std::istringstream rest(stat->substr(paren + 1));
  long parent = -1, group = -1;
  if (!(rest >> line.state >> parent >> group) || parent < 0 || group < 0)
    return std::nullopt;
  line.parent = static_cast<pid_t>(parent);
  line.group = static_cast<pid_t>(group);
  std::string skipped;
  for (int field = 6; field < 22 && rest >> skipped; ++field) {
  }
  if (!(rest >> line.start_ticks))
    return std::nullopt;
  return line;
}

std::optional<pid_t> parent_of(pid_t pid) {
  std::optional<StatLine> stat = read_stat(pid);
  if (!stat)
    return std::nullopt;
  return stat->parent;
}

} // namespace

std::vector<pid_t> process_ancestors(pid_t pid, std::size_t max_depth) {
  std::vector<pid_t> chain;
  pid_t at = pid;
  while (chain.size() < max_depth) {
    std::optional<pid_t> parent = parent_of(at);
    if (!parent || *parent <= 1)
      break;
    chain.push_back(*parent);
    at = *parent;
  }
  return chain;
}

std::vector<Descendant> process_ancestry(pid_t pid, std::size_t max_depth) {
  std::vector<Descendant> chain;
  std::optional<pid_t> parent = parent_of(pid);
  while (parent && *parent > 1 && chain.size() < max_depth) {
    std::optional<StatLine> stat = read_stat(*parent);
    if (!stat)
      break;
    chain.push_back({*parent, stat->parent, stat->state, stat->name, stat->group});
    parent = stat->parent;
  }
  return chain;
}

bool descends_from(pid_t pid, pid_t ancestor) {
  if (pid == ancestor)
    return true;
  for (pid_t parent : process_ancestors(pid))
    if (parent == ancestor)
      return true;
  return false;
}

std::optional<std::uint64_t> process_start_ticks(pid_t pid) {
  std::optional<StatLine> stat = read_stat(pid);
  if (!stat)
    return std::nullopt;
  return stat->start_ticks;
}

std::optional<std::string> process_cgroup(pid_t pid) {
  std::optional<std::string> text =
      read_small("/proc/" + std::to_string(pid) + "/cgroup", max_cgroup_bytes);
  if (!text || text->empty())
    return std::nullopt;
  std::istringstream lines(*text);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("0::", 0) == 0)
      return line.substr(3);
  return text;
}

std::vector<pid_t> process_subtree(pid_t root, std::size_t most) {
  std::vector<pid_t> found{root};
  for (std::size_t next = 0; next < found.size() && found.size() < most; ++next) {
    std::string tasks = "/proc/" + std::to_string(found[next]) + "/task";
    std::unique_ptr<DIR, int (*)(DIR *)> folder(::opendir(tasks.c_str()), ::closedir);
    if (!folder)
      continue; // gone meanwhile
    while (const dirent *entry = ::readdir(folder.get())) {
      if (entry->d_name[0] < '0' || entry->d_name[0] > '9')
        continue;
      std::optional<std::string> children =
          read_small(tasks + "/" + entry->d_name + "/children", 4096);
      std::istringstream pids(children.value_or(""));
      for (pid_t child = 0; pids >> child && found.size() < most;)
        found.push_back(child);
    }
  }
  return found;
}

std::vector<Descendant> process_descendants(pid_t ancestor) {
  std::map<pid_t, Descendant> all;
  std::unique_ptr<DIR, int (*)(DIR *)> proc(::opendir("/proc"), ::closedir);
  if (!proc)
    return {};
  while (const dirent *entry = ::readdir(proc.get())) {
    std::string name = entry->d_name;
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos)
      continue;
    pid_t pid = static_cast<pid_t>(std::stol(name));
    if (std::optional<StatLine> stat = read_stat(pid))
      all[pid] = Descendant{pid, stat->parent, stat->state, stat->name, stat->group};
  }
  // A chain is followed at most as far as there are processes: one read while processes come and
  // go could otherwise loop.
  std::vector<Descendant> found;
  for (const auto &[pid, process] : all) {
    pid_t at = process.parent;
    for (std::size_t steps = 0; at > 1 && at != ancestor && steps < all.size(); ++steps) {
      auto parent = all.find(at);
      at = parent == all.end() ? 0 : parent->second.parent;
    }
    if (at == ancestor && pid != ancestor)
      found.push_back(process);
  }
  return found;
}

} // namespace nvsmi
