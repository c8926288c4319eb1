#pragma once

#include "nvsmi/snapshot.hpp"

namespace nvsmi {

// nvidia-smi prints this machine's local time without a zone: attach the local UTC offset that
// was in force at that moment (TZ, else /etc/localtime).
void attach_local_offset(Snapshot &snapshot);

} // namespace nvsmi
