#include "nvsmi/snapshot.hpp"

#include <cmath>

namespace nvsmi {

bool Timestamp::operator==(const Timestamp &other) const {
  return year == other.year && month == other.month && day == other.day && hour == other.hour &&
         minute == other.minute && second == other.second && millisecond == other.millisecond &&
         utc_offset_minutes == other.utc_offset_minutes;
}

bool GpuFault::operator==(const GpuFault &other) const {
  return key == other.key && reason == other.reason && action == other.action;
}

bool EarlierFault::operator==(const EarlierFault &other) const {
  return fault == other.fault && as_of == other.as_of;
}

RealReading Gpu::memory_used_percent() const {
  if (!memory_used_mib || !memory_total_mib || *memory_total_mib == 0)
    return std::nullopt;
  double percent =
      static_cast<double>(*memory_used_mib) / static_cast<double>(*memory_total_mib) * 100.0;
  return std::round(percent * 100.0) / 100.0;
}

} // namespace nvsmi
