#include "core/tone.hpp"

namespace nvsmi {

Tone state_tone(GpuState state) {
  switch (state) {
  case GpuState::lost:
  case GpuState::failing:
  case GpuState::hot:
  case GpuState::at_power_limit:
    return Tone::alarm;
  case GpuState::idle_held:
  case GpuState::allocated_idle:
    return Tone::warning;
  case GpuState::free:
    return Tone::good;
  case GpuState::in_use:
    return Tone::busy;
  case GpuState::idle:
  case GpuState::unknown:
    break;
  }
  return Tone::dim;
}

} // namespace nvsmi
