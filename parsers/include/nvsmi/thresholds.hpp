// The one set of thresholds by which every view judges a GPU: `snapshot`'s table and JSON state,
// `top`, the dashboard (through the state and /api/v1/thresholds), `check`'s defaults, `pick`,
// `report`'s shares and findings, and the Prometheus rules and Grafana dashboard in deploy/ (a
// test reads those files and fails when their numbers differ from these). README "Thresholds"
// is this table in words.
#pragma once

#include <cstdint>

namespace nvsmi::gpu_thresholds {

// At or over this temperature a GPU is hot: H100 and A100 slow down from about 87 C, so this
// leaves a few degrees to look at the airflow before the jobs lose clocks.
inline constexpr std::int64_t hot_c = 85;
// At or over this temperature, where the driver gives no slowdown threshold of its own, the GPU is
// taken as losing clocks: `check` is CRITICAL, `report`'s finding critical.
inline constexpr std::int64_t too_hot_c = 90;
// Drawing at least this fraction of its power limit, a GPU is at its power limit (a capped GPU
// hovers just under its limit).
inline constexpr double power_limit_fraction = 0.95;
// Using at least this fraction of its memory, a GPU is full: the next allocation of a job on it
// fails with out-of-memory, so `top` shows it in the alarm colour.
inline constexpr double memory_full_fraction = 0.95;
// Utilization under this percentage is idle.
inline constexpr double idle_below_percent = 5;
// A GPU holding at least this much memory has a job on it...
inline constexpr std::int64_t memory_held_mib = 1024;
// ...which waits while utilization is under this percentage: starved when it also works between
// those waits, idle but held when it does not.
inline constexpr double starved_below_percent = 30;
// A GPU that a batch job has held this long with no compute process on it is allocated but idle:
// long enough for a job to load its data and start, short enough to be seen within the hour.
inline constexpr std::int64_t allocated_idle_after_s = 10 * 60;

} // namespace nvsmi::gpu_thresholds
