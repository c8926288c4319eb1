#include "nvsmi/gpu_fields.hpp"

namespace nvsmi {

const std::vector<GpuField> &gpu_fields() {
  // The throughput first: /metrics writes the table's families right after the PCIe link's.
  static const std::vector<GpuField> fields = {
      {FieldKind::integer, &GpuHealth::pcie_tx_kib_per_s, nullptr, Unit::kib_per_s, "tx_kib_per_s",
       "", false, false, "pci", "tx_util", "nvsmi_gpu_pcie_tx_bytes_per_second",
       "PCIe transmit throughput in bytes per second (nvidia-smi's XML tx_util).", "gauge", 1024,
       JsonPlace::health_pcie, History::own_slot},
      {FieldKind::integer, &GpuHealth::pcie_rx_kib_per_s, nullptr, Unit::kib_per_s, "rx_kib_per_s",
       "", false, false, "pci", "rx_util", "nvsmi_gpu_pcie_rx_bytes_per_second",
       "PCIe receive throughput in bytes per second (nvidia-smi's XML rx_util).", "gauge", 1024,
       JsonPlace::health_pcie, History::own_slot},
      {FieldKind::integer, &GpuHealth::temperature_slowdown_c, nullptr, Unit::celsius,
       "temperature_slowdown_c", "", false, false, "temperature", "gpu_temp_slow_threshold",
       "nvsmi_gpu_temperature_slowdown_celsius",
       "Temperature in degrees Celsius at which the GPU slows its clocks down.", "gauge", 1,
       JsonPlace::health, History::shared},
      {FieldKind::integer, &GpuHealth::temperature_shutdown_c, nullptr, Unit::celsius,
       "temperature_shutdown_c", "", false, false, "temperature", "gpu_temp_max_threshold",
       "nvsmi_gpu_temperature_shutdown_celsius",
       "Temperature in degrees Celsius at which the GPU shuts down.", "gauge", 1, JsonPlace::health,
       History::shared},
      // The XML's gpu_reset_status of older drivers stands in for it (xml_reader.cpp), and its
      // Prometheus family is labelled by the action (prometheus_health.cpp).
      {FieldKind::text, nullptr, &GpuHealth::recovery_action, Unit::none, "recovery_action",
       "gpu_recovery_action", false, false, "", "", "", "", "", 1, JsonPlace::health,
       History::shared},
      // Driver 580 has no --query-gpu field for it (help-query-gpu.txt of the H200 recording):
      // the CSV name is the agent's own, for its log.
      {FieldKind::integer, &GpuHealth::pcie_replay_count, nullptr, Unit::none, "pcie_replay_count",
       "pcie.replay_counter", false, true, "pci", "replay_counter", "nvsmi_gpu_pcie_replays_total",
       "PCIe packets the link had to resend (nvidia-smi's XML pci/replay_counter). A count that "
       "keeps rising: check the riser, slot or cable.",
       "counter", 1, JsonPlace::health, History::shared},
  };
  return fields;
}

bool same_field_readings(const GpuHealth &a, const GpuHealth &b) {
  for (const GpuField &field : gpu_fields()) {
    if (field.history != History::shared)
      continue;
    if (field.kind == FieldKind::integer ? a.*field.integer != b.*field.integer
                                         : a.*field.text != b.*field.text)
      return false;
  }
  return true;
}

std::size_t own_slot_field_count() {
  static const std::size_t count = [] {
    std::size_t own = 0;
    for (const GpuField &field : gpu_fields())
      own += field.history == History::own_slot;
    return own;
  }();
  return count;
}

} // namespace nvsmi
