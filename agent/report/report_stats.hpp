// The statistics of one GPU's log, gathered in one pass in memory that does not grow with the
// log: sums and a 101-bin histogram weighted by time, peaks, and a bounded series for drawing.
#pragma once

#include "report/report_series.hpp"
#include "report/report_severity.hpp"
#include "report/report_users.hpp"

#include "nvsmi/snapshot.hpp"
#include "nvsmi/thresholds.hpp"

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace nvsmi {

// One MIG instance of the GPU that a batch job held in a sample: its own record, memory and
// whether a compute process was on it (nullopt where that cannot be told: instance_processes).
struct InstanceHold {
  std::int64_t mig_index = 0;
  Text profile;
  Allocation allocation;
  Reading memory_used, memory_total;
  std::optional<bool> compute_process;
};

// One usable row, as the statistics need it.
struct Sample {
  double time = 0; // seconds: UTC where the log gives an offset, else the log's own clock
  Timestamp stamp;
  Reading utilization; // 0..100
  Reading memory_used, memory_total, temperature;
  RealReading power, power_limit;
  std::optional<int> pstate; // 0 for P0 ... 15 for P15
  RealReading host_cpu;      // the host's CPUs busy, 0..100
  // Whose processes kept the host's CPUs busy, in cores (a core fully busy is 1): all of them
  // (host_cpu x the CPU count), this GPU's own processes, and the processes of the sample's other
  // GPUs (each pid once), and those by user. nullopt where the log does not say: a CSV log, a
  // process whose CPU share is unknown, an unknown CPU count.
  RealReading host_busy_cores, own_cpu_cores, other_gpus_cpu_cores;
  std::vector<std::pair<Text, double>> other_gpus_cpu_by_user;
  RealReading host_disk_read, host_network_receive; // bytes a second
  std::optional<GpuUsers> users;                    // nullopt: no process list
  // The GPU's allocation where the sample found it allocated but idle (nvsmi/gpu_state.hpp).
  std::optional<Allocation> allocated_idle;
  // What its units did and its PCIe and NVLink traffic (dmon): nullopt where the log does not
  // have them.
  Reading sm_active, tensor_active, dram_active, fp32_active, pcie_rx_bytes_per_second,
      pcie_tx_bytes_per_second, nvlink_rx_bytes_per_second, nvlink_tx_bytes_per_second;
  // What its active NVLink links carry at most, each way (nvidia-smi nvlink -s, read at start).
  Reading nvlink_bandwidth_bytes_per_second;
  std::optional<Allocation> allocation; // the job that holds it, where one does
  std::optional<bool> compute_process;  // held_for_compute; nullopt: no process list
  std::vector<InstanceHold> instances;  // its MIG instances that jobs hold
  // The agent's busy and sampled seconds so far (nvsmi/usage_counters.hpp); nullopt where the log
  // line has none (a CSV log, a one-shot snapshot, an earlier agent's log).
  std::optional<double> counted_busy_seconds, counted_sampled_seconds;
};

// The thresholds behind the shares and the findings (README "report"); those every view shares
// (idle, starved, held, power limit, hot) are nvsmi/thresholds.hpp's.
namespace report_rules {
constexpr double gap_intervals = gpu_thresholds::sample_gap_intervals; // longer: a gap
constexpr int slow_pstate_above = 2;                                   // P3..P15 while busy
constexpr std::size_t interval_samples = 33;   // the interval is the median of their spacing
constexpr double host_busy_percent = 90;       // the host's CPUs busy enough to starve a GPU
constexpr double host_idle_below_percent = 50; // ...or mostly idle: the wait is elsewhere
// The agent's counters and the logged samples agree on the mean utilization within this many
// percentage points; more apart, the log misses samples the agent read.
constexpr double counted_agrees_within_points = 1;
constexpr double most_counted_seconds = 3.2e13; // a million years: more is no agent's count
} // namespace report_rules

// A mean weighted by time, over the seconds its reading was known: the report's one way of
// averaging a reading (each sample stands for the time since the one before).
struct TimeMean {
  double sum = 0, seconds = 0;
  void add(const RealReading &value, double d) {
    if (value) {
      sum += *value * d;
      seconds += d;
    }
  }
  void add(const Reading &value, double d) {
    add(value ? RealReading(static_cast<double>(*value)) : std::nullopt, d);
  }
  std::optional<double> mean() const {
    return seconds > 0 ? std::optional<double>(sum / seconds) : std::nullopt;
  }
};

// What a GPU's units did while kernels ran (dmon's GPM figures), over the time it was not idle and
// its SM activity was known: for how long, and the means over that time of utilization, each
// unit's activity and the PCIe receive rate (nullopt: never known). What the activity findings
// judge, for a GPU and for a job's GPUs together.
struct ActivityFigures {
  double known_seconds = 0;
  std::optional<double> utilization_mean, sm_active_mean, tensor_active_mean, dram_active_mean,
      fp32_active_mean, pcie_rx_mean_bytes_per_second;
  // Of that time, where NVLink's receive and transmit were both known: the mean of SM activity,
  // of NVLink's traffic (receive plus transmit) and of PCIe's (where both of its are known too):
  // what the NVLink finding of a job across GPUs weighs (nullopt: never known).
  std::optional<double> nvlink_sm_active_mean, nvlink_traffic_mean_bytes_per_second,
      nvlink_pcie_traffic_mean_bytes_per_second;
  // Of that time, where the links' capacity was known too: the larger of the receive and transmit
  // means, and the capacity's mean (one direction's): what the NVLink saturated finding weighs.
  std::optional<double> nvlink_direction_mean_bytes_per_second,
      nvlink_capacity_mean_bytes_per_second;
};

class ActivityMeans {
public:
  // `x` stands for `d` seconds; it counts where it was not idle and its SM activity is known.
  void add(const Sample &x, double d);
  ActivityFigures figures() const;

private:
  double known_seconds_ = 0;
  TimeMean utilization_, sm_active_, tensor_active_, dram_active_, fp32_active_, pcie_rx_;
  TimeMean nvlink_sm_active_, nvlink_traffic_, nvlink_pcie_traffic_;
  TimeMean nvlink_rx_of_known_capacity_, nvlink_tx_of_known_capacity_, nvlink_capacity_;
};

// The first activity rule that explains the figures (small kernels, input over PCIe, memory-bound,
// FP32 math: README "report"), with the figures it rests on; nullopt where none applies or the
// figures are unknown (report_findings.cpp).
std::optional<Finding> activity_finding(const ActivityFigures &figures);

// Seconds spent in some state, out of the seconds where that state could be told.
struct TimeShare {
  double seconds = 0, known_seconds = 0;
  std::optional<double> percent() const;
};

struct GpuSummary {
  std::string key; // the uuid, else the PCI bus id, else "index N"
  int index = 0;
  Text uuid, name;

  std::int64_t samples = 0;
  Timestamp first, last;
  std::optional<double> interval; // seconds between samples, inferred or given
  double covered_seconds = 0;     // between samples, gaps excluded
  std::int64_t gaps = 0;
  double gap_seconds = 0, longest_gap_seconds = 0;

  std::optional<double> utilization_mean;
  std::optional<int> utilization_median, utilization_p95;
  Reading utilization_max;
  double utilization_known_seconds = 0;
  // The same mean from the agent's own counters (every sample it read, not only those logged):
  // their increase over the log, a counter that went back (a new agent) counted from zero; and
  // the seconds it covers. nullopt where the log has no counters. Beside utilization_mean, it says
  // whether the log holds every sample: report_findings.cpp's check.
  std::optional<double> counted_utilization_mean;
  double counted_seconds = 0;
  // starved: held (gpu_thresholds::memory_held_mib or more used: a job is there) and waiting
  // (utilization under gpu_thresholds::starved_below_percent); idle_held: held and idle (under
  // gpu_thresholds::idle_below_percent). Both known where utilization and memory are.
  TimeShare idle, starved, idle_held;
  std::optional<double> starved_memory_mean_mib;   // memory held while starved
  std::optional<double> idle_held_memory_mean_mib; // memory held while idle
  double held_working_seconds = 0;                 // held and not idle: the job worked
  // Who held it while it was idle, most seconds first (a user the log does not name: nullopt),
  // and the idle-held seconds whose sample had no process list (who is not in the log).
  std::vector<std::pair<Text, double>> idle_holders;
  bool idle_holders_left_out = false; // more users than report_max_users held it
  double idle_held_unlisted_seconds = 0;
  // Of the starved time: the seconds with a host CPU reading, with the host's CPUs at least 90 %
  // busy, and under 50 % busy; and their mean busy percentage (nullopt without readings).
  double starved_host_known_seconds = 0, starved_host_busy_seconds = 0,
         starved_host_idle_seconds = 0;
  std::optional<double> starved_host_cpu_mean;
  // Of the starved time with the host's CPUs at least 90 % busy, where the log says whose
  // processes used them: its seconds, the mean busy cores, and the mean cores of this GPU's own
  // processes and of the other GPUs' (nullopt: never said), with the user whose processes on the
  // other GPUs used the most (nullopt: none, or not named).
  double starved_busy_attributed_seconds = 0;
  std::optional<double> starved_busy_cores_mean, starved_own_cores_mean,
      starved_other_gpus_cores_mean;
  Text starved_other_gpus_user;
  // Of the starved time, the host's disk reads and network receives in bytes a second: the mean
  // over the seconds that have the reading (nullopt without readings).
  std::optional<double> starved_disk_read_mean, starved_network_receive_mean;

  Reading memory_peak_mib, memory_total_mib; // total: at the peak, else the last known
  RealReading power_mean_w, power_max_w, energy_wh;
  double power_known_seconds = 0;
  std::optional<double> temperature_mean_c;
  Reading temperature_max_c;
  TimeShare throttled, power_capped, slow_pstate;

  ActivityFigures activity; // while it was not idle and dmon's SM activity was known

  // The allocation held longest with no process on it (allocated but idle), at its longest.
  std::optional<Allocation> allocated_idle;

  RealReading power_limit_max_w; // the largest limit the log gives
  // The latest known reading of each field of the table (nvsmi/gpu_fields.hpp) over the log.
  GpuHealth latest_fields;
  std::string finding;
  Severity finding_severity = Severity::ok;
  Series series;
};

// Whether the agent's counted mean and the log's own agree (report_rules); nullopt where either
// is unknown.
std::optional<bool> counted_agrees(const GpuSummary &gpu);

// The known readings of `latest`'s table fields by their JSON keys, "temperature_slowdown_c 87,
// recovery_action None"; empty where none is known. Text as the log had it: the caller makes it
// printable.
std::string latest_fields_text(const GpuHealth &latest);

class BatchJobLedger;

class GpuStats {
public:
  // `interval`: seconds between samples; inferred from the first samples when not given. Each
  // covered stretch is also counted in `ledger` for the users of the GPU's processes, as GPU
  // `gpu_slot` (< UserLedger::max_gpus), and in `jobs` for the job that held it.
  GpuStats(std::string key, std::optional<double> interval, UserLedger &ledger,
           BatchJobLedger &jobs, std::size_t gpu_slot);

  // Takes a sample for this GPU. False when it is not later than the previous one (nothing is
  // counted then).
  bool add(const Sample &sample, const Gpu &identity);
  // The figures so far.
  GpuSummary finish();

private:
  void settle_interval();
  void take(const Sample &sample);
  void take_idle_held(const Sample &sample, double seconds);
  void take_busy_host(const Sample &sample, double seconds);

  GpuSummary s_;
  UserLedger &ledger_;
  BatchJobLedger &jobs_;
  std::size_t gpu_slot_;
  std::optional<double> given_interval_;
  std::vector<Sample> pending_; // until the interval is known
  std::optional<double> last_time_;
  // The counters of the previous sample that had them, and their increase so far.
  std::optional<std::pair<double, double>> last_counted_; // busy, sampled seconds
  double counted_busy_ = 0, counted_sampled_ = 0;
  bool settled_ = false, started_ = false;
  double previous_time_ = 0;
  std::array<double, 101> utilization_seconds_{};
  double utilization_sum_ = 0, power_joules_ = 0, temperature_sum_ = 0,
         temperature_known_seconds_ = 0, starved_memory_sum_ = 0, starved_host_cpu_sum_ = 0,
         idle_held_memory_sum_ = 0;
  std::map<Text, double> idle_holder_seconds_; // at most report_max_users users
  // A reading's mean weighted by time, over the time it was known.
  TimeMean starved_disk_read_, starved_network_receive_;
  // While starved with the host's CPUs busy, where it is said whose processes used them.
  TimeMean starved_busy_cores_, starved_own_cores_, starved_other_gpus_cores_;
  std::map<Text, double> starved_other_users_; // core-seconds, at most other_users_kept users
  ActivityMeans activity_;                     // the activity findings' figures
};

} // namespace nvsmi
