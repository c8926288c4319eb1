// --cpu-budget: the monitor's whole CPU (the agent and every nvidia-smi it runs) held to a share
// of one core, judged over a window (a minute). Over it, one step is taken at a time along a
// ladder the sampler builds from what it runs (slower pmon, no pmon, slower dmon, no dmon, a
// slower process list, then a longer sample interval), each judged over a whole window of its
// own before the next; under it, the last step is taken back once what it saved, added to the
// cost now, would still leave room. What to step is the sampler's; when is this class's alone,
// with no I/O, so that it is tested with figures.
#pragma once

#include <chrono>
#include <optional>
#include <vector>

namespace nvsmi {

class CpuBudget {
public:
  using Clock = std::chrono::steady_clock;

  // `percent` of one core; `steps` on the ladder (0: nothing can be slowed, only said).
  CpuBudget(double percent, std::size_t steps, std::chrono::milliseconds window);

  // What observe() decided: `change` +1 takes the next step, -1 takes the last one back, 0 none.
  // `share_percent` is the cost over `window_seconds`, which the decision was made from.
  struct Judgement {
    int change = 0;
    double share_percent = 0;
    double window_seconds = 0;
    bool over_at_last_step = false; // over budget with every step taken: said once
  };

  // Starts (or starts again) a window at `cpu_seconds`, the monitor's whole CPU so far.
  void begin(Clock::time_point now, double cpu_seconds);
  // A reading of the monitor's whole CPU so far. Nullopt until a whole window has passed since
  // begin() or the last judgement; then a judgement, and a new window starts.
  std::optional<Judgement> observe(Clock::time_point now, double cpu_seconds);

  std::size_t steps_taken() const { return taken_; }
  double percent() const { return percent_; }
  std::chrono::milliseconds window() const { return window_; }

private:
  double percent_;
  std::size_t steps_;
  std::chrono::milliseconds window_;
  std::size_t taken_ = 0;
  std::optional<std::pair<Clock::time_point, double>> start_;
  // For each step taken: the cost in the window before it, and in the first whole window after
  // it (nullopt until that window is judged). What it saved is the difference.
  struct Taken {
    double before = 0;
    std::optional<double> after;
  };
  std::vector<Taken> history_;
  bool said_at_last_step_ = false;
};

} // namespace nvsmi
