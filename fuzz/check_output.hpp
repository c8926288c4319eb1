// What must hold for every snapshot a reader accepts, whatever the input was.
#pragma once

#include "nvsmi/snapshot.hpp"

namespace fuzz {

// Formats the snapshot in every format and aborts when an output is not what its format promises.
void check_formats(const nvsmi::Snapshot &snapshot);

} // namespace fuzz
