#include "sampling/cpu_budget.hpp"

#include <algorithm>

namespace nvsmi {

namespace {
// A step is taken back only where the cost with it back would be at most this share of the
// budget: nearer the line, noise in one window would take it again in the next.
constexpr double come_back_below = 0.8;
} // namespace

CpuBudget::CpuBudget(double percent, std::size_t steps, std::chrono::milliseconds window)
    : percent_(percent), steps_(steps), window_(window) {}

void CpuBudget::begin(Clock::time_point now, double cpu_seconds) {
  start_.emplace(now, cpu_seconds);
}

std::optional<CpuBudget::Judgement> CpuBudget::observe(Clock::time_point now, double cpu_seconds) {
  if (!start_) {
    begin(now, cpu_seconds);
    return std::nullopt;
  }
  double seconds = std::chrono::duration<double>(now - start_->first).count();
  if (now - start_->first < window_ || seconds <= 0)
    return std::nullopt;
  // CPU counts only grow: a fall is a run whose CPU was read in /proc and then left the count
  // (reaped without wait4's figure, by another waiter). That window is not judged, so that a cost
  // it cannot know is not taken for a step's saving; the next starts here.
  if (cpu_seconds < start_->second) {
    start_.emplace(now, cpu_seconds);
    return std::nullopt;
  }
  Judgement judgement;
  judgement.window_seconds = seconds;
  judgement.share_percent = (cpu_seconds - start_->second) / seconds * 100;
  start_.emplace(now, cpu_seconds);
  double share = judgement.share_percent;
  if (taken_ > 0 && !history_[taken_ - 1].after)
    history_[taken_ - 1].after = share;
  if (share > percent_) {
    if (taken_ < steps_) {
      history_.resize(taken_);
      history_.push_back({share, std::nullopt});
      ++taken_;
      judgement.change = +1;
      said_at_last_step_ = false;
    } else if (!said_at_last_step_) {
      judgement.over_at_last_step = true;
      said_at_last_step_ = true;
    }
    return judgement;
  }
  said_at_last_step_ = false;
  if (taken_ == 0)
    return judgement;
  const Taken &last = history_[taken_ - 1];
  double saved = std::max(0.0, last.before - last.after.value_or(share));
  if (share + saved <= come_back_below * percent_) {
    --taken_;
    judgement.change = -1;
  }
  return judgement;
}

} // namespace nvsmi
