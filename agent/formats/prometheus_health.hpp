// The fleet-health families of /metrics (docs/METRICS.md): each GPU's state and whether it was
// lost, who holds it, ECC, retired pages, remapped rows, clock event reasons, P-state, PCIe link,
// temperature thresholds, the driver's recovery action, and the kernel log's Xid errors.
#pragma once

#include "formats/prometheus_text.hpp"

#include "nvsmi/snapshot.hpp"

#include <string>
#include <vector>

namespace nvsmi {

// Appends every family that has a series; `labels` holds gpu_labels() of each of snapshot.gpus,
// `user_labels` the user label of each process's user.
void write_fleet_health_metrics(const Snapshot &snapshot, const std::vector<std::string> &labels,
                                const UserLabels &user_labels, MetricsOut &out);

} // namespace nvsmi
