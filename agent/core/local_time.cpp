#include "core/local_time.hpp"

#include "nvsmi/timestamp.hpp"

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

// The wall clock of `t` counted as if it were UTC: the instant is that less the offset then.
std::time_t wall_as_utc(const Timestamp &t) {
  std::tm fields{};
  fields.tm_year = t.year - 1900;
  fields.tm_mon = t.month - 1;
  fields.tm_mday = t.day;
  fields.tm_hour = t.hour;
  fields.tm_min = t.minute;
  fields.tm_sec = t.second;
  return ::timegm(&fields);
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
  std::time_t wall = wall_as_utc(t);
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

Text local_iso8601(std::int64_t seconds, std::optional<int> millisecond) {
  std::time_t instant = static_cast<std::time_t>(seconds);
  ::tzset(); // localtime_r need not read TZ itself
  std::tm local{};
  if (!::localtime_r(&instant, &local))
    return std::nullopt;
  Timestamp t;
  t.year = local.tm_year + 1900;
  t.month = local.tm_mon + 1;
  t.day = local.tm_mday;
  t.hour = local.tm_hour;
  t.minute = local.tm_min;
  t.second = local.tm_sec;
  t.millisecond = millisecond;
  t.utc_offset_minutes = static_cast<int>(local.tm_gmtoff / 60);
  return to_iso8601(t);
}

std::optional<double> epoch_seconds(const Timestamp &t) {
  if (!t.utc_offset_minutes)
    return std::nullopt;
  return static_cast<double>(wall_as_utc(t)) - 60.0 * *t.utc_offset_minutes +
         t.millisecond.value_or(0) / 1000.0;
}

} // namespace nvsmi
