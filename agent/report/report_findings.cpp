// The finding rules, first match wins; README "report" lists them in the same order.
#include "report/report.hpp"

#include "core/screen_text.hpp"

#include "nvsmi/allocation.hpp"
#include "nvsmi/thresholds.hpp"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace nvsmi {
namespace {

constexpr double starved_finding_percent = 25;
constexpr double most_of = 0.5; // "most of the time": more than half of it
constexpr double throttled_finding_percent = 10;
constexpr double tight_headroom_percent = 5;
// Held and idle this much of the time, and working while held less than the next: nothing ran
// between the waits, so the GPU is idle but held rather than a starved job.
constexpr double idle_held_finding_percent = 25;
constexpr double worked_while_held_percent = 10;
constexpr std::size_t holders_named = 3; // more are "and N more"
constexpr double idle_finding_percent = 90;
constexpr double idle_user_finding_percent = 25;

std::string printf_string(const char *format, double a, double b = 0, double c = 0) {
  char buffer[256];
  std::snprintf(buffer, sizeof buffer, format, a, b, c);
  return buffer;
}

std::string gib(double mib) {
  double value = mib / 1024;
  return printf_string(value < 10 ? "%.1f GiB" : "%.0f GiB", value);
}

std::string hours(double seconds) {
  double value = seconds / 3600;
  return printf_string(value < 1 ? "%.2f" : value < 10 ? "%.1f" : "%.0f", value);
}

// A user's name as a finding says it: printable, and at most 32 columns, whatever the log holds.
std::string shown_user(const Text &user) {
  constexpr std::size_t name_columns = 32;
  return cut_to_columns(marked_text(user_label(user)), name_columns);
}

Finding warning(std::string text) { return {Severity::warning, std::move(text)}; }
Finding info(std::string text) { return {Severity::ok, std::move(text)}; }

// Whether the GPU sat idle while held, and did (almost) no work while held: no job alternated
// between work and waiting on it.
bool idle_but_held(const GpuSummary &gpu) {
  std::optional<double> idle_held = gpu.idle_held.percent();
  return idle_held && *idle_held >= idle_held_finding_percent &&
         100 * gpu.held_working_seconds / gpu.idle_held.known_seconds < worked_while_held_percent;
}

// "alice", "alice and bob", "alice, bob, carol and 2 more"; "" when no holder is named.
std::string holder_names(const GpuSummary &gpu) {
  std::size_t named = std::min(gpu.idle_holders.size(), holders_named);
  std::string out;
  for (std::size_t i = 0; i < named; ++i) {
    bool last = i + 1 == named && named == gpu.idle_holders.size();
    out += (i == 0 ? "" : last ? " and " : ", ") + shown_user(gpu.idle_holders[i].first);
  }
  if (gpu.idle_holders_left_out)
    out += " and more than " + std::to_string(gpu.idle_holders.size() - named) + " others";
  else if (gpu.idle_holders.size() > named)
    out += " and " + std::to_string(gpu.idle_holders.size() - named) + " more";
  return out;
}

// Who, how long and how much memory: each named only where the log knows it.
std::string idle_held_finding(const GpuSummary &gpu) {
  std::string out = "idle but held";
  std::string names = holder_names(gpu);
  if (!names.empty())
    out += " by " + names;
  out += " for " + describe_duration(gpu.idle_held.seconds) +
         printf_string(" (%.0f%% of ", *gpu.idle_held.percent()) +
         describe_window(gpu.idle_held.known_seconds) + ")";
  if (gpu.idle_held_memory_mean_mib)
    out += ", holding " + gib(*gpu.idle_held_memory_mean_mib);
  if (gpu.idle_held_unlisted_seconds > 0)
    out += names.empty() ? "; the log does not say by whom (no process list)"
                         : "; by whom is not logged for " +
                               describe_duration(gpu.idle_held_unlisted_seconds) + " of it";
  return out + ": nobody else can use it; end the idle job or free the GPU";
}

// What the GPU waited on while starved, each with its figure over the starved time where the log
// has it ("host CPUs 96% busy, disk reads 12.5 MB/s"), the rest named once as unknown: "(host CPUs
// 96% busy; disk reads and network receive unknown)", "(host CPUs, disk reads and network receive
// unknown)".
std::string starved_waits(const GpuSummary &gpu) {
  struct Wait {
    const char *what;
    const std::optional<double> &value;
    const char *format;
    double scale;
  };
  const Wait waits[] = {
      {"host CPUs", gpu.starved_host_cpu_mean, "%.0f%% busy", 1},
      {"disk reads", gpu.starved_disk_read_mean, "%.1f MB/s", 1e-6},
      {"network receive", gpu.starved_network_receive_mean, "%.1f MB/s", 1e-6},
  };
  std::vector<std::string> known, unknown;
  for (const Wait &wait : waits)
    if (wait.value)
      known.push_back(std::string(wait.what) + " " +
                      printf_string(wait.format, *wait.value * wait.scale));
    else
      unknown.push_back(wait.what);
  // Whose processes kept the CPUs busy, where the log says it.
  if (gpu.starved_host_cpu_mean && gpu.starved_busy_cores_mean && gpu.starved_own_cores_mean)
    known.front() += printf_string(", this GPU's processes %.1f of %.1f busy cores",
                                   *gpu.starved_own_cores_mean, *gpu.starved_busy_cores_mean);
  auto joined = [](const std::vector<std::string> &parts, const char *last) {
    std::string out;
    for (std::size_t i = 0; i < parts.size(); ++i)
      out += (i == 0 ? "" : i + 1 == parts.size() ? last : ", ") + parts[i];
    return out;
  };
  std::string out = joined(known, ", ");
  if (!unknown.empty())
    out += (out.empty() ? "" : "; ") + joined(unknown, " and ") + " unknown";
  return " (" + out + ")";
}

// Who kept the host's CPUs busy while the GPU starved, when it was not the GPU's own processes:
// "other work: 58.0 cores in processes on no GPU", "other work: mostly bob's processes on other
// GPUs (40.0 cores)".
std::string other_load(const GpuSummary &gpu) {
  double busy = *gpu.starved_busy_cores_mean, own = *gpu.starved_own_cores_mean;
  double other_gpus = gpu.starved_other_gpus_cores_mean.value_or(0);
  double rest = std::max(0.0, busy - own - other_gpus);
  if (gpu.starved_other_gpus_cores_mean && other_gpus >= rest)
    return "other work held the CPUs, mostly " +
           (gpu.starved_other_gpus_user ? shown_user(gpu.starved_other_gpus_user) + "'s"
                                        : std::string("unknown users'")) +
           printf_string(" processes on other GPUs (%.1f cores)", other_gpus);
  return printf_string("other work held the CPUs: %.1f cores in processes on no GPU (another "
                       "user's work, or the job's own workers, which the log does not list)",
                       rest);
}

// The starved rule, told apart by what the host's CPUs did while the GPU waited and by whose
// processes kept them busy; the figures of what it may have waited on are said in every case.
std::string starved_finding(const GpuSummary &gpu) {
  using namespace gpu_thresholds;
  double starved = gpu.starved.seconds;
  std::string head = printf_string("starved %.0f%% of ", *gpu.starved.percent()) +
                     describe_window(gpu.starved.known_seconds);
  if (gpu.starved_host_busy_seconds > most_of * starved) {
    // The busy CPUs count against the job only when its own processes were the busy ones.
    if (gpu.starved_busy_attributed_seconds <= most_of * gpu.starved_host_busy_seconds ||
        !gpu.starved_busy_cores_mean || !gpu.starved_own_cores_mean)
      return head + starved_waits(gpu) +
             ": whose processes kept the CPUs busy is not in the log; check the data loader and "
             "what else runs on the host";
    if (*gpu.starved_own_cores_mean >= own_cpu_share_percent / 100 * *gpu.starved_busy_cores_mean)
      return head + starved_waits(gpu) +
             ": the input pipeline is CPU-bound; add data-loader workers or move preprocessing "
             "to the GPU";
    return head + starved_waits(gpu) + ": " + other_load(gpu) +
           "; free CPUs for the job or move it to a quieter host";
  }
  if (gpu.starved_host_idle_seconds > most_of * starved)
    return head + starved_waits(gpu) +
           ": waiting on I/O or synchronisation, not on the CPU; check storage and network reads "
           "and waits between processes";
  // The memory it held, where the log says it: an unknown is never "0 GiB".
  std::string holding =
      gpu.starved_memory_mean_mib ? " while holding " + gib(*gpu.starved_memory_mean_mib) : "";
  return head + holding + starved_waits(gpu) + ": check the data loader";
}

} // namespace

