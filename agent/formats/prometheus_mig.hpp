// The MIG instances' families of /metrics (docs/MIG.md): each instance's memory, state, compute
// processes (and by user), and the job that holds it, labelled by its GPU and its own ids.
#pragma once

#include "formats/prometheus_selection.hpp"
#include "formats/prometheus_text.hpp"

#include "nvsmi/snapshot.hpp"

namespace nvsmi {

// Appends every family that has a series: none where no GPU has MIG instances. `user_labels`
// names each process's user, with the same cap as the GPUs' series.
void write_mig_metrics(const Snapshot &snapshot, const UserLabels &user_labels, MetricsOut &out);

} // namespace nvsmi
