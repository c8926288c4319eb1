// Prometheus text exposition (0.0.4) of a snapshot and of the agent's own health. Base units
// (bytes, watts, celsius, hertz, ratios 0-1); an unknown reading is an absent series.
#pragma once

#include "core/sampling_counters.hpp"
#include "formats/prometheus_selection.hpp"

#include "nvsmi/snapshot.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace nvsmi {

constexpr const char *prometheus_content_type = "text/plain; version=0.0.4; charset=utf-8";

// Every family of the snapshot that has at least one series and that `selection` lets in:
// nvsmi_gpu_* labelled gpu, uuid and name (a process's also pid, process_name, user, container,
// pod_uid where known; only with selection.processes), nvsmi_user_* labelled user, nvsmi_host_*,
// then fleet health (state, lost, ECC, rows, PCIe, Xids: docs/METRICS.md, prometheus_health.hpp).
// Under MetricNames::dcgm: the DCGM exporter's families (prometheus_dcgm.hpp), then the per-process
// (where asked) and per-user families.
std::string format_snapshot_metrics(const Snapshot &snapshot,
                                    const MetricsSelection &selection = {});

struct AgentHealth {
  bool up = false;                          // a sample younger than three intervals
  std::optional<double> last_sample_unix_s; // when the last good sample arrived
  SamplingCounters sampling;
  std::size_t history_samples = 0, history_bytes = 0; // what serve's history holds
  std::size_t pending_body_bytes = 0; // serve's answers made and waiting for clients to read
  // The monitor's own cost: the agent and its nvidia-smi streams; none: not said.
  std::optional<AgentCost> cost;
};
std::string format_health_metrics(const AgentHealth &health,
                                  const MetricsSelection &selection = {});

// The name of every family the two above may write under either naming (MetricNames), sorted:
// what --metrics-include may name.
std::vector<std::string> metric_family_names();

// Why `pattern` (a family's name, or a prefix ending in '*') names no family of
// metric_family_names(), in one line that lists them; empty when it names one.
std::string metrics_include_problem(const std::string &pattern);

} // namespace nvsmi
