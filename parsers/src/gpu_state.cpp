#include "nvsmi/gpu_state.hpp"

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

} // namespace

std::optional<std::string> gpu_failure(const Gpu &gpu) {
  const GpuHealth &health = gpu.health;
  if (health.ecc_volatile.uncorrected && *health.ecc_volatile.uncorrected > 0)
    return std::to_string(*health.ecc_volatile.uncorrected) + " uncorrectable ECC error" +
           (*health.ecc_volatile.uncorrected == 1 ? "" : "s");
  if (health.remapped_rows_failure.value_or(false))
    return std::string("row remapping failed");
  if (health.remapped_rows_pending.value_or(false))
    return std::string("row remap pending");
  if (health.retired_pages_pending.value_or(false))
    return std::string("page retirement pending");
  if (health.recovery_action && *health.recovery_action != "None")
    return "recovery action: " + *health.recovery_action;
  return std::nullopt;
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

StateConcern gpu_state_concern(GpuState state) {
  switch (state) {
  case GpuState::lost:
  case GpuState::failing:
  case GpuState::hot:
  case GpuState::at_power_limit:
    return StateConcern::alarm;
  case GpuState::idle_held:
    return StateConcern::warning;
  case GpuState::free:
    return StateConcern::good;
  case GpuState::in_use:
    return StateConcern::busy;
  case GpuState::idle:
  case GpuState::unknown:
    break;
  }
  return StateConcern::none;
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
