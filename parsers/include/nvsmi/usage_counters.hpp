// What a long-running command (the Sampler's watch, serve, top, run) adds up of each GPU over
// every sample it reads: busy seconds, GPM activity seconds and energy, with the seconds each
// covers (GpuCounters in nvsmi/snapshot.hpp). A gauge scraped every 15 s sees one sample in 15
// and misses the rest; these counters hold every sample, so that
// rate(busy) / rate(sampled) is the exact mean over any window, gaps or not.
//
// Each sample stands for the stretch since the one before (nvidia-smi's utilization and power are
// averages over its last sample period), as `report` integrates them. A stretch longer than
// sample_gap_intervals intervals is a gap, and a reading unknown in a sample (N/A, a lost GPU, a
// share outside 0-100) is unknown over its stretch: neither adds anything, to the reading's
// total or to its seconds. A reading's pair starts at zero in the first sample that knows it.
// The totals live here, not in nvidia-smi's stream: a restart of nvidia-smi never takes one back.
#pragma once

#include "nvsmi/snapshot.hpp"

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace nvsmi {

// Each total of GpuCounters once, in the order every output writes them: its key in a GPU's JSON
// "counters" object (which report reads back) and its Prometheus counter.
struct CounterField {
  std::optional<double> GpuCounters::*member;
  const char *json_key, *prometheus_name, *prometheus_help;
};
const std::vector<CounterField> &counter_fields();

class UsageCounters {
public:
  // GPUs counted at most: a host has a few; an nvidia-smi that names a new GPU every sample must
  // not grow this. The one seen longest ago goes first (and starts again from zero if it comes
  // back: a counter reset, which Prometheus's rate() takes as one).
  static constexpr std::size_t max_gpus = 256;

  // Adds what `snapshot`, received at `now_seconds` (a steady clock), tells over the stretch
  // since the GPU's previous sample, and sets each GPU's Gpu::counters to its totals. `interval`
  // is the sample interval in force, for the gap rule.
  void add(Snapshot &snapshot, double now_seconds, double interval_seconds);

  std::size_t gpus() const { return gpus_.size(); }

private:
  struct Counted {
    GpuCounters counters;
    std::optional<double> last_seconds; // when its previous sample was received
    std::uint64_t seen = 0;             // the call that last listed the GPU
  };
  std::map<std::string, Counted> gpus_; // by gpu_identity
  std::uint64_t calls_ = 0;
};

} // namespace nvsmi
