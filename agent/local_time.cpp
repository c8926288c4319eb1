#include "local_time.hpp"

#include <ctime>

namespace nvsmi {

void attach_local_offset(Snapshot &snapshot) {
  if (!snapshot.timestamp || snapshot.timestamp->utc_offset_minutes)
    return;
  Timestamp &t = *snapshot.timestamp;
  std::tm local{};
  local.tm_year = t.year - 1900;
  local.tm_mon = t.month - 1;
  local.tm_mday = t.day;
  local.tm_hour = t.hour;
  local.tm_min = t.minute;
  local.tm_sec = t.second;
  local.tm_isdst = -1;
  if (std::mktime(&local) == static_cast<std::time_t>(-1))
    return;
  t.utc_offset_minutes = static_cast<int>(local.tm_gmtoff / 60);
}

} // namespace nvsmi
