// A reading that nvidia-smi prints in parts (ECC errors per location, a flag under an old and a new
// name): the whole is known only where every part printed is. The sum of the known parts would
// read "0 errors" while the unknown part holds them, and a GPU failing at its last reading would
// look healthy every time that part reads N/A.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>

namespace nvsmi {

// One part of a whole: nullopt where this driver's output does not have it (it is no part then, as
// SRAM's parity count before driver 570), else its reading, nullopt where unknown (N/A).
template <typename T> using Part = std::optional<std::optional<T>>;

// The sum of the parts present; nullopt where any of them is unknown, or none is present.
std::optional<std::int64_t> sum_of_parts(std::initializer_list<Part<std::int64_t>> parts);

// Whether any part present says yes: true where one does (an unknown part cannot undo it); false
// only where every part present is known and says no; else nullopt.
std::optional<bool> any_of_parts(std::initializer_list<Part<bool>> parts);

} // namespace nvsmi
