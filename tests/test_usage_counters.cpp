// The counters of long runs (nvsmi/usage_counters.hpp) on hand-made samples: each sample stands
// for the stretch before it; a gap, an unknown reading, a lost GPU or a share outside 0-100 adds
// nothing to a reading's total or to its seconds; a pair starts at zero; the totals only grow; the
// GPUs counted are bounded.
#include "snapshot_builders.hpp"

#include "nvsmi/usage_counters.hpp"

#include <catch2/catch.hpp>

namespace test_usage_counters {

using nvsmi::Gpu;
using nvsmi::GpuCounters;
using nvsmi::Snapshot;
using nvsmi::UsageCounters;

namespace {

// One GPU at `utilization` percent drawing `watts`, with GPM activity where `sm` is given.
Snapshot sample(nvsmi::Reading utilization, nvsmi::RealReading watts = std::nullopt,
                nvsmi::Reading sm = std::nullopt) {
  Snapshot snapshot = test::quiet_machine(1);
  Gpu &gpu = snapshot.gpus[0];
  gpu.uuid = "GPU-counted";
  gpu.utilization_gpu_percent = utilization;
  gpu.power_draw_w = watts;
  gpu.sm_active_percent = sm;
  gpu.tensor_active_percent = sm ? nvsmi::Reading(*sm / 2) : std::nullopt;
  gpu.dram_active_percent = sm ? nvsmi::Reading(10) : std::nullopt;
  return snapshot;
}

// Adds `snapshot` at `seconds` (1 s interval) and returns GPU 0's totals.
GpuCounters add(UsageCounters &counters, Snapshot snapshot, double seconds) {
  counters.add(snapshot, seconds, 1.0);
  REQUIRE(snapshot.gpus[0].counters);
  return *snapshot.gpus[0].counters;
}

} // namespace

TEST_CASE("counters: each sample stands for the stretch before it; the first starts at zero") {
  UsageCounters counters;
  GpuCounters c = add(counters, sample(40, 100.0), 10);
  CHECK(*c.sampled_seconds == 0);
  CHECK(*c.busy_seconds == 0);
  CHECK(*c.energy_joules == 0);
  c = add(counters, sample(50, 200.0), 11);
  c = add(counters, sample(100, 300.0), 12.5);
  CHECK(*c.sampled_seconds == Approx(2.5));
  CHECK(*c.busy_seconds == Approx(0.5 * 1 + 1.0 * 1.5));
  CHECK(*c.power_sampled_seconds == Approx(2.5));
  CHECK(*c.energy_joules == Approx(200 * 1 + 300 * 1.5));
  // No GPM reading: no GPM pair at all, never zeros.
  CHECK_FALSE(c.gpm_sampled_seconds);
  CHECK_FALSE(c.sm_active_seconds);
}

TEST_CASE("counters: a burst between two scrapes is counted whole") {
  // 14 idle seconds and one at 100 %: a gauge read every 15 s sees 0 or 100, the counters 1/15.
  UsageCounters counters;
  GpuCounters c;
  for (int second = 0; second <= 30; ++second)
    c = add(counters, sample(second % 15 == 7 ? 100 : 0), second);
  CHECK(*c.sampled_seconds == Approx(30));
  CHECK(*c.busy_seconds == Approx(2));
}

TEST_CASE("counters: a gap, an unknown reading and a lost GPU add nothing to either side") {
  UsageCounters counters;
  add(counters, sample(50, 100.0), 0);
  add(counters, sample(50, 100.0), 1);
  // Four intervals without a sample: a gap, however busy the sample after it says it was.
  GpuCounters c = add(counters, sample(100, 700.0), 5);
  CHECK(*c.sampled_seconds == Approx(1));
  CHECK(*c.busy_seconds == Approx(0.5));
  CHECK(*c.energy_joules == Approx(100));
  // Utilization N/A, power known: only the power's pair moves.
  c = add(counters, sample(std::nullopt, 100.0), 6);
  CHECK(*c.sampled_seconds == Approx(1));
  CHECK(*c.power_sampled_seconds == Approx(2));
  // Lost: nothing of it was read.
  Snapshot lost = sample(90, 500.0);
  lost.gpus[0].lost_reason = "GPU is lost";
  c = add(counters, lost, 7);
  CHECK(*c.sampled_seconds == Approx(1));
  CHECK(*c.energy_joules == Approx(200));
  // Readable again: the stretch since the lost sample counts.
  c = add(counters, sample(0, 100.0), 8);
  CHECK(*c.sampled_seconds == Approx(2));
  CHECK(*c.busy_seconds == Approx(0.5));
}

TEST_CASE("counters: a share outside 0-100, a negative or absurd power is unknown, never "
          "counted") {
  UsageCounters counters;
  add(counters, sample(10, 50.0, 20), 0);
  GpuCounters c = add(counters, sample(250, -5.0, 20), 1);
  CHECK(*c.sampled_seconds == 0);
  CHECK(*c.busy_seconds == 0);
  CHECK(*c.power_sampled_seconds == 0);
  CHECK(*c.gpm_sampled_seconds == Approx(1));
  // A garbled draw of 10^300 W, summed, would make the counter infinite.
  c = add(counters, sample(10, 1e300, 20), 1.5);
  CHECK(*c.power_sampled_seconds == 0);
  CHECK(*c.energy_joules == 0);
  // GPM counts only where SM, tensor and DRAM are all known: one unknown leaves all three.
  Snapshot part = sample(10, 50.0, 30);
  part.gpus[0].dram_active_percent = std::nullopt;
  c = add(counters, part, 2);
  CHECK(*c.gpm_sampled_seconds == Approx(1.5));
  CHECK(*c.sm_active_seconds == Approx(0.3));
  CHECK(*c.tensor_active_seconds == Approx(0.15));
  CHECK(*c.dram_active_seconds == Approx(0.15));
}

TEST_CASE("counters: the gap follows the interval in force; a clock that goes back adds nothing") {
  UsageCounters counters;
  Snapshot first = sample(100);
  counters.add(first, 0, 10.0);
  Snapshot later = sample(100);
  counters.add(later, 25, 10.0); // 2.5 intervals of 10 s: no gap
  CHECK(*later.gpus[0].counters->busy_seconds == Approx(25));
  Snapshot back = sample(100);
  counters.add(back, 20, 10.0);
  CHECK(*back.gpus[0].counters->busy_seconds == Approx(25));
}

TEST_CASE("counters: GPUs are told apart and bounded; a GPU never read has none") {
  UsageCounters counters;
  for (int i = 0; i < 300; ++i) {
    Snapshot snapshot = sample(50);
    snapshot.gpus[0].uuid = "GPU-" + std::to_string(i);
    counters.add(snapshot, i, 1.0);
  }
  CHECK(counters.gpus() == UsageCounters::max_gpus);
  Snapshot unknown = sample(std::nullopt);
  unknown.gpus[0].uuid = "GPU-never-read";
  counters.add(unknown, 400, 1.0);
  CHECK_FALSE(unknown.gpus[0].counters);
}

} // namespace test_usage_counters
