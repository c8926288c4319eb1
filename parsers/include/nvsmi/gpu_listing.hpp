// `nvidia-smi -L`: each GPU's index, name and UUID, and under a GPU with MIG on each MIG device's
// profile, device index and UUID. The only place nvidia-smi gives a MIG device's UUID and profile
// (`-q -x` has neither); its GPU and compute instance ids come from `-q -x` (joined by the GPU's
// index and the device index), or from the UUID itself on drivers before 470, which printed
// `MIG-GPU-<GPU UUID>/<GI>/<CI>`.
#pragma once

#include "nvsmi/snapshot.hpp"

#include <string_view>
#include <vector>

namespace nvsmi {

struct ListedMig {
  int device = 0; // "Device  0": the index `-q -x` gives the same device (mig_device/index)
  Text profile;   // "3g.40gb"
  Text uuid;      // "MIG-0929581a-..." (or "MIG-GPU-.../1/0")
  Reading gpu_instance_id, compute_instance_id; // from the older UUID form only
};

struct ListedGpu {
  int index = 0;
  Text name, uuid;
  std::vector<ListedMig> migs;
};

// Throws ParseError naming a line it cannot place (printable, cut): nothing of it is guessed.
std::vector<ListedGpu> read_gpu_listing(std::string_view text);

// Gives each MIG device of the snapshot its UUID and profile from the listing: its GPU found by
// UUID (by index where either lacks one), the device by its index. A device the listing does not
// name keeps them unknown, and a listed device whose older UUID gives instance ids that disagree
// with the XML's is left unknown too (the two describe different layouts: one changed between the
// reads). Returns how many devices were given a UUID.
std::size_t attach_gpu_listing(Snapshot &snapshot, const std::vector<ListedGpu> &listing);

} // namespace nvsmi
