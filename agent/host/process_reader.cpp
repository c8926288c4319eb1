#include "host/process_reader.hpp"

#include "core/descriptor.hpp"
#include "host/procps_library.hpp"

#include <algorithm>
#include <array>
#include <climits>
#include <fcntl.h>
#include <optional>
#include <unistd.h>
#include <unordered_map>

namespace nvsmi {
namespace {

// In this order, so that PIDS_VAL's index is the item's place here.
enum Item {
  pid_item,
  ruid_item,
  began_item,
  ticks_item,
  rss_item,
  name_item,
  cgroup_item,
  ticks_children_item
};
std::array<pids_item, 8> items = {PIDS_ID_PID, PIDS_ID_RUID, PIDS_TICS_BEGAN, PIDS_TICS_ALL,
                                  PIDS_VM_RSS, PIDS_CMD,     PIDS_CGROUP_V,   PIDS_TICS_ALL_C};
// procps_pids_select takes at most this many pids at once (FILL_ID_MAX in libproc2).
constexpr std::size_t select_at_most = 255;

// Up to `most` bytes of a file of /proc/PID, through the descriptor of that folder: once the
// process is gone, reads through it fail, even where the pid now names another process.
std::optional<std::string> read_in(const Descriptor &folder, const char *name, std::size_t most) {
  Descriptor file(::openat(folder.get(), name, O_RDONLY | O_CLOEXEC));
  std::string bytes;
  if (file.get() < 0 || !read_up_to(file.get(), most, std::nullopt, bytes))
    return std::nullopt;
  return bytes;
}

// Field 22 of /proc/PID/stat, counted after the name in parentheses, which may hold anything.
std::optional<std::uint64_t> start_ticks_in(const std::string &stat) {
  std::size_t paren = stat.rfind(')');
  if (paren == std::string::npos)
    return std::nullopt;
  std::size_t at = paren + 1;
  for (int field = 2; field < 22; ++field) {
    at = stat.find(' ', at);
    if (at == std::string::npos)
      return std::nullopt;
    ++at;
  }
  std::uint64_t value = 0;
  bool any = false;
  for (; at < stat.size() && stat[at] >= '0' && stat[at] <= '9'; ++at, any = true)
    value = value * 10 + static_cast<std::uint64_t>(stat[at] - '0');
  return any ? std::optional<std::uint64_t>(value) : std::nullopt;
}

// The arguments, NUL-separated in /proc, joined by spaces. A process that rewrote its arguments
// (setproctitle) may leave NULs as padding at the end: dropped.
std::string joined(std::string arguments) {
  while (!arguments.empty() && arguments.back() == '\0')
    arguments.pop_back();
  std::replace(arguments.begin(), arguments.end(), '\0', ' ');
  return arguments;
}

} // namespace

ProcessReader::ProcessReader() : library_(procps()) {
  if (!library_)
    return;
  ticks_per_second_ = library_->hertz_get();
  if (library_->pids_new(&info_, items.data(), static_cast<int>(items.size())) < 0)
    info_ = nullptr;
}

ProcessReader::~ProcessReader() {
  if (info_)
    library_->pids_unref(&info_);
}

std::vector<ProcessFacts> ProcessReader::read(const std::vector<int> &pids) {
  std::vector<ProcessFacts> found;
  if (!info_)
    return found;
  // Opened first: while a folder's process lives, its pid cannot name another, so what libproc2
  // reads by path meanwhile is that process's, provided the process is still there at the end.
  std::vector<int> open_pids;
  std::vector<Descriptor> folders;
  for (int pid : pids) {
    if (pid <= 0 || std::find(open_pids.begin(), open_pids.end(), pid) != open_pids.end())
      continue;
    Descriptor folder(
        ::open(("/proc/" + std::to_string(pid)).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (folder.get() < 0)
      continue;
    open_pids.push_back(pid);
    folders.push_back(std::move(folder));
  }

  std::unordered_map<int, ProcessFacts> read_by_pid;
  for (std::size_t first = 0; first < open_pids.size(); first += select_at_most) {
    std::vector<unsigned> chunk(open_pids.begin() + static_cast<std::ptrdiff_t>(first),
                                open_pids.begin() + static_cast<std::ptrdiff_t>(std::min(
                                                        open_pids.size(), first + select_at_most)));
    auto before = std::chrono::steady_clock::now();
    pids_fetch *fetched =
        library_->pids_select(info_, chunk.data(), static_cast<int>(chunk.size()), PIDS_SELECT_PID);
    auto read_at = before + (std::chrono::steady_clock::now() - before) / 2;
    if (!fetched || !fetched->counts)
      continue;
    for (int i = 0; i < fetched->counts->total; ++i) {
      pids_stack *stack = fetched->stacks[i];
      ProcessFacts facts;
      facts.pid = PIDS_VAL(pid_item, s_int, stack, info_);
      facts.uid = PIDS_VAL(ruid_item, u_int, stack, info_);
      facts.start_ticks = PIDS_VAL(began_item, ull_int, stack, info_);
      facts.cpu_ticks = PIDS_VAL(ticks_item, ull_int, stack, info_);
      facts.cpu_ticks_with_children = PIDS_VAL(ticks_children_item, ull_int, stack, info_);
      facts.read_at = read_at;
      facts.rss_kib = PIDS_VAL(rss_item, ul_int, stack, info_);
      if (const char *name = PIDS_VAL(name_item, str, stack, info_))
        facts.command = name; // for now; the command line replaces it below
      if (char **lines = PIDS_VAL(cgroup_item, strv, stack, info_))
        for (; *lines && facts.cgroup.size() < max_cgroup_bytes; ++lines)
          facts.cgroup.append(*lines).push_back('\n');
      read_by_pid[facts.pid] = std::move(facts);
    }
  }

  for (std::size_t i = 0; i < open_pids.size(); ++i) {
    auto facts = read_by_pid.find(open_pids[i]);
    if (facts == read_by_pid.end())
      continue;
    std::optional<std::string> arguments = read_in(folders[i], "cmdline", max_command_bytes);
    std::optional<std::string> stat = read_in(folders[i], "stat", 4096);
    std::optional<std::uint64_t> started = stat ? start_ticks_in(*stat) : std::nullopt;
    if (!arguments || started != facts->second.start_ticks)
      continue; // gone since its folder was opened: what libproc2 read may be another's
    std::string command = joined(std::move(*arguments));
    // Kernel threads and zombies have no arguments: their name in brackets, as ps shows them.
    facts->second.command =
        command.empty() ? "[" + facts->second.command + "]" : std::move(command);
    found.push_back(std::move(facts->second));
  }
  return found;
}

} // namespace nvsmi