const char *severity_name(Severity severity) {
  switch (severity) {
  case Severity::ok:
    return "info";
  case Severity::warning:
    return "warning";
  case Severity::critical:
    return "critical";
  }
  return "info";
}

namespace {

// Whether a GPU's SMs were busy while NVLink's traffic was known: one of a job across GPUs.
bool busy_with_nvlink_known(const GpuSummary &summary) {
  const ActivityFigures &gpu = summary.activity;
  return gpu.nvlink_sm_active_mean && gpu.nvlink_traffic_mean_bytes_per_second &&
         *gpu.nvlink_sm_active_mean >= gpu_thresholds::sm_busy_percent;
}

// A job busy on several GPUs whose peer traffic goes over PCIe and the host rather than NVLink;
// nullopt where this GPU is not one of them or PCIe's traffic is unknown.
std::optional<Finding> nvlink_finding(const GpuSummary &summary, std::size_t busy_gpus) {
  using namespace gpu_thresholds;
  const ActivityFigures &gpu = summary.activity;
  if (busy_gpus < 2 || !busy_with_nvlink_known(summary) ||
      !gpu.nvlink_pcie_traffic_mean_bytes_per_second)
    return std::nullopt;
  double nvlink = *gpu.nvlink_traffic_mean_bytes_per_second;
  double pcie = *gpu.nvlink_pcie_traffic_mean_bytes_per_second;
  if (nvlink >= nvlink_idle_below_bytes_per_second || pcie < pcie_peer_traffic_bytes_per_second)
    return std::nullopt;
  return warning("NVLink idle over " + describe_window(gpu.known_seconds) +
                 printf_string(": SMs active %.0f%% here and on %.0f other GPU(s) of the job, ",
                               *gpu.nvlink_sm_active_mean, static_cast<double>(busy_gpus - 1)) +
                 printf_string("but NVLink carried %.1f MB/s while PCIe carried %.1f GB/s",
                               nvlink / 1e6, pcie / 1e9) +
                 ": the GPUs exchange data over PCIe and the host; check that NCCL may use NVLink "
                 "(NCCL_P2P_DISABLE, NCCL_P2P_LEVEL), that the job's GPUs share NVLink (nvidia-smi "
                 "topo -m), and that peer copies are not staged through host memory");
}

// A job busy on several GPUs whose NVLink carries, in its busier direction, nearly all its links
// can; nullopt where this GPU is not one of them or the capacity or the traffic is unknown.
std::optional<Finding> nvlink_saturated_finding(const GpuSummary &summary, std::size_t busy_gpus) {
  using namespace gpu_thresholds;
  const ActivityFigures &gpu = summary.activity;
  if (busy_gpus < 2 || !busy_with_nvlink_known(summary) ||
      !gpu.nvlink_direction_mean_bytes_per_second || !gpu.nvlink_capacity_mean_bytes_per_second ||
      *gpu.nvlink_capacity_mean_bytes_per_second <= 0)
    return std::nullopt;
  double traffic = *gpu.nvlink_direction_mean_bytes_per_second;
  double capacity = *gpu.nvlink_capacity_mean_bytes_per_second;
  double share = 100 * traffic / capacity;
  if (share < nvlink_saturated_percent)
    return std::nullopt;
  return warning("NVLink saturated over " + describe_window(gpu.known_seconds) +
                 printf_string(": SMs active %.0f%% here and on %.0f other GPU(s) of the job, ",
                               *gpu.nvlink_sm_active_mean, static_cast<double>(busy_gpus - 1)) +
                 printf_string("and NVLink carried %.1f GB/s each way, %.0f%% of its links' "
                               "%.1f GB/s",
                               traffic / 1e9, share, capacity / 1e9) +
                 ": the GPUs wait on each other's data; fewer, larger collective operations "
                 "(bucket the gradients), overlap communication with compute, compress the "
                 "gradients, or a topology with more NVLink links between the job's GPUs");
}

} // namespace

