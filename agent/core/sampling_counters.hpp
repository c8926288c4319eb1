// What went wrong while sampling, by cause: plain counts, kept by the nvidia-smi stream and shown
// by serve's metrics (nvsmi_sample_errors_total{cause}), so that neither needs the other.
#pragma once

#include <cstdint>

namespace nvsmi {

struct SamplingCounters {
  std::uint64_t bad_samples = 0;     // garbage, or a sample that could not be read: skipped
  std::uint64_t partial_samples = 0; // cut off when the child ended: dropped
  std::uint64_t stalls = 0;          // the child was killed for not delivering
  std::uint64_t child_exits = 0;     // the child exited or died on its own
  std::uint64_t spawn_failures = 0;  // the child could not be started
  std::uint64_t restarts = 0;        // starts after the first

  // Counts of a stream replaced by another (the sample interval changed), added to its successor's.
  SamplingCounters &operator+=(const SamplingCounters &other) {
    bad_samples += other.bad_samples;
    partial_samples += other.partial_samples;
    stalls += other.stalls;
    child_exits += other.child_exits;
    spawn_failures += other.spawn_failures;
    restarts += other.restarts;
    return *this;
  }
};

} // namespace nvsmi
