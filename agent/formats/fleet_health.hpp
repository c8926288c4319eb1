// How the formats read a snapshot's fleet health (docs/METRICS.md), one definition for the JSON,
// /metrics and the table, so that they never disagree about which GPU an Xid belongs to or what a
// recovery action is called.
#pragma once

#include "nvsmi/gpu_state.hpp" // recovery_action_key, which the hook's action shares
#include "nvsmi/snapshot.hpp"
#include "nvsmi/xid.hpp" // xid_gpu

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace nvsmi {

// Whether the snapshot's Xid counts are known: a kernel log was asked for and could be read.
bool xids_known(const Snapshot &snapshot);

// One GPU's Xids: count per code, the total, and its latest tally (nullptr where it has none).
struct GpuXids {
  std::map<int, std::int64_t> counts;
  std::int64_t total = 0;
  const XidTally *last = nullptr;
};
// The GPU at `position`'s Xids, from the snapshot's kernel log (empty where it has none). The
// latest is the one whose last_seen is latest; a tally without a time loses to one with, and
// between tallies without times the one listed last wins (the log gave no better order).
GpuXids gpu_xids(const Snapshot &snapshot, std::size_t position);

// Each clock event reason the driver reported, in its order, with whether it is active; then any
// active reason it did not list. nullopt for "reported, whether active not known"; an empty list
// where neither list is known.
std::vector<std::pair<std::string, std::optional<bool>>> clock_event_reasons(const Gpu &gpu);

// "P0".."P15" as 0..15; nullopt for anything else ("P16", "P01", "Unknown").
std::optional<int> performance_state_number(const Text &pstate);

} // namespace nvsmi
