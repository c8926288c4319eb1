// What a long-running command (watch, serve, top, run: the Sampler) remembers of each GPU's health
// across samples, so that a health state needs a known reading to clear: a GPU failing at its last
// known reading stays failing, "as of" that sample, while the reading is unknown (N/A every other
// sample from a broken driver or a hostile nvidia-smi), and the drain hook sees one fault, not one
// per flip. A one-shot sample (snapshot, check, pick) has no past: its unknown stays unknown.
#pragma once

#include "nvsmi/snapshot.hpp"

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace nvsmi {

class HealthMemory {
public:
  // GPUs remembered at most: a host has a few; an nvidia-smi that names a new GPU every sample
  // must not grow the memory. The one seen longest ago goes first.
  static constexpr std::size_t max_gpus = 256;

  // Sets each readable GPU's GpuHealth::earlier_faults: the faults remembered for it whose reading
  // this sample does not know. Then remembers the faults this sample reads (as of its timestamp),
  // forgets those a known reading clears, and keeps the rest. A lost GPU is not touched and its
  // faults stay remembered: nothing of it was read.
  void carry(Snapshot &snapshot);

  std::size_t gpus() const { return gpus_.size(); }

private:
  struct Remembered {
    std::vector<EarlierFault> faults;
    std::uint64_t seen = 0; // the sample that last listed the GPU, counted by carry
  };
  std::map<std::string, Remembered> gpus_; // by gpu_identity
  std::uint64_t samples_ = 0;
};

} // namespace nvsmi