// What the GPU's units did while kernels ran, where dmon's GPM figures say it: the first rule
// that explains the case, each with the figures it rests on; nullopt where none applies or the
// figures are unknown.
std::optional<Finding> activity_finding(const ActivityFigures &gpu) {
  using namespace gpu_thresholds;
  if (!gpu.sm_active_mean || !gpu.utilization_mean)
    return std::nullopt;
  double sm = *gpu.sm_active_mean, kernels = *gpu.utilization_mean;
  // The figures' window: the time the GPU was not idle and its SM activity was known.
  std::string over = " over " + describe_window(gpu.known_seconds);
  // Both over the time the GPU was not idle. Utilization counts any kernel on any SM as busy,
  // and copies too (an H100 copying from the host reads 99 % with its SMs idle).
  std::string ran = printf_string("utilization %.0f%% but SMs active %.0f%%", kernels, sm) + over;
  if (sm < sm_rarely_active_percent && gpu.pcie_rx_mean_bytes_per_second &&
      *gpu.pcie_rx_mean_bytes_per_second >= pcie_input_bytes_per_second)
    return warning(ran + printf_string(" while PCIe received %.1f GB/s: the GPU waits for input "
                                       "over PCIe; overlap the copies with compute (pinned "
                                       "memory, prefetch the next batch), keep the data on the "
                                       "GPU, or move less of it",
                                       *gpu.pcie_rx_mean_bytes_per_second / 1e9));
  if (sm < sm_rarely_active_percent && kernels >= kernels_busy_percent)
    return warning(ran + ": small kernels or launch-bound; larger batches, fused kernels or CUDA "
                         "graphs");
  if (gpu.dram_active_mean && *gpu.dram_active_mean >= dram_saturated_percent)
    return warning(
        printf_string("DRAM bandwidth %.0f%% in use while kernels ran", *gpu.dram_active_mean) +
        over + ": memory-bound; fewer passes over memory (fused kernels) or lower precision");
  if (sm >= sm_busy_percent && gpu.tensor_active_mean && gpu.fp32_active_mean &&
      *gpu.tensor_active_mean < tensor_idle_below_percent &&
      *gpu.fp32_active_mean >= fp32_busy_percent)
    return warning(printf_string("SMs active %.0f%%, tensor pipes %.0f%%, FP32 pipes %.0f%%", sm,
                                 *gpu.tensor_active_mean, *gpu.fp32_active_mean) +
                   over +
                   ": FP32 math; mixed precision (bf16/fp16) or TF32 would use the tensor cores");
  return std::nullopt;
}

