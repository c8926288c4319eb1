// `nvidia-smi nvlink -s`: every GPU's NVLink links and the speed of each, one direction
// ("GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-...)", then "\t Link 0: 26.562 GB/s" or
// "\t Link 3: <inactive>"). A GPU with no NVLink prints nothing, so the whole output may be empty.
//
// The speeds are the links' capacity, which does not change while the GPUs run: what the
// "NVLink saturated" finding weighs the traffic against (docs/ACTIVITY.md).
#pragma once

#include "nvsmi/snapshot.hpp"

#include <string_view>
#include <vector>

namespace nvsmi {

struct NvlinkCapacity {
  int gpu_index = 0;
  Text uuid;
  // The sum of the active links' speeds, bytes per second each way (nvidia-smi's GB/s taken as
  // 10^9 bytes, as link rates are); nullopt where no link is active: never 0.
  Reading bytes_per_second;
};

// One entry per GPU the output names, in its order. Throws ParseError naming the line for
// anything it does not understand (a link before any GPU, another unit, a speed that is not a
// positive number): a guessed capacity would make the finding wrong.
std::vector<NvlinkCapacity> read_nvlink_status(std::string_view text);

// Sets each GPU's nvlink_bandwidth_bytes_per_second from the entry of its UUID (by index where
// either UUID is unknown); a GPU with no entry keeps it unknown.
void attach_nvlink_capacity(Snapshot &snapshot, const std::vector<NvlinkCapacity> &capacity);

} // namespace nvsmi
