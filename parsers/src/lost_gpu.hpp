// What the readers share about a GPU that nvidia-smi names but cannot read: the markers it prints
// in its readings when the GPU itself is gone (docs/research/fleet-health.md, section 10).
#pragma once

#include "nvsmi/snapshot.hpp"

#include <string_view>

namespace nvsmi::detail {

// Gathers one GPU's readings, as printed, and says whether they make it lost. "GPU is lost" or
// "GPU requires reset" in any reading is the GPU gone; "Unknown Error" is, only when every
// identity and core reading says so, since a single one (a fan) is that reading unknown.
class LostEvidence {
public:
  // Any reading of the GPU.
  void reading(std::string_view value);
  // uuid, name, temperature, memory, utilization: also a reading.
  void core_reading(std::string_view value);
  // "GPU is lost", "GPU requires reset", "Unknown Error", or nullopt for a GPU that was read.
  Text reason() const;

private:
  Text marker_;
  bool core_seen_ = false, core_all_unknown_error_ = true;
};

} // namespace nvsmi::detail
