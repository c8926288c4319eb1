#include "nvsmi/gpu_state.hpp"

#include "nvsmi/allocation.hpp"

#include <algorithm>

namespace nvsmi {
namespace {

// nullopt when nobody knows who holds the GPU (no process list from this source).
std::optional<bool> held_for_compute(const Gpu &gpu) {
  if (!gpu.processes)
    return std::nullopt;
  return std::any_of(gpu.processes->begin(), gpu.processes->end(),
                     [](const Process &process) { return process.type != Text("G"); });
}

// " (alice, bob)": at most three named, then "+N more"; nothing for nobody.
std::string named_few(const std::vector<std::string> &names) {
  if (names.empty())
    return "";
  constexpr std::size_t named = 3;
  std::string text = " (";
  for (std::size_t i = 0; i < names.size() && i < named; ++i)
    text += (i ? ", " : "") + names[i];
  if (names.size() > named)
    text += ", +" + std::to_string(names.size() - named) + " more";
  return text + ")";
}

} // namespace

std::vector<std::string> gpu_failures(const Gpu &gpu, bool with_ecc) {
  const GpuHealth &health = gpu.health;
  std::vector<std::string> reasons;
  if (with_ecc && health.ecc_volatile.uncorrected && *health.ecc_volatile.uncorrected > 0)
    reasons.push_back(std::to_string(*health.ecc_volatile.uncorrected) +
                      " uncorrectable ECC error" +
                      (*health.ecc_volatile.uncorrected == 1 ? "" : "s"));
  if (health.remapped_rows_failure.value_or(false))
    reasons.emplace_back("row remapping failed");
  if (health.remapped_rows_pending.value_or(false))
    reasons.emplace_back("row remap pending");
  if (health.retired_pages_pending.value_or(false))
    reasons.emplace_back("page retirement pending");
  if (health.recovery_action && *health.recovery_action != "None")
    reasons.push_back("recovery action: " + *health.recovery_action);
  return reasons;
}

std::optional<std::string> gpu_failure(const Gpu &gpu) {
  std::vector<std::string> reasons = gpu_failures(gpu);
  if (reasons.empty())
    return std::nullopt;
  return reasons.front();
}

GpuState gpu_state(const Gpu &gpu, const GpuStateThresholds &thresholds) {
  if (gpu.lost_reason)
    return GpuState::lost;
  if (gpu_failure(gpu))
    return GpuState::failing;
  if (gpu.temperature_c && *gpu.temperature_c >= thresholds.hot_at_c)
    return GpuState::hot;
  if (gpu.power_draw_w && gpu.power_limit_w && *gpu.power_limit_w > 0 &&
      *gpu.power_draw_w >= thresholds.power_limit_fraction * *gpu.power_limit_w)
    return GpuState::at_power_limit;
  std::optional<bool> held = held_for_compute(gpu);
  if (held == false && gpu.allocation && gpu.allocation->held_s &&
      *gpu.allocation->held_s >= thresholds.allocated_idle_after_s)
    return GpuState::allocated_idle;
  const Reading &utilization = gpu.utilization_gpu_percent;
  if (!utilization) // a MIG-enabled GPU reports none: its processes say whether it is used
    return held ? (*held ? GpuState::in_use : GpuState::free) : GpuState::unknown;
  bool idle = static_cast<double>(*utilization) < thresholds.idle_below_percent;
  if (!idle)
    return GpuState::in_use;
  if (!held)
    return GpuState::idle;
  return *held ? GpuState::idle_held : GpuState::free;
}

std::string_view gpu_state_name(GpuState state) {
  switch (state) {
  case GpuState::lost:
    return "lost";
  case GpuState::failing:
    return "failing";
  case GpuState::free:
    return "free";
  case GpuState::in_use:
    return "in use";
  case GpuState::idle_held:
    return "idle but held";
  case GpuState::allocated_idle:
    return "allocated but idle";
  case GpuState::idle:
    return "idle";
  case GpuState::hot:
    return "hot";
  case GpuState::at_power_limit:
    return "at power limit";
  case GpuState::unknown:
    break;
  }
  return "unknown";
}

FleetSummary fleet_summary(const Snapshot &snapshot, const GpuStateThresholds &thresholds) {
  FleetSummary summary;
  summary.gpus = snapshot.gpus.size();
  for (const Gpu &gpu : snapshot.gpus) {
    GpuState state = gpu_state(gpu, thresholds);
    ++summary.count[static_cast<std::size_t>(state)];
    if (state == GpuState::allocated_idle) {
      std::string job = allocation_text(*gpu.allocation);
      if (std::find(summary.idle_jobs.begin(), summary.idle_jobs.end(), job) ==
          summary.idle_jobs.end())
        summary.idle_jobs.push_back(job);
    }
    if (state != GpuState::idle_held || !gpu.processes)
      continue;
    for (const Process &process : *gpu.processes) {
      if (process.type == Text("G") || !process.user)
        continue;
      if (std::find(summary.idle_holders.begin(), summary.idle_holders.end(), *process.user) ==
          summary.idle_holders.end())
        summary.idle_holders.push_back(*process.user);
    }
  }
  return summary;
}

void FleetSummary::add(const FleetSummary &other) {
  gpus += other.gpus;
  for (std::size_t i = 0; i < std::size(count); ++i)
    count[i] += other.count[i];
  for (const auto &[mine, theirs] :
       {std::pair{&idle_holders, &other.idle_holders}, std::pair{&idle_jobs, &other.idle_jobs}})
    for (const std::string &name : *theirs)
      if (std::find(mine->begin(), mine->end(), name) == mine->end())
        mine->push_back(name);
  hosts += other.hosts;
  silent_hosts += other.silent_hosts;
  silent_gpus += other.silent_gpus;
}

std::string fleet_summary_text(const FleetSummary &summary) {
  std::string on_hosts;
  if (summary.hosts > 0)
    on_hosts = " on " + std::to_string(summary.hosts) + (summary.hosts == 1 ? " host" : " hosts");
  if (summary.gpus == 0 && summary.silent_hosts == 0)
    return "no GPUs" + on_hosts;
  std::string text =
      std::to_string(summary.gpus) + (summary.gpus == 1 ? " GPU" : " GPUs") + on_hosts + ":";
  const char *separator = " ";
  for (GpuState state : {GpuState::free, GpuState::in_use, GpuState::idle_held,
                         GpuState::allocated_idle, GpuState::idle, GpuState::at_power_limit,
                         GpuState::hot, GpuState::failing, GpuState::lost, GpuState::unknown}) {
    std::size_t count = summary.of(state);
    if (count == 0)
      continue;
    text += separator;
    text += std::to_string(count) + " " + std::string(gpu_state_name(state));
    separator = " \u00b7 ";
    if (state == GpuState::idle_held)
      text += named_few(summary.idle_holders);
    if (state == GpuState::allocated_idle)
      text += named_few(summary.idle_jobs);
  }
  if (summary.silent_hosts > 0) {
    text += separator;
    // The GPUs a silent host had when it last answered; one never heard has none to count.
    if (summary.silent_gpus > 0)
      text += std::to_string(summary.silent_gpus) + " on ";
    text += std::to_string(summary.silent_hosts) +
            (summary.silent_hosts == 1 ? " host" : " hosts") + " without a fresh sample";
  }
  return text;
}

std::string_view gpu_state_key(GpuState state) {
  switch (state) {
  case GpuState::lost:
    return "lost";
  case GpuState::failing:
    return "failing";
  case GpuState::free:
    return "free";
  case GpuState::in_use:
    return "in_use";
  case GpuState::idle_held:
    return "idle_but_held";
  case GpuState::allocated_idle:
    return "allocated_idle";
  case GpuState::idle:
    return "idle";
  case GpuState::hot:
    return "hot";
  case GpuState::at_power_limit:
    return "at_power_limit";
  case GpuState::unknown:
    break;
  }
  return "unknown";
}

} // namespace nvsmi
