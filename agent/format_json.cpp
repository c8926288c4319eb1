#include "formats.hpp"

#include "nvsmi/timestamp.hpp"

#include <nlohmann/json.hpp>

namespace nvsmi {
namespace {

using ordered_json = nlohmann::ordered_json;

template <typename T> ordered_json value_or_null(const std::optional<T> &value) {
  return value ? ordered_json(*value) : ordered_json(nullptr);
}

ordered_json clocks_json(const Clocks &clocks) {
  ordered_json out;
  out["graphics"] = value_or_null(clocks.graphics_mhz);
  out["sm"] = value_or_null(clocks.sm_mhz);
  out["memory"] = value_or_null(clocks.memory_mhz);
  out["video"] = value_or_null(clocks.video_mhz);
  return out;
}

ordered_json mig_device_json(const MigDevice &device) {
  ordered_json out;
  out["index"] = value_or_null(device.index);
  out["gpu_instance_id"] = value_or_null(device.gpu_instance_id);
  out["compute_instance_id"] = value_or_null(device.compute_instance_id);
  out["memory_total_mib"] = value_or_null(device.memory_total_mib);
  out["memory_used_mib"] = value_or_null(device.memory_used_mib);
  out["memory_free_mib"] = value_or_null(device.memory_free_mib);
  return out;
}

ordered_json process_json(const Process &process) {
  ordered_json out;
  out["pid"] = value_or_null(process.pid);
  out["type"] = value_or_null(process.type);
  out["name"] = value_or_null(process.name);
  out["used_memory_mib"] = value_or_null(process.used_memory_mib);
  out["gpu_instance_id"] = value_or_null(process.gpu_instance_id);
  out["compute_instance_id"] = value_or_null(process.compute_instance_id);
  return out;
}

template <typename T, typename Convert>
ordered_json list_or_null(const std::optional<std::vector<T>> &items, Convert convert) {
  if (!items)
    return nullptr;
  ordered_json out = ordered_json::array();
  for (const T &item : *items)
    out.push_back(convert(item));
  return out;
}

ordered_json gpu_json(const Gpu &gpu) {
  ordered_json out;
  out["index"] = gpu.index;
  out["uuid"] = value_or_null(gpu.uuid);
  out["name"] = value_or_null(gpu.name);
  out["pci_bus_id"] = value_or_null(gpu.pci_bus_id);
  out["temperature_c"] = value_or_null(gpu.temperature_c);
  out["memory_total_mib"] = value_or_null(gpu.memory_total_mib);
  out["memory_used_mib"] = value_or_null(gpu.memory_used_mib);
  out["memory_free_mib"] = value_or_null(gpu.memory_free_mib);
  out["memory_used_percent"] = value_or_null(gpu.memory_used_percent());
  out["utilization_gpu_percent"] = value_or_null(gpu.utilization_gpu_percent);
  out["utilization_memory_percent"] = value_or_null(gpu.utilization_memory_percent);
  out["power_draw_w"] = value_or_null(gpu.power_draw_w);
  out["power_limit_w"] = value_or_null(gpu.power_limit_w);
  out["fan_speed_percent"] = value_or_null(gpu.fan_speed_percent);
  out["pstate"] = value_or_null(gpu.pstate);
  out["clocks_mhz"] = clocks_json(gpu.clocks);
  out["mig_enabled"] = value_or_null(gpu.mig_enabled);
  out["mig_devices"] = list_or_null(gpu.mig_devices, mig_device_json);
  out["processes"] = list_or_null(gpu.processes, process_json);
  out["clock_event_reasons_active"] = value_or_null(gpu.clock_event_reasons_active);
  for (const ExtraField &extra : gpu.extras)
    out[extra.name] = value_or_null(extra.value);
  return out;
}

} // namespace

std::string format_json(const Snapshot &snapshot) {
  ordered_json document;
  document["schema"] = "nvsmi-agent.snapshot/1";
  document["source"] = snapshot.source == Source::xml ? "xml" : "csv";
  document["timestamp"] =
      snapshot.timestamp ? ordered_json(to_iso8601(*snapshot.timestamp)) : ordered_json(nullptr);
  document["driver_version"] = value_or_null(snapshot.driver_version);
  document["cuda_version"] = value_or_null(snapshot.cuda_version);
  ordered_json gpus = ordered_json::array();
  for (const Gpu &gpu : snapshot.gpus)
    gpus.push_back(gpu_json(gpu));
  document["gpus"] = std::move(gpus);
  // Replace, not throw, on invalid UTF-8 in a process name: the reading matters more.
  return document.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

} // namespace nvsmi
