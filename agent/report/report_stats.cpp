#include "report/report_stats.hpp"
#include "report/report_jobs.hpp"

#include "nvsmi/gpu_fields.hpp"

#include <algorithm>
#include <cmath>

namespace nvsmi {
namespace {

// The lowest value with at least `fraction` of the time at or below it.
std::optional<int> quantile(const std::array<double, 101> &seconds, double total, double fraction) {
  if (total <= 0)
    return std::nullopt;
  double wanted = fraction * total * (1 - 1e-12), sum = 0;
  for (int value = 0; value <= 100; ++value) {
    sum += seconds[static_cast<std::size_t>(value)];
    if (sum >= wanted && seconds[static_cast<std::size_t>(value)] > 0)
      return value;
  }
  return 100;
}

void keep_max(Reading &max, const Reading &value) {
  if (value && (!max || *value > *max))
    max = value;
}

} // namespace

std::optional<double> TimeShare::percent() const {
  if (known_seconds <= 0)
    return std::nullopt;
  return 100.0 * seconds / known_seconds;
}

GpuStats::GpuStats(std::string key, std::optional<double> interval, UserLedger &ledger,
                   BatchJobLedger &jobs, std::size_t gpu_slot)
    : ledger_(ledger), jobs_(jobs), gpu_slot_(gpu_slot), given_interval_(interval) {
  s_.key = std::move(key);
  pending_.reserve(report_rules::interval_samples);
}

bool GpuStats::add(const Sample &sample, const Gpu &identity) {
  if (last_time_ && sample.time <= *last_time_)
    return false;
  last_time_ = sample.time;
  if (s_.samples == 0 && pending_.empty())
    s_.index = identity.index;
  if (!s_.uuid)
    s_.uuid = identity.uuid;
  if (!s_.name)
    s_.name = identity.name;
  for (const GpuField &field : gpu_fields()) {
    if (!field.settled_health())
      continue;
    if (field.kind == FieldKind::integer) {
      if (const Reading &value = identity.health.*field.health_integer)
        s_.latest_fields.*field.health_integer = value;
    } else if (const Text &value = identity.health.*field.health_text) {
      s_.latest_fields.*field.health_text = value;
    }
  }
  if (settled_) {
    take(sample);
    return true;
  }
  pending_.push_back(sample);
  if (pending_.size() >= report_rules::interval_samples)
    settle_interval();
  return true;
}

// The interval is the median spacing of the first samples: robust to a gap or two among them.
void GpuStats::settle_interval() {
  settled_ = true;
  s_.interval = given_interval_;
  if (!s_.interval && pending_.size() >= 2) {
    std::vector<double> spacing;
    for (std::size_t i = 1; i < pending_.size(); ++i)
      spacing.push_back(pending_[i].time - pending_[i - 1].time);
    std::nth_element(spacing.begin(), spacing.begin() + spacing.size() / 2, spacing.end());
    s_.interval = spacing[spacing.size() / 2];
  }
  for (const Sample &sample : pending_)
    take(sample);
  pending_.clear();
  pending_.shrink_to_fit();
}

void GpuStats::take(const Sample &x) {
  using namespace report_rules;
  // Counters a log cannot hold are not believed: busy beyond sampled, or more seconds than a
  // million years (a hand-edited or garbled line), which summed could end infinite.
  if (x.counted_busy_seconds && x.counted_sampled_seconds &&
      *x.counted_sampled_seconds <= report_rules::most_counted_seconds &&
      *x.counted_busy_seconds <= *x.counted_sampled_seconds * (1 + 1e-9) + 1e-3) {
    double busy = *x.counted_busy_seconds, sampled = *x.counted_sampled_seconds;
    if (last_counted_) {
      // A counter lower than before is a new agent's, counted from zero at its start.
      bool reset = busy < last_counted_->first || sampled < last_counted_->second;
      counted_busy_ += reset ? busy : busy - last_counted_->first;
      counted_sampled_ += reset ? sampled : sampled - last_counted_->second;
    }
    last_counted_ = {busy, sampled};
  }
  if (x.allocated_idle && x.allocated_idle->held_s &&
      (!s_.allocated_idle || *x.allocated_idle->held_s > s_.allocated_idle->held_s.value_or(0)))
    s_.allocated_idle = x.allocated_idle;
  bool after_gap = false;
  if (!started_) {
    started_ = true;
    s_.first = x.stamp;
    s_.series.start(x.time, s_.interval.value_or(1));
  } else {
    double d = x.time - previous_time_;
    if (!s_.interval || d > gap_intervals * *s_.interval) {
      after_gap = true;
      ++s_.gaps;
      s_.gap_seconds += d;
      s_.longest_gap_seconds = std::max(s_.longest_gap_seconds, d);
    } else {
      // nvidia-smi's utilization and power are averages over the time since its last sample, so
      // this sample stands for the stretch before it.
      s_.covered_seconds += d;
      GpuStretch stretch{gpu_slot_, d, std::nullopt, std::nullopt};
      if (x.utilization) {
        int u = static_cast<int>(*x.utilization);
        utilization_seconds_[static_cast<std::size_t>(u)] += d;
        utilization_sum_ += u * d;
        s_.utilization_known_seconds += d;
        s_.idle.known_seconds += d;
        stretch.idle = u < gpu_thresholds::idle_below_percent;
        if (*stretch.idle)
          s_.idle.seconds += d;
        if (x.memory_used) {
          s_.starved.known_seconds += d;
          s_.idle_held.known_seconds += d;
          bool held = *x.memory_used >= gpu_thresholds::memory_held_mib;
          if (held && *stretch.idle)
            take_idle_held(x, d);
          else if (held)
            s_.held_working_seconds += d;
          if (held && u < gpu_thresholds::starved_below_percent) {
            s_.starved.seconds += d;
            starved_memory_sum_ += static_cast<double>(*x.memory_used) * d;
            starved_disk_read_.add(x.host_disk_read, d);
            starved_network_receive_.add(x.host_network_receive, d);
            if (x.host_cpu) {
              s_.starved_host_known_seconds += d;
              starved_host_cpu_sum_ += *x.host_cpu * d;
              if (*x.host_cpu >= host_busy_percent) {
                s_.starved_host_busy_seconds += d;
                take_busy_host(x, d);
              }
              if (*x.host_cpu < host_idle_below_percent)
                s_.starved_host_idle_seconds += d;
            }
          }
        }
      }
      activity_.add(x, d);
      if (x.power) {
        stretch.joules = *x.power * d;
        power_joules_ += *stretch.joules;
        s_.power_known_seconds += d;
      }
      ledger_.add(x.users, stretch);
      if (x.allocation)
        jobs_.add({gpu_slot_, s_.index, d, x.stamp, &*x.allocation, x.utilization, x.memory_used,
                   x.memory_total, stretch.joules, x.compute_process, &x, std::nullopt,
                   std::nullopt});
      // An instance has no utilization, energy or activity of its own (the GPU's are all of
      // its instances'): those stay unknown for its job.
      for (const InstanceHold &held : x.instances)
        jobs_.add({gpu_slot_, s_.index, d, x.stamp, &held.allocation, std::nullopt,
                   held.memory_used, held.memory_total, std::nullopt, held.compute_process, nullptr,
                   held.mig_index, held.profile});
      if (x.temperature) {
        temperature_sum_ += static_cast<double>(*x.temperature) * d;
        temperature_known_seconds_ += d;
      }
      bool capped = false, slow = false, known = false;
      if (x.power && x.power_limit && *x.power_limit > 0) {
        known = true;
        capped = *x.power >= gpu_thresholds::power_limit_fraction * *x.power_limit;
        s_.power_capped.known_seconds += d;
        s_.power_capped.seconds += capped ? d : 0;
      }
      if (x.pstate && x.utilization) {
        known = true;
        slow = *x.pstate > slow_pstate_above &&
               static_cast<double>(*x.utilization) >= gpu_thresholds::idle_below_percent;
        s_.slow_pstate.known_seconds += d;
        s_.slow_pstate.seconds += slow ? d : 0;
      }
      if (known) {
        s_.throttled.known_seconds += d;
        s_.throttled.seconds += capped || slow ? d : 0;
      }
    }
  }
  previous_time_ = x.time;
  s_.last = x.stamp;
  ++s_.samples;

  keep_max(s_.utilization_max, x.utilization);
  if (x.memory_used && (!s_.memory_peak_mib || *x.memory_used > *s_.memory_peak_mib)) {
    s_.memory_peak_mib = x.memory_used;
    if (x.memory_total)
      s_.memory_total_mib = x.memory_total;
  } else if (x.memory_total && !s_.memory_total_mib) {
    s_.memory_total_mib = x.memory_total;
  }
  if (x.power && (!s_.power_max_w || *x.power > *s_.power_max_w))
    s_.power_max_w = x.power;
  keep_max(s_.temperature_max_c, x.temperature);
  if (x.power_limit && (!s_.power_limit_max_w || *x.power_limit > *s_.power_limit_max_w))
    s_.power_limit_max_w = x.power_limit;

  auto real = [](const Reading &r) -> std::optional<double> {
    return r ? std::optional<double>(static_cast<double>(*r)) : std::nullopt;
  };
  s_.series.add(
      x.time,
      {real(x.utilization), real(x.memory_used), x.power, real(x.temperature), x.power_limit},
      after_gap);
}

// Whose processes kept the host's CPUs busy while the GPU starved: its own, the other GPUs' (by
// user, in memory bounded by other_users_kept), or processes on no GPU (the rest).
void GpuStats::take_busy_host(const Sample &x, double seconds) {
  if (!x.host_busy_cores || !x.own_cpu_cores)
    return;
  s_.starved_busy_attributed_seconds += seconds;
  starved_busy_cores_.add(x.host_busy_cores, seconds);
  starved_own_cores_.add(x.own_cpu_cores, seconds);
  starved_other_gpus_cores_.add(x.other_gpus_cpu_cores, seconds);
  constexpr std::size_t other_users_kept = 16;
  for (const auto &[user, cores] : x.other_gpus_cpu_by_user) {
    auto found = starved_other_users_.find(user);
    if (found != starved_other_users_.end())
      found->second += cores * seconds;
    else if (starved_other_users_.size() < other_users_kept)
      starved_other_users_.emplace(user, cores * seconds);
  }
}

// Who holds it is counted per user, in memory bounded by report_max_users: users past that many
// are only said to be there.
void GpuStats::take_idle_held(const Sample &x, double seconds) {
  s_.idle_held.seconds += seconds;
  idle_held_memory_sum_ += static_cast<double>(*x.memory_used) * seconds;
  if (!x.users) {
    s_.idle_held_unlisted_seconds += seconds;
    return;
  }
  for (const GpuUser &user : *x.users) {
    auto found = idle_holder_seconds_.find(user.user);
    if (found != idle_holder_seconds_.end())
      found->second += seconds;
    else if (idle_holder_seconds_.size() < report_max_users)
      idle_holder_seconds_.emplace(user.user, seconds);
    else
      s_.idle_holders_left_out = true;
  }
}

std::optional<bool> counted_agrees(const GpuSummary &gpu) {
  if (!gpu.counted_utilization_mean || !gpu.utilization_mean)
    return std::nullopt;
  return std::abs(*gpu.counted_utilization_mean - *gpu.utilization_mean) <=
         report_rules::counted_agrees_within_points;
}

GpuSummary GpuStats::finish() {
  if (!settled_)
    settle_interval();
  GpuSummary out = s_;
  double known = s_.utilization_known_seconds;
  if (known > 0) {
    out.utilization_mean = utilization_sum_ / known;
    out.utilization_median = quantile(utilization_seconds_, known, 0.5);
    out.utilization_p95 = quantile(utilization_seconds_, known, 0.95);
  }
  if (counted_sampled_ > 0) {
    out.counted_utilization_mean = counted_busy_ / counted_sampled_ * 100;
    out.counted_seconds = counted_sampled_;
  }
  if (s_.starved.seconds > 0)
    out.starved_memory_mean_mib = starved_memory_sum_ / s_.starved.seconds;
  if (s_.idle_held.seconds > 0)
    out.idle_held_memory_mean_mib = idle_held_memory_sum_ / s_.idle_held.seconds;
  out.idle_holders.assign(idle_holder_seconds_.begin(), idle_holder_seconds_.end());
  std::stable_sort(out.idle_holders.begin(), out.idle_holders.end(),
                   [](const auto &a, const auto &b) { return a.second > b.second; });
  if (s_.starved_host_known_seconds > 0)
    out.starved_host_cpu_mean = starved_host_cpu_sum_ / s_.starved_host_known_seconds;
  out.starved_busy_cores_mean = starved_busy_cores_.mean();
  out.starved_own_cores_mean = starved_own_cores_.mean();
  out.starved_other_gpus_cores_mean = starved_other_gpus_cores_.mean();
  auto most = std::max_element(starved_other_users_.begin(), starved_other_users_.end(),
                               [](const auto &a, const auto &b) { return a.second < b.second; });
  if (most != starved_other_users_.end())
    out.starved_other_gpus_user = most->first;
  out.starved_disk_read_mean = starved_disk_read_.mean();
  out.starved_network_receive_mean = starved_network_receive_.mean();
  if (s_.power_known_seconds > 0) {
    out.power_mean_w = power_joules_ / s_.power_known_seconds;
    out.energy_wh = power_joules_ / 3600;
  }
  if (temperature_known_seconds_ > 0)
    out.temperature_mean_c = temperature_sum_ / temperature_known_seconds_;
  out.activity = activity_.figures();
  return out;
}

void ActivityMeans::add(const Sample &x, double d) {
  // The units' activity while kernels ran: utilization counts any kernel on any SM as busy, so
  // the idle time would only dilute what the SMs did while there was work.
  if (!x.sm_active || !x.utilization ||
      static_cast<double>(*x.utilization) < gpu_thresholds::idle_below_percent)
    return;
  known_seconds_ += d;
  utilization_.add(x.utilization, d);
  sm_active_.add(x.sm_active, d);
  tensor_active_.add(x.tensor_active, d);
  dram_active_.add(x.dram_active, d);
  fp32_active_.add(x.fp32_active, d);
  pcie_rx_.add(x.pcie_rx_bytes_per_second, d);
  if (x.nvlink_rx_bytes_per_second && x.nvlink_tx_bytes_per_second) {
    nvlink_sm_active_.add(x.sm_active, d);
    nvlink_traffic_.add(Reading(*x.nvlink_rx_bytes_per_second + *x.nvlink_tx_bytes_per_second), d);
    if (x.pcie_rx_bytes_per_second && x.pcie_tx_bytes_per_second)
      nvlink_pcie_traffic_.add(Reading(*x.pcie_rx_bytes_per_second + *x.pcie_tx_bytes_per_second),
                               d);
    if (x.nvlink_bandwidth_bytes_per_second) {
      nvlink_rx_of_known_capacity_.add(x.nvlink_rx_bytes_per_second, d);
      nvlink_tx_of_known_capacity_.add(x.nvlink_tx_bytes_per_second, d);
      nvlink_capacity_.add(x.nvlink_bandwidth_bytes_per_second, d);
    }
  }
}

ActivityFigures ActivityMeans::figures() const {
  // Each direction has the links' whole capacity: the busier one is what fills them.
  std::optional<double> direction = nvlink_rx_of_known_capacity_.mean();
  if (std::optional<double> tx = nvlink_tx_of_known_capacity_.mean(); tx && direction)
    direction = std::max(*direction, *tx);
  return {known_seconds_,
          utilization_.mean(),
          sm_active_.mean(),
          tensor_active_.mean(),
          dram_active_.mean(),
          fp32_active_.mean(),
          pcie_rx_.mean(),
          nvlink_sm_active_.mean(),
          nvlink_traffic_.mean(),
          nvlink_pcie_traffic_.mean(),
          direction,
          nvlink_capacity_.mean()};
}

std::string latest_fields_text(const GpuHealth &latest) {
  std::string text;
  for (const GpuField &field : gpu_fields()) {
    std::string value;
    if (!field.settled_health())
      continue;
    if (field.kind == FieldKind::integer && latest.*field.health_integer)
      value = std::to_string(*(latest.*field.health_integer));
    else if (field.kind == FieldKind::text && latest.*field.health_text)
      value = *(latest.*field.health_text);
    else
      continue;
    text += (text.empty() ? "" : ", ") + std::string(field.json_key) + ' ' + value;
  }
  return text;
}

} // namespace nvsmi
