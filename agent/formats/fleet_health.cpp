#include "formats/fleet_health.hpp"

#include "nvsmi/timestamp.hpp"

#include <algorithm>
#include <charconv>

namespace nvsmi {
namespace {

// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil).
std::int64_t days_from_civil(std::int64_t year, unsigned month, unsigned day) {
  year -= month <= 2;
  const std::int64_t era = (year >= 0 ? year : year - 399) / 400;
  const auto year_of_era = static_cast<unsigned>(year - era * 400);
  const unsigned day_of_year = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1;
  const unsigned day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
  return era * 146097 + static_cast<std::int64_t>(day_of_era) - 719468;
}

// Milliseconds since the epoch, so that two times written with different offsets (a change to or
// from summer time between them) still compare right; nullopt for no time or text not ISO 8601.
std::optional<std::int64_t> utc_milliseconds(const Text &iso) {
  if (!iso)
    return std::nullopt;
  std::optional<Timestamp> t = parse_iso8601_timestamp(*iso);
  if (!t)
    return std::nullopt;
  std::int64_t seconds =
      days_from_civil(t->year, static_cast<unsigned>(t->month), static_cast<unsigned>(t->day)) *
          86400 +
      t->hour * 3600 + t->minute * 60 + t->second - t->utc_offset_minutes.value_or(0) * 60;
  return seconds * 1000 + t->millisecond.value_or(0);
}

} // namespace

bool xids_known(const Snapshot &snapshot) {
  return snapshot.kernel_log && snapshot.kernel_log->readable;
}

GpuXids gpu_xids(const Snapshot &snapshot, std::size_t position) {
  GpuXids xids;
  if (!xids_known(snapshot))
    return xids;
  std::optional<std::int64_t> last_time;
  for (const XidTally &tally : snapshot.kernel_log->xids) {
    if (xid_gpu(snapshot, tally) != position)
      continue;
    xids.counts[tally.xid] += tally.count;
    xids.total += tally.count;
    std::optional<std::int64_t> time = utc_milliseconds(tally.last_seen);
    if (!xids.last || (time && (!last_time || *time >= *last_time)) || (!time && !last_time)) {
      xids.last = &tally;
      last_time = time;
    }
  }
  return xids;
}

std::vector<std::pair<std::string, std::optional<bool>>> clock_event_reasons(const Gpu &gpu) {
  std::vector<std::pair<std::string, std::optional<bool>>> reasons;
  const auto &active = gpu.clock_event_reasons_active;
  auto is_active = [&](const std::string &reason) -> std::optional<bool> {
    if (!active)
      return std::nullopt;
    return std::find(active->begin(), active->end(), reason) != active->end();
  };
  auto listed = [&](const std::string &reason) {
    return std::any_of(reasons.begin(), reasons.end(),
                       [&](const auto &entry) { return entry.first == reason; });
  };
  if (gpu.clock_event_reasons_reported)
    for (const std::string &reason : *gpu.clock_event_reasons_reported)
      if (!listed(reason))
        reasons.emplace_back(reason, is_active(reason));
  if (active)
    for (const std::string &reason : *active)
      if (!listed(reason))
        reasons.emplace_back(reason, true);
  return reasons;
}

std::optional<int> performance_state_number(const Text &pstate) {
  if (!pstate || pstate->size() < 2 || pstate->size() > 3 || (*pstate)[0] != 'P' ||
      ((*pstate)[1] == '0' && pstate->size() > 2))
    return std::nullopt;
  int number = 0;
  const char *begin = pstate->data() + 1, *end = pstate->data() + pstate->size();
  auto [at, error] = std::from_chars(begin, end, number);
  if (error != std::errc() || at != end || number < 0 || number > 15)
    return std::nullopt;
  return number;
}

} // namespace nvsmi
