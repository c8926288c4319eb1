// `nvidia-smi nvlink -s`: every GPU's NVLink links and the speed of each, one direction
// ("GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-...)", then "\t Link 0: 26.562 GB/s" or
// "\t Link 3: <inactive>"). A GPU with no NVLink may print nothing, so the whole output may be
// empty; or, under its own line and with exit status 0, one of nvidia-smi's answers instead of its
// links: "NVML: Unable to retrieve Nvlink information as all links are inActive", "Device does not
// have or support Nvlink", "Nvlink queries are not supported for Devices in MIG mode"
// (fixtures/README.md, `nvlink/`, says where each was seen).
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
  // Why this GPU has no figures where nvidia-smi said more than "no active link": its answer
  // instead of links, or a line under it that is not understood (another unit, a speed that is not
  // a positive number, a sum past any GPU's links), in the reader's words, printable.
  std::optional<std::string> no_figures;
};

// One entry per GPU the output names, in its order. What is wrong under one GPU's line leaves that
// GPU's capacity unknown and every other GPU's as read: a guessed capacity would make the finding
// wrong, and one GPU's answer (a GPU in MIG mode) says nothing of the others. Throws ParseError
// naming the line only for what belongs to no GPU: a GPU line that is not one, a line before any.
std::vector<NvlinkCapacity> read_nvlink_status(std::string_view text);

// The lines that say which GPUs have no figures and why (NvlinkCapacity::no_figures): one per
// reason, its GPUs named (the first 8, then a count), at most 4 reasons and then a count of GPUs.
std::vector<std::string> nvlink_capacity_notices(const std::vector<NvlinkCapacity> &capacity);

// Sets each GPU's nvlink_bandwidth_bytes_per_second from the entry of its UUID (by index where
// either UUID is unknown); a GPU with no entry keeps it unknown.
void attach_nvlink_capacity(Snapshot &snapshot, const std::vector<NvlinkCapacity> &capacity);

} // namespace nvsmi
