// How a MIG instance is named in words, in one place: refusals, claims, run's start line, its
// report and the table all say "GPU 0 MIG 1 (3g.40gb)" alike.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace nvsmi {

// "GPU 0 MIG 1" ("GPU 0 MIG ?" where the device's index is unknown).
std::string mig_instance_name(std::int64_t gpu_index, std::optional<std::int64_t> device);

// A MIG profile ("3g.40gb") as text: printable, and cut to 32 columns (nvidia-smi -L may print
// anything).
std::string mig_profile_text(const std::string &profile);

} // namespace nvsmi
