#include "host/process_tree.hpp"

#include "host/process_reader.hpp"

#include <fstream>
#include <iterator>
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

// The parent in /proc/PID/stat: the name in parentheses may hold spaces and ')', so read from
// the last ')'.
std::optional<pid_t> parent_of(pid_t pid) {
  std::optional<std::string> stat = read_small("/proc/" + std::to_string(pid) + "/stat", 4096);
  if (!stat)
    return std::nullopt;
  std::size_t paren = stat->rfind(')');
  if (paren == std::string::npos)
    return std::nullopt;
  std::istringstream rest(stat->substr(paren + 1));
  char state = 0;
  long parent = -1;
  if (!(rest >> state >> parent) || parent < 0)
    return std::nullopt;
  return static_cast<pid_t>(parent);
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

bool descends_from(pid_t pid, pid_t ancestor) {
  if (pid == ancestor)
    return true;
  for (pid_t parent : process_ancestors(pid))
    if (parent == ancestor)
      return true;
  return false;
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

} // namespace nvsmi
