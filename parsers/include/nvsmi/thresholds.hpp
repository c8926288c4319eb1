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
// A stretch between two samples longer than this many sample intervals is a gap: its readings are
// unknown, in `report`'s shares and in the counters of long runs (nvsmi/usage_counters.hpp) alike.
inline constexpr double sample_gap_intervals = 3;
// Utilization under this percentage is idle.
inline constexpr double idle_below_percent = 5;
// A GPU holding at least this much memory has a job on it...
inline constexpr std::int64_t memory_held_mib = 1024;
// ...which waits while utilization is under this percentage: starved when it also works between
// those waits, idle but held when it does not.
inline constexpr double starved_below_percent = 30;
// Advice on how a GPU is used (starved, CPU-bound, room for more work, a larger batch) is given
// only from at least this much sampled time of it: a few minutes of a job average out its start,
// its checkpoints and a passing burst of someone else's work; seconds do not.
inline constexpr double advice_min_window_s = 5 * 60;
// A GPU at this mean utilization or more is busy most of the time: well used, never "room for
// more work" (a job at 70 % has bursts to smooth out, not a free GPU's worth of time).
inline constexpr double well_used_mean_percent = 70;
// A starved GPU's input pipeline is CPU-bound only when its own processes used at least this
// share of the host's busy CPUs; less, and other work kept the CPUs busy.
inline constexpr double own_cpu_share_percent = 50;
// A GPU that a batch job has held this long with no compute process on it is allocated but idle:
// long enough for a job to load its data and start, short enough to be seen within the hour.
inline constexpr std::int64_t allocated_idle_after_s = 10 * 60;

// What the GPU's units did while kernels ran (dmon's GPM figures, averaged over the time the GPU
// was not idle): the activity findings of `report` and `run` (docs/ACTIVITY.md).
// Kernels ran at least this share of the time...
inline constexpr double kernels_busy_percent = 25;
// ...but SMs had a warp resident under this share: small kernels, or the GPU waits for launches.
inline constexpr double sm_rarely_active_percent = 25;
// SMs active at least this share, tensor pipes under the next and FP32 pipes at least the one
// after: the work is FP32 math that mixed precision or TF32 would move to the tensor cores.
inline constexpr double sm_busy_percent = 50;
inline constexpr double tensor_idle_below_percent = 5;
inline constexpr double fp32_busy_percent = 20;
// DRAM bandwidth at least this share in use: memory-bound.
inline constexpr double dram_saturated_percent = 70;
// PCIe receive at least this fast while SMs are rarely active: the input comes over PCIe (a
// PCIe 4 x16 link moves about 25 GB/s; a data loader's copies at this rate hold the GPU up).
inline constexpr double pcie_input_bytes_per_second = 2.0 * 1024 * 1024 * 1024;
// A job across GPUs (SMs active at least sm_busy_percent on two or more, NVLink's traffic known)
// whose NVLink moves under the first while PCIe moves at least the second, receive plus
// transmit: the GPUs talk to each other over PCIe and the host, not over NVLink (one NVLink 4
// link alone moves 50 GB/s; an all-reduce between busy GPUs moves far more than this).
inline constexpr double nvlink_idle_below_bytes_per_second = 100.0 * 1024 * 1024;
inline constexpr double pcie_peer_traffic_bytes_per_second = 1.0 * 1024 * 1024 * 1024;
// A job across GPUs (as above) whose NVLink traffic, in its busier direction, averages at least
// this share of what the GPU's active links carry each way (nvidia-smi nvlink -s): the GPUs wait
// on each other's data. NCCL's all-reduce reaches about 80 % of the links' peak at best, so at
// this share the links are as full as the job can make them.
inline constexpr double nvlink_saturated_percent = 80;

} // namespace nvsmi::gpu_thresholds
