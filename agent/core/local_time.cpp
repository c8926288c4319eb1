#include "core/local_time.hpp"

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <vector>

namespace nvsmi {
namespace {

// nvidia-smi stamps a sample as it starts it; the agent has it well within this, but not within
// the half hour between the two passes of a repeated hour (Australia/Lord_Howe: half an hour).
constexpr std::int64_t live_tolerance_ms = 10 * 60 * 1000;

std::optional<long> offset_at(std::time_t instant) {
  std::tm local{};
  if (!::localtime_r(&instant, &local))
    return std::nullopt;
  return local.tm_gmtoff;
}

struct Candidate {
  std::int64_t instant_ms;
  long offset_seconds;
};

} // namespace

void LocalOffsets::attach(Snapshot &snapshot, Clock::time_point received) {
  if (!snapshot.timestamp || snapshot.timestamp->utc_offset_minutes)
    return;
  Timestamp &t = *snapshot.timestamp;
  std::tm fields{};
  fields.tm_year = t.year - 1900;
  fields.tm_mon = t.month - 1;
  fields.tm_mday = t.day;
  fields.tm_hour = t.hour;
  fields.tm_min = t.minute;
  fields.tm_sec = t.second;
  // The wall clock counted as if it were UTC; an instant is that less the offset in force then.
  std::time_t wall = ::timegm(&fields);
  if (wall == static_cast<std::time_t>(-1))
    return;
  ::tzset(); // localtime_r need not read TZ itself
  // A day either side lies before and after any change of offset near this wall time.
  std::optional<long> before = offset_at(wall - 86400), after = offset_at(wall + 86400);
  if (!before || !after)
    return;
  std::vector<Candidate> readings; // the instants that show this wall time, earliest first
  for (long offset : {*before, *after}) {
    if (!readings.empty() && readings.back().offset_seconds == offset)
      continue;
    std::time_t instant = wall - offset;
    if (offset_at(instant) == offset)
      readings.push_back(
          {static_cast<std::int64_t>(instant) * 1000 + t.millisecond.value_or(0), offset});
  }
  std::sort(readings.begin(), readings.end(),
            [](const Candidate &a, const Candidate &b) { return a.instant_ms < b.instant_ms; });

  Candidate chosen{static_cast<std::int64_t>(wall - *before) * 1000, *before}; // skipped wall time
  if (!readings.empty())
    chosen = readings.front();
  if (readings.size() > 1) {
    std::int64_t now_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(received.time_since_epoch()).count();
    auto distance = [&](const Candidate &r) { return std::llabs(r.instant_ms - now_ms); };
    auto nearest = std::min_element(
        readings.begin(), readings.end(),
        [&](const Candidate &a, const Candidate &b) { return distance(a) < distance(b); });
    auto after_previous = std::find_if(readings.begin(), readings.end(), [&](const Candidate &r) {
      return previous_ms_ && r.instant_ms >= *previous_ms_;
    });
    if (distance(*nearest) <= live_tolerance_ms)
      chosen = *nearest;
    else if (after_previous != readings.end())
      chosen = *after_previous;
  }
  t.utc_offset_minutes = static_cast<int>(chosen.offset_seconds / 60);
  previous_ms_ = chosen.instant_ms;
}

void attach_local_offset(Snapshot &snapshot) { LocalOffsets().attach(snapshot); }

} // namespace nvsmi
