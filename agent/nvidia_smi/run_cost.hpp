// What the runs of one nvidia-smi stream (the GPU query, pmon, ...) have cost so far: how many
// started and the CPU of those that ended, exact from wait4. Shared by every stream object and
// bounded run of that stream (pmon stopped and started again is one stream), and counted from
// whichever thread reaps a run (a bounded one reaps on its caller's).
#pragma once

#include <atomic>
#include <cstdint>

namespace nvsmi {

class RunCost {
public:
  void started() { starts_.fetch_add(1, std::memory_order_relaxed); }
  void ended(double cpu_seconds) {
    ended_cpu_us_.fetch_add(static_cast<std::uint64_t>(cpu_seconds * 1e6 + 0.5),
                            std::memory_order_relaxed);
  }
  std::uint64_t starts() const { return starts_.load(std::memory_order_relaxed); }
  // Of the runs reaped so far; a running one is read from /proc by whoever asks.
  double ended_cpu_seconds() const {
    return static_cast<double>(ended_cpu_us_.load(std::memory_order_relaxed)) / 1e6;
  }

private:
  std::atomic<std::uint64_t> starts_{0}, ended_cpu_us_{0};
};

} // namespace nvsmi
