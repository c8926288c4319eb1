#include "nvsmi/usage_counters.hpp"

#include "nvsmi/gpu_state.hpp"
#include "nvsmi/thresholds.hpp"

#include <algorithm>
#include <cmath>

namespace nvsmi {
namespace {

// A share 0-1 from a percentage reading; nullopt where unknown or outside 0-100 (an odd driver or
// a hostile nvidia-smi): a busy share over 1 would count more busy seconds than seconds.
std::optional<double> share(const Reading &percent) {
  if (!percent || *percent < 0 || *percent > 100)
    return std::nullopt;
  return static_cast<double>(*percent) / 100;
}

// No board draws a megawatt: a larger figure is a garbled or hostile one, and summed it could
// make the energy counter infinite (JSON and Prometheus have no such number).
constexpr double most_watts = 1e6;

std::optional<double> watts(const RealReading &power) {
  if (!power || !std::isfinite(*power) || *power < 0 || *power > most_watts)
    return std::nullopt;
  return power;
}

// One reading's pair: started at zero by the first sample that knows it; then each sample that
// knows it adds its stretch, when it has one (`stretch` seconds; none after a gap).
void count(std::optional<double> &seconds, std::optional<double> &total,
           const std::optional<double> &value, const std::optional<double> &stretch) {
  if (!value)
    return;
  if (!seconds) {
    seconds = 0;
    total = 0;
    return;
  }
  if (!stretch)
    return;
  *seconds += *stretch;
  *total += *value * *stretch;
}

} // namespace

void UsageCounters::add(Snapshot &snapshot, double now_seconds, double interval_seconds) {
  ++calls_;
  for (Gpu &gpu : snapshot.gpus) {
    Counted &counted = gpus_[gpu_identity(gpu)];
    std::optional<double> stretch;
    if (counted.last_seconds) {
      double seconds = now_seconds - *counted.last_seconds;
      if (seconds > 0 && seconds <= gpu_thresholds::sample_gap_intervals * interval_seconds)
        stretch = seconds;
    }
    counted.last_seconds = now_seconds;
    counted.seen = calls_;
    GpuCounters &c = counted.counters;
    if (!gpu.lost_reason) {
      count(c.sampled_seconds, c.busy_seconds, share(gpu.utilization_gpu_percent), stretch);
      std::optional<double> sm = share(gpu.sm_active_percent),
                            tensor = share(gpu.tensor_active_percent),
                            dram = share(gpu.dram_active_percent);
      if (sm && tensor && dram) {
        std::optional<double> seconds = c.gpm_sampled_seconds;
        count(seconds, c.sm_active_seconds, sm, stretch);
        seconds = c.gpm_sampled_seconds;
        count(seconds, c.tensor_active_seconds, tensor, stretch);
        count(c.gpm_sampled_seconds, c.dram_active_seconds, dram, stretch);
      }
      count(c.power_sampled_seconds, c.energy_joules, watts(gpu.power_draw_w), stretch);
    }
    if (c.sampled_seconds || c.gpm_sampled_seconds || c.power_sampled_seconds)
      gpu.counters = c;
  }
  while (gpus_.size() > max_gpus)
    gpus_.erase(std::min_element(gpus_.begin(), gpus_.end(), [](const auto &a, const auto &b) {
      return a.second.seen < b.second.seen;
    }));
}

} // namespace nvsmi
