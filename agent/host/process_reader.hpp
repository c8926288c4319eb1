// Each GPU process as this machine's /proc has it now, read with libproc2 (the library of ps and
// top) and checked to be one and the same process from the first read to the last.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

struct pids_info;

namespace nvsmi {

struct Procps;

// The command line is cut at this many bytes: a process can pass megabytes of arguments, and a
// sample holds one command line per GPU process.
constexpr std::size_t max_command_bytes = 4096;
// /proc/PID/cgroup is a line per hierarchy; a dozen on cgroup v1.
constexpr std::size_t max_cgroup_bytes = 16 * 1024;

struct ProcessFacts {
  int pid = 0;
  unsigned uid = 0;              // real uid
  std::string command;           // arguments joined by spaces, at most max_command_bytes, raw bytes
  std::uint64_t start_ticks = 0; // clock ticks after boot
  std::uint64_t cpu_ticks = 0;   // user + system
  // ... and of the children it waited for: what running it has cost (an nvidia-smi stream's)
  std::uint64_t cpu_ticks_with_children = 0;
  // The middle of the read that fetched the counters: they were taken somewhere inside it.
  std::chrono::steady_clock::time_point read_at;
  std::uint64_t rss_kib = 0;
  std::string cgroup; // the text of /proc/PID/cgroup
};

class ProcessReader {
public:
  ProcessReader();
  ~ProcessReader();
  ProcessReader(const ProcessReader &) = delete;
  ProcessReader &operator=(const ProcessReader &) = delete;

  // The facts of each pid of `pids` that is visible here and was the same process through the
  // whole read; nothing for the others (no such pid here, exited, or replaced meanwhile).
  std::vector<ProcessFacts> read(const std::vector<int> &pids);
  // The unit of start_ticks and cpu_ticks.
  long ticks_per_second() const { return ticks_per_second_; }

private:
  const Procps *library_;     // nullptr where libproc2 cannot be loaded
  pids_info *info_ = nullptr; // nullptr where libproc2 could not start: every pid unknown
  long ticks_per_second_ = 0; // 0: unknown, without libproc2
};

} // namespace nvsmi
