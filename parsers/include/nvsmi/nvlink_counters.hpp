// `nvidia-smi nvlink -gt d`: every GPU's cumulative NVLink data counters, per link and direction
// ("GPU 0: NVIDIA A100-SXM4-40GB (UUID: GPU-...)", then "\t Link 0: Data Tx: 8299479 KiB" and
// "\t Link 0: Data Rx: 7492431 KiB"), and the traffic two readings of them make.
//
// Where dmon's GPM gives no NVLink figure (before Hopper: V100, A100), two readings apart in time
// are the only way to the GPU's NVLink receive and transmit rates (docs/ACTIVITY.md).
#pragma once

#include "nvsmi/snapshot.hpp"

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace nvsmi {

struct NvlinkLinkCounters {
  int link = 0;
  // Bytes since the counter's last reset (KiB x 1024); nullopt where nvidia-smi says N/A.
  std::optional<std::uint64_t> tx_bytes, rx_bytes;
};

struct NvlinkGpuCounters {
  int gpu_index = 0;
  Text uuid;
  std::vector<NvlinkLinkCounters> links; // in the output's order, each link once
};

// One entry per GPU the output names, in its order (an empty output: none); a GPU under whose line
// nvidia-smi answers that it has no NVLink figures (nvsmi/nvlink_status.hpp) has no links. Throws
// ParseError naming the line for anything it does not understand: a unit other than KiB, a count
// that is not a whole number or past 2^53 KiB, a link or GPU named twice, a link before any GPU,
// more than 64 links or a GPU index past 1023. A rate from a guessed counter would be an invented
// reading.
std::vector<NvlinkGpuCounters> read_nvlink_counters(std::string_view text);

struct NvlinkRates {
  int gpu_index = 0;
  Text uuid;
  // Summed over the GPU's links, bytes per second; nullopt where unknown (see nvlink_rates).
  Reading rx_bytes_per_second, tx_bytes_per_second;
};

// Each GPU's receive and transmit rates between two readings `seconds` apart, matched by UUID
// (by index where either UUID is unknown), for the GPUs of `after`. A direction is unknown where
// the GPU is missing from `before`, where the two readings do not know the same links, where a
// counter went backwards (a reset, `nvlink -r`, a wrap), where no link is known, or where the sum
// is beyond any link (a garbled count). Never 0 for what was not counted.
std::vector<NvlinkRates> nvlink_rates(const std::vector<NvlinkGpuCounters> &before,
                                      const std::vector<NvlinkGpuCounters> &after, double seconds);

// Fills nvlink_rx/tx_bytes_per_second from `rates` for each GPU of the sample that has an active
// link (its nvlink_bandwidth_bytes_per_second known) and no NVLink figure of dmon's (both
// unknown): dmon's GPM figures, where there are any, are never replaced.
void attach_nvlink_rates(Snapshot &snapshot, const std::vector<NvlinkRates> &rates);

// Whether some GPU of the sample would take counters' rates: an active link and no NVLink figure.
bool wants_nvlink_counters(const Snapshot &snapshot);

} // namespace nvsmi
