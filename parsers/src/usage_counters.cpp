#include "nvsmi/usage_counters.hpp"

#include "nvsmi/gpu_state.hpp"
#include "nvsmi/thresholds.hpp"

#include <algorithm>
#include <cmath>
#include <initializer_list>

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

// What one known reading adds: its total, and the share (or watts) it was over the stretch.
struct Added {
  std::optional<double> &total;
  double value;
};

// A reading's seconds and the totals that share them: started at zero by the first sample that
// knows the reading; then each sample that knows it adds its stretch, when it has one (`stretch`
// seconds; none after a gap).
void count(std::optional<double> &seconds, std::initializer_list<Added> totals,
           const std::optional<double> &stretch) {
  if (!seconds) {
    seconds = 0;
    for (const Added &added : totals)
      added.total = 0;
    return;
  }
  if (!stretch)
    return;
  *seconds += *stretch;
  for (const Added &added : totals)
    *added.total += added.value * *stretch;
}

} // namespace

const std::vector<CounterField> &counter_fields() {
  static const std::vector<CounterField> fields = {
      {&GpuCounters::sampled_seconds, "sampled_seconds", "nvsmi_gpu_sampled_seconds_total",
       "Seconds covered by samples whose utilization.gpu was known (the divisor of "
       "nvsmi_gpu_busy_seconds_total's rate)."},
      {&GpuCounters::busy_seconds, "busy_seconds", "nvsmi_gpu_busy_seconds_total",
       "Seconds the GPU was busy: utilization.gpu (0-1) times the seconds each sample stands "
       "for, over every sample the agent read."},
      {&GpuCounters::gpm_sampled_seconds, "gpm_sampled_seconds",
       "nvsmi_gpu_gpm_sampled_seconds_total",
       "Seconds covered by samples whose SM, tensor and DRAM activity (dmon's GPM) were known."},
      {&GpuCounters::sm_active_seconds, "sm_active_seconds", "nvsmi_gpu_sm_active_seconds_total",
       "SM activity (0-1, a warp resident) times the seconds each sample stands for."},
      {&GpuCounters::tensor_active_seconds, "tensor_active_seconds",
       "nvsmi_gpu_tensor_active_seconds_total",
       "Tensor pipe activity (0-1) times the seconds each sample stands for."},
      {&GpuCounters::dram_active_seconds, "dram_active_seconds",
       "nvsmi_gpu_dram_active_seconds_total",
       "DRAM bandwidth in use (0-1) times the seconds each sample stands for."},
      {&GpuCounters::power_sampled_seconds, "power_sampled_seconds",
       "nvsmi_gpu_power_sampled_seconds_total",
       "Seconds covered by samples whose power draw was known."},
      {&GpuCounters::energy_joules, "energy_joules", "nvsmi_gpu_energy_joules_total",
       "Energy in joules: the power draw times the seconds each sample stands for "
       "(nvsmi_gpu_energy_source_info says so)."},
  };
  return fields;
}

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
      if (std::optional<double> busy = share(gpu.utilization_gpu_percent))
        count(c.sampled_seconds, {{c.busy_seconds, *busy}}, stretch);
      std::optional<double> sm = share(gpu.sm_active_percent),
                            tensor = share(gpu.tensor_active_percent),
                            dram = share(gpu.dram_active_percent);
      if (sm && tensor && dram)
        count(c.gpm_sampled_seconds,
              {{c.sm_active_seconds, *sm},
               {c.tensor_active_seconds, *tensor},
               {c.dram_active_seconds, *dram}},
              stretch);
      if (std::optional<double> power = watts(gpu.power_draw_w))
        count(c.power_sampled_seconds, {{c.energy_joules, *power}}, stretch);
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
