// How a person names a GPU on every command that chooses some (check, report, run: --gpu), as
// nvidia-smi's own -i does: its index, its UUID, or its PCI bus id.
#pragma once

#include "nvsmi/snapshot.hpp"

#include <string_view>

namespace nvsmi {

// Whether `selector` is one of the three ways to name a GPU, at most 96 bytes: an index (up to 9
// digits), a PCI bus id ("00000000:19:00.0", "19:00.0") or a UUID ("GPU-" or "MIG-" and hex digits
// with dashes). "1.5", "gpu0" and "all" are none of them: a command refuses them before it samples.
bool valid_gpu_selector(std::string_view selector);

// Whether `selector` names `gpu`: digits alone are its index; an address ([domain:]bus:device
// [.function], hex, any case) is its PCI bus id, the function 0 when not given; anything else is
// its UUID, in any case. A reading the GPU lacks (no UUID, no bus id) matches nothing.
bool selects_gpu(std::string_view selector, const Gpu &gpu);

} // namespace nvsmi
