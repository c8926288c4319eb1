#include "nvsmi/gpu_fields.hpp"

namespace nvsmi {

const std::vector<GpuField> &gpu_fields() {
  static const std::vector<GpuField> fields = {
      {FieldKind::integer, &GpuHealth::temperature_slowdown_c, nullptr, Unit::celsius,
       "temperature_slowdown_c", "", false, false, "temperature", "gpu_temp_slow_threshold",
       "nvsmi_gpu_temperature_slowdown_celsius",
       "Temperature in degrees Celsius at which the GPU slows its clocks down.", "gauge", 1},
      {FieldKind::integer, &GpuHealth::temperature_shutdown_c, nullptr, Unit::celsius,
       "temperature_shutdown_c", "", false, false, "temperature", "gpu_temp_max_threshold",
       "nvsmi_gpu_temperature_shutdown_celsius",
       "Temperature in degrees Celsius at which the GPU shuts down.", "gauge", 1},
      // The XML's gpu_reset_status of older drivers stands in for it (xml_reader.cpp), and its
      // Prometheus family is labelled by the action (prometheus_health.cpp).
      {FieldKind::text, nullptr, &GpuHealth::recovery_action, Unit::none, "recovery_action",
       "gpu_recovery_action", false, false, "", "", "", "", "", 1},
      // Driver 580 has no --query-gpu field for it (help-query-gpu.txt of the H200 recording):
      // the CSV name is the agent's own, for its log.
      {FieldKind::integer, &GpuHealth::pcie_replay_count, nullptr, Unit::none, "pcie_replay_count",
       "pcie.replay_counter", false, true, "pci", "replay_counter", "nvsmi_gpu_pcie_replays_total",
       "PCIe packets the link had to resend (nvidia-smi's XML pci/replay_counter). A count that "
       "keeps rising: check the riser, slot or cable.",
       "counter", 1},
  };
  return fields;
}

bool same_field_readings(const GpuHealth &a, const GpuHealth &b) {
  for (const GpuField &field : gpu_fields())
    if (field.kind == FieldKind::integer ? a.*field.integer != b.*field.integer
                                         : a.*field.text != b.*field.text)
      return false;
  return true;
}

} // namespace nvsmi
