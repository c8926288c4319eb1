#include "nvsmi/gpu_state.hpp"

#include "nvsmi/allocation.hpp"
#include "nvsmi/utf8.hpp"
#include "nvsmi/xid.hpp"

#include <algorithm>
#include <cstdio>

namespace nvsmi {
namespace {

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

bool ascii_alnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

// The readings that decide each health fault, in the order gpu_failures gives them.
struct HealthCheck {
  std::string_view key;
  bool (*known)(const GpuHealth &);
};
constexpr HealthCheck health_checks[] = {
    {"ecc_uncorrected", [](const GpuHealth &h) { return h.ecc_volatile.uncorrected.has_value(); }},
    {"row_remap_failed", [](const GpuHealth &h) { return h.remapped_rows_failure.has_value(); }},
    {"row_remap_pending", [](const GpuHealth &h) { return h.remapped_rows_pending.has_value(); }},
    {"page_retirement_pending",
     [](const GpuHealth &h) { return h.retired_pages_pending.has_value(); }},
    {"recovery_action", [](const GpuHealth &h) { return h.recovery_action.has_value(); }},
};

// " as of 2024-03-12 14:03:27": when an earlier sample read a fault that this one cannot see.
std::string as_of_text(const std::optional<Timestamp> &as_of) {
  if (!as_of)
    return " as of an earlier sample";
  char text[64];
  std::snprintf(text, sizeof text, " as of %04d-%02d-%02d %02d:%02d:%02d", as_of->year,
                as_of->month, as_of->day, as_of->hour, as_of->minute, as_of->second);
  return text;
}

// A health fault, and the earlier sample's where this one's reading is unknown.
struct HealthFinding {
  GpuFault fault;
  const EarlierFault *earlier = nullptr;
};

// What the GPU's health says is wrong, in gpu_failures' order: each fault from this sample's
// reading where it is known, else from an earlier sample's (GpuHealth::earlier_faults).
std::vector<HealthFinding> health_findings(const Gpu &gpu) {
  std::vector<GpuFault> read = faults_read(gpu);
  std::vector<HealthFinding> findings;
  for (const HealthCheck &check : health_checks) {
    if (check.known(gpu.health)) {
      for (GpuFault &fault : read)
        if (fault.key == check.key)
          findings.push_back({std::move(fault)});
      continue;
    }
    for (const EarlierFault &earlier : gpu.health.earlier_faults)
      if (earlier.fault.key == check.key) {
        HealthFinding finding{earlier.fault, &earlier};
        finding.fault.reason += as_of_text(earlier.as_of);
        findings.push_back(std::move(finding));
        break;
      }
  }
  return findings;
}

std::vector<GpuFault> health_faults(const Gpu &gpu) {
  std::vector<GpuFault> faults;
  for (HealthFinding &finding : health_findings(gpu))
    faults.push_back(std::move(finding.fault));
  return faults;
}

} // namespace

std::vector<GpuFault> faults_read(const Gpu &gpu) {
  const GpuHealth &health = gpu.health;
  std::vector<GpuFault> faults;
  if (health.ecc_volatile.uncorrected && *health.ecc_volatile.uncorrected > 0)
    faults.push_back({"ecc_uncorrected",
                      std::to_string(*health.ecc_volatile.uncorrected) +
                          " uncorrectable ECC error" +
                          (*health.ecc_volatile.uncorrected == 1 ? "" : "s"),
                      "gpu_reset"});
  if (health.remapped_rows_failure.value_or(false))
    faults.push_back({"row_remap_failed", "row remapping failed", "replace_gpu"});
  if (health.remapped_rows_pending.value_or(false))
    faults.push_back({"row_remap_pending", "row remap pending", "gpu_reset"});
  if (health.retired_pages_pending.value_or(false))
    faults.push_back({"page_retirement_pending", "page retirement pending", "gpu_reset"});
  if (health.recovery_action && *health.recovery_action != "None")
    faults.push_back({"recovery_action", "recovery action: " + *health.recovery_action,
                      recovery_action_key(health.recovery_action).value_or("gpu_reset")});
  return faults;
}

bool fault_reading_known(const GpuHealth &health, std::string_view key) {
  for (const HealthCheck &check : health_checks)
    if (check.key == key)
      return check.known(health);
  return false;
}

std::optional<std::string> undecided_health(const Gpu &gpu) {
  const GpuHealth &health = gpu.health;
  if (gpu.lost_reason || !health.ecc_enabled.value_or(false) || health.ecc_volatile.uncorrected)
    return std::nullopt;
  for (const EarlierFault &earlier : health.earlier_faults)
    if (earlier.fault.key == "ecc_uncorrected")
      return std::nullopt; // failing by it, as of then
  return std::string("uncorrectable ECC count unknown");
}

std::string gpu_identity(const Gpu &gpu) {
  if (gpu.uuid)
    return *gpu.uuid;
  if (gpu.pci_bus_id)
    return *gpu.pci_bus_id;
  return "index " + std::to_string(gpu.index);
}

std::optional<Timestamp> gpu_failure_as_of(const Gpu &gpu) {
  std::vector<HealthFinding> findings = health_findings(gpu);
  if (findings.empty() || !findings.front().earlier)
    return std::nullopt;
  return findings.front().earlier->as_of;
}

bool for_compute(const Process &process) { return process.type != Text("G"); }

std::optional<bool> held_for_compute(const Gpu &gpu) {
  if (!gpu.processes)
    return std::nullopt;
  return std::any_of(gpu.processes->begin(), gpu.processes->end(), for_compute);
}

bool on_instance(const Process &process, const MigDevice &device) {
  return process.gpu_instance_id && process.compute_instance_id &&
         process.gpu_instance_id == device.gpu_instance_id &&
         process.compute_instance_id == device.compute_instance_id;
}

std::vector<std::string> gpu_failures(const Gpu &gpu, bool with_ecc) {
  std::vector<std::string> reasons;
  for (GpuFault &fault : health_faults(gpu))
    if (with_ecc || fault.key != "ecc_uncorrected")
      reasons.push_back(std::move(fault.reason));
  return reasons;
}

std::vector<GpuFault> gpu_faults(const Snapshot &snapshot, std::size_t position) {
  const Gpu &gpu = snapshot.gpus.at(position);
  std::vector<GpuFault> faults;
  if (gpu.lost_reason) {
    // nvidia-smi's "GPU requires reset" says a reset is enough; a GPU fallen off the bus or
    // "Unknown Error" most often needs the node rebooted.
    bool reset = gpu.lost_reason->find("reset") != std::string::npos;
    faults.push_back({"lost", "lost: " + *gpu.lost_reason, reset ? "gpu_reset" : "node_reboot"});
  }
  for (GpuFault &fault : health_faults(gpu))
    faults.push_back(std::move(fault));
  if (snapshot.kernel_log && snapshot.kernel_log->readable)
    for (const XidTally &tally : snapshot.kernel_log->xids)
      if (xid_needs_reset(tally.xid) && tally.count > 0 && xid_gpu(snapshot, tally) == position)
        faults.push_back({"xid_" + std::to_string(tally.xid),
                          "Xid " + std::to_string(tally.xid) + " x" + std::to_string(tally.count) +
                              " needs a reset" +
                              (tally.last_message.empty() ? "" : ": " + tally.last_message),
                          "gpu_reset"});
  return faults;
}

std::optional<std::string> recovery_action_key(const Text &action) {
  if (!action)
    return std::nullopt;
  std::string key;
  bool gap = false;
  for (char c : valid_utf8(*action)) {
    if (static_cast<unsigned char>(c) >= 0x80 || ascii_alnum(c)) {
      if (gap && !key.empty())
        key += '_';
      gap = false;
      key += (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
    } else {
      gap = true;
    }
  }
  if (key.empty())
    return std::nullopt;
  static const std::pair<const char *, const char *> known[] = {
      {"gpu_reset_required", "gpu_reset"},
      {"node_reboot_required", "node_reboot"},
  };
  for (const auto &[words, short_key] : known)
    if (key == words)
      return std::string(short_key);
  return key; // none, drain_p2p, drain_and_reset are their own lower_snake_case
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
  // Free only where the health that decides failing is known (undecided_health).
  GpuState free = undecided_health(gpu) ? GpuState::unknown : GpuState::free;
  const Reading &utilization = gpu.utilization_gpu_percent;
  if (!utilization) // a MIG-enabled GPU reports none: its processes say whether it is used
    return held ? (*held ? GpuState::in_use : free) : GpuState::unknown;
  bool idle = static_cast<double>(*utilization) < thresholds.idle_below_percent;
  if (!idle)
    return GpuState::in_use;
  if (!held)
    return GpuState::idle;
  return *held ? GpuState::idle_held : free;
}

namespace {

// A compute process on the GPU that names no instance (its ids N/A): it could be on any.
bool unplaced_compute(const Gpu &gpu) {
  return gpu.processes &&
         std::any_of(gpu.processes->begin(), gpu.processes->end(), [](const Process &process) {
           return for_compute(process) &&
                  (!process.gpu_instance_id || !process.compute_instance_id);
         });
}

} // namespace

std::vector<const Process *> placed_on(const Gpu &gpu, const MigDevice &device) {
  std::vector<const Process *> on;
  if (gpu.processes)
    for (const Process &process : *gpu.processes)
      if (on_instance(process, device))
        on.push_back(&process);
  return on;
}

std::optional<std::vector<const Process *>> instance_processes(const Gpu &gpu,
                                                               const MigDevice &device) {
  if (!gpu.processes || !device.gpu_instance_id || !device.compute_instance_id ||
      unplaced_compute(gpu))
    return std::nullopt;
  return placed_on(gpu, device);
}

GpuState mig_state(const Gpu &gpu, const MigDevice &device, const GpuStateThresholds &thresholds) {
  if (gpu.lost_reason)
    return GpuState::lost;
  if (gpu_failure(gpu))
    return GpuState::failing;
  if (!gpu.processes || !device.gpu_instance_id || !device.compute_instance_id)
    return GpuState::unknown;
  std::vector<const Process *> on = placed_on(gpu, device);
  if (std::any_of(on.begin(), on.end(), [](const Process *p) { return for_compute(*p); }))
    return GpuState::in_use;
  if (unplaced_compute(gpu))
    return GpuState::unknown;
  if (device.allocation && device.allocation->held_s &&
      *device.allocation->held_s >= thresholds.allocated_idle_after_s)
    return GpuState::allocated_idle;
  return undecided_health(gpu) ? GpuState::unknown : GpuState::free;
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
    auto add_idle_job = [&summary](const Allocation &allocation) {
      std::string job = allocation_text(allocation);
      if (std::find(summary.idle_jobs.begin(), summary.idle_jobs.end(), job) ==
          summary.idle_jobs.end())
        summary.idle_jobs.push_back(job);
    };
    if (gpu.mig_devices && !gpu.mig_devices->empty()) {
      // No instance is idle but held (mig_state): no holders here, only idle jobs.
      summary.mig_instances += gpu.mig_devices->size();
      for (const MigDevice &device : *gpu.mig_devices) {
        GpuState state = mig_state(gpu, device, thresholds);
        ++summary.count[static_cast<std::size_t>(state)];
        if (state == GpuState::allocated_idle)
          add_idle_job(*device.allocation);
      }
      continue;
    }
    GpuState state = gpu_state(gpu, thresholds);
    ++summary.count[static_cast<std::size_t>(state)];
    if (state == GpuState::allocated_idle)
      add_idle_job(*gpu.allocation);
    if (state != GpuState::idle_held || !gpu.processes)
      continue;
    for (const Process &process : *gpu.processes) {
      if (!for_compute(process) || !process.user)
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
  mig_instances += other.mig_instances;
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
  std::string text = std::to_string(summary.gpus) + (summary.gpus == 1 ? " GPU" : " GPUs");
  if (summary.mig_instances > 0)
    text += ", " + std::to_string(summary.mig_instances) +
            (summary.mig_instances == 1 ? " MIG instance" : " MIG instances");
  text += on_hosts + ":";
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