std::size_t nvlink_busy_gpus(const std::vector<GpuSummary> &gpus) {
  return static_cast<std::size_t>(std::count_if(gpus.begin(), gpus.end(), busy_with_nvlink_known));
}

std::string short_window_finding(double covered_seconds) {
  return "advice needs " + describe_duration(gpu_thresholds::advice_min_window_s) +
         " of samples; " +
         (covered_seconds > 0 ? "these cover " + describe_window(covered_seconds)
                              : std::string("there are none"));
}

std::string short_log_text(double covered_seconds) {
  return "advice needs " + describe_duration(gpu_thresholds::advice_min_window_s) +
         " of samples; this log covers " + describe_window(covered_seconds);
}

bool enough_for_advice(double covered_seconds) {
  return covered_seconds >= gpu_thresholds::advice_min_window_s;
}

// Wasted or slowed GPU time is a warning; heat and memory close to the end are critical, as the
// job may fail; a GPU that is well used, free, or not known enough is info. Each names its
// window: the time its figures cover. How the GPU is used (starved, room for more work) is judged
// only from enough of it (gpu_thresholds::advice_min_window_s); a shorter log says so instead.
Finding report_finding(const GpuSummary &gpu, std::size_t busy_gpus) {
  if (gpu.covered_seconds <= 0)
    return info(printf_string("only %.0f sample(s) with no time between them: too little to judge",
                              static_cast<double>(gpu.samples)));
  std::string window = describe_window(gpu.covered_seconds);
  bool enough = enough_for_advice(gpu.covered_seconds);
  auto at_least = [](const TimeShare &share, double percent) {
    return share.percent() && *share.percent() >= percent;
  };
  auto of = [](const TimeShare &share) {
    return printf_string("%.0f%% of ", *share.percent()) + describe_window(share.known_seconds);
  };
  // A job that holds a GPU it never started on keeps it from everyone else: first of the waste.
  if (gpu.allocated_idle)
    return warning("allocated to " + allocation_text(*gpu.allocated_idle) + " for " +
                   describe_duration(static_cast<double>(gpu.allocated_idle->held_s.value_or(0))) +
                   ", no process on it");
  if (idle_but_held(gpu))
    return warning(idle_held_finding(gpu));
  if (enough && at_least(gpu.starved, starved_finding_percent))
    return warning(starved_finding(gpu));
  // Peer traffic over PCIe slows every GPU of the job, whatever each one's units do: first of the
  // activity. What the units did explains a slow job before the power limit does: FP32 math at the
  // limit is still FP32 math, and the tensor cores would do it for less.
  if (std::optional<Finding> nvlink = nvlink_finding(gpu, busy_gpus))
    return *nvlink;
  if (std::optional<Finding> saturated = nvlink_saturated_finding(gpu, busy_gpus))
    return *saturated;
  if (std::optional<Finding> activity = activity_finding(gpu.activity))
    return *activity;
  if (at_least(gpu.power_capped, throttled_finding_percent))
    return warning("at its power limit " + of(gpu.power_capped) +
                   ": power-bound; check the power cap and cooling");
  if (at_least(gpu.slow_pstate, throttled_finding_percent))
    return warning("busy in a slow pstate (P3 or lower) " + of(gpu.slow_pstate) +
                   ": check clocks and thermal throttling");
  if (gpu.temperature_max_c && *gpu.temperature_max_c >= gpu_thresholds::hot_c)
    return {*gpu.temperature_max_c >= gpu_thresholds::too_hot_c ? Severity::critical
                                                                : Severity::warning,
            printf_string("reached %.0f \u00b0C in ", static_cast<double>(*gpu.temperature_max_c)) +
                window + ": check cooling"};
  if (gpu.memory_peak_mib && gpu.memory_total_mib && *gpu.memory_total_mib > 0) {
    double peak = static_cast<double>(*gpu.memory_peak_mib);
    double total = static_cast<double>(*gpu.memory_total_mib);
    double headroom = 100 * (total - peak) / total;
    if (headroom < tight_headroom_percent)
      return {Severity::critical,
              printf_string("memory peaked at %.1f of %.1f GiB (%.1f%% headroom) in ", peak / 1024,
                            total / 1024, headroom) +
                  window + ": close to out of memory"};
  }
  if (at_least(gpu.idle, idle_finding_percent))
    return info("idle " + of(gpu.idle) + ": free for other work, or its job does not use it");
  if (!gpu.utilization_mean)
    return info("no utilization readings in " + window + ": nothing to judge");
  // Busy most of the time is well used, from any window: a GPU at 77 % has no room to give.
  if (*gpu.utilization_mean >= gpu_thresholds::well_used_mean_percent)
    return info("busy over " + window +
                printf_string(": mean utilization %.0f%%, p95 %.0f%%: well used",
                              *gpu.utilization_mean,
                              static_cast<double>(gpu.utilization_p95.value_or(0))));
  if (!enough)
    return info(short_window_finding(gpu.covered_seconds));
  return info(
      printf_string("mean utilization %.0f%% over ", *gpu.utilization_mean) + window +
      printf_string(", idle %.0f%% of it: room for more work", gpu.idle.percent().value_or(0)));
}

