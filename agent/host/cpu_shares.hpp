// CPU shares between two samples, from tick counters: pure arithmetic on what the readers
// found, so that the rules (first sample, reused pid, counters that go back) are tested alone.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

namespace nvsmi {

// One process as read now: its pid, when it started (ticks after boot: with the pid, what tells
// this process from a later one given the same pid) and the CPU time it has used (ticks).
struct ProcessTicks {
  int pid = 0;
  std::uint64_t start_ticks = 0;
  std::uint64_t cpu_ticks = 0;
  // When the counter was read. Per process, not per sample: on a loaded machine the reader can be
  // held up between one read and the next, and a share over the sample's instant would count those
  // seconds of the process's work against a shorter time (over 1000 % for one thread was seen).
  std::chrono::steady_clock::time_point at;
};

// Each process's share of one core (100 = one core busy, more for several threads) since the
// previous update(). Remembers only the processes of the latest update(), so it holds no more
// than one sample's processes.
class ProcessCpuShares {
public:
  using Clock = std::chrono::steady_clock;
  explicit ProcessCpuShares(long ticks_per_second) : ticks_per_second_(ticks_per_second) {}

  // One share per entry of `now_read`, in its order: nullopt for a pid not in the previous
  // update, or in it with another start (the pid was reused: another process), or when the
  // clock or the counter did not move forward. Under ten ticks' time (0.1 s) after the previous
  // reading there is no share either, and that older reading stays the baseline for the next.
  std::vector<std::optional<double>> update(const std::vector<ProcessTicks> &now_read);

private:
  struct Previous {
    std::uint64_t start_ticks, cpu_ticks;
    Clock::time_point at;
  };
  long ticks_per_second_;
  std::unordered_map<int, Previous> previous_;
};

// /proc/stat's counters for all CPUs together, in ticks.
struct CpuTicks {
  std::uint64_t busy = 0;  // all but idle and iowait
  std::uint64_t total = 0; // user nice system idle iowait irq softirq steal
};

// The busy share of all CPUs (0-100) since the previous update(); nullopt on the first, and
// when the counters went back (a CPU taken offline leaves the sum) or did not move.
class HostCpuShare {
public:
  std::optional<double> update(std::optional<CpuTicks> now_read);

private:
  std::optional<CpuTicks> previous_;
};

} // namespace nvsmi
