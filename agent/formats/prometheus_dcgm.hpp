// /metrics under the DCGM exporter's names (serve --metric-names dcgm): the families of its
// default and profiling counters that nvidia-smi gives, each in the exporter's unit and type, with
// its labels (gpu, UUID, pci_bus_id, device, modelName, hostname, DCGM_FI_DRIVER_VERSION, and
// GPU_I_ID on a MIG instance's series), so that dashboards and alerts written for the exporter read
// the agent unchanged. docs/DCGM.md lists every family of the exporter, given or not and why.
#pragma once

#include "formats/prometheus_text.hpp"

#include "nvsmi/snapshot.hpp"

namespace nvsmi {

// Every DCGM family of the table that `out.selection` lets in and the snapshot has a reading for;
// an unknown reading is an absent series.
void write_dcgm_metrics(const Snapshot &snapshot, MetricsOut &out);

} // namespace nvsmi