std::string describe_starved_host_cpus(const GpuSummary &gpu) {
  if (!gpu.starved_host_cpu_mean || gpu.starved.seconds <= 0)
    return "";
  double starved = gpu.starved.seconds;
  return printf_string("while starved: %.1f%% busy on average; at least %.0f%% busy for %.1f%% of "
                       "that time, ",
                       *gpu.starved_host_cpu_mean, report_rules::host_busy_percent,
                       100 * gpu.starved_host_busy_seconds / starved) +
         printf_string("under %.0f%% for %.1f%%, not logged for %.1f%%",
                       report_rules::host_idle_below_percent,
                       100 * gpu.starved_host_idle_seconds / starved,
                       100 * (1 - gpu.starved_host_known_seconds / starved));
}

// A user holding GPUs idle keeps them from others: a warning.
Finding report_user_finding(const UserSummary &user) {
  std::string held = shown_user(user.user) + " held " + std::to_string(user.gpus) +
                     (user.gpus == 1 ? " GPU" : " GPUs") + " for " + hours(user.held_seconds) +
                     " GPU-hours";
  std::optional<double> idle = user.idle_percent();
  if (!idle)
    return info(held + "; its utilization is unknown: nothing to judge");
  if (*idle >= idle_user_finding_percent)
    return warning(held + printf_string(", %.0f%% of it idle: ", *idle) + hours(user.idle_seconds) +
                   " idle GPU-hours");
  return info(held + printf_string(", %.0f%% of it idle: in use", *idle));
}

} // namespace nvsmi
