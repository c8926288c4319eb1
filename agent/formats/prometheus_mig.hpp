// The MIG instances' families of /metrics (docs/MIG.md): each instance's memory, state and
// compute processes, labelled by its GPU and its own ids.
#pragma once

#include "formats/prometheus_text.hpp"

#include "nvsmi/snapshot.hpp"

namespace nvsmi {

// Appends every family that has a series: none where no GPU has MIG instances.
void write_mig_metrics(const Snapshot &snapshot, MetricsOut &out);

} // namespace nvsmi
