#include "formats/formats.hpp"

#include "nvsmi/gpu_state.hpp"
#include "nvsmi/timestamp.hpp"

#include "formats/json_writer.hpp"

namespace nvsmi {
namespace {

template <typename T> void field(JsonWriter &json, std::string_view name, const T &value) {
  json.key(name);
  json.value(value);
}

template <typename T, typename Write>
void list_or_null(JsonWriter &json, std::string_view name,
                  const std::optional<std::vector<T>> &items, Write write) {
  json.key(name);
  if (!items) {
    json.null();
    return;
  }
  json.begin_array();
  for (const T &item : *items) {
    json.begin_object();
    write(item);
    json.end_object();
  }
  json.end_array();
}

void write_gpu(JsonWriter &json, const Gpu &gpu) {
  field(json, "index", gpu.index);
  field(json, "uuid", gpu.uuid);
  field(json, "name", gpu.name);
  field(json, "pci_bus_id", gpu.pci_bus_id);
  field(json, "temperature_c", gpu.temperature_c);
  field(json, "memory_total_mib", gpu.memory_total_mib);
  field(json, "memory_used_mib", gpu.memory_used_mib);
  field(json, "memory_free_mib", gpu.memory_free_mib);
  field(json, "memory_used_percent", gpu.memory_used_percent());
  field(json, "utilization_gpu_percent", gpu.utilization_gpu_percent);
  field(json, "utilization_memory_percent", gpu.utilization_memory_percent);
  field(json, "power_draw_w", gpu.power_draw_w);
  field(json, "power_limit_w", gpu.power_limit_w);
  field(json, "fan_speed_percent", gpu.fan_speed_percent);
  field(json, "pstate", gpu.pstate);
  json.key("clocks_mhz");
  json.begin_object();
  field(json, "graphics", gpu.clocks.graphics_mhz);
  field(json, "sm", gpu.clocks.sm_mhz);
  field(json, "memory", gpu.clocks.memory_mhz);
  field(json, "video", gpu.clocks.video_mhz);
  json.end_object();
  field(json, "mig_enabled", gpu.mig_enabled);
  list_or_null(json, "mig_devices", gpu.mig_devices, [&](const MigDevice &device) {
    field(json, "index", device.index);
    field(json, "gpu_instance_id", device.gpu_instance_id);
    field(json, "compute_instance_id", device.compute_instance_id);
    field(json, "memory_total_mib", device.memory_total_mib);
    field(json, "memory_used_mib", device.memory_used_mib);
    field(json, "memory_free_mib", device.memory_free_mib);
  });
  list_or_null(json, "processes", gpu.processes, [&](const Process &process) {
    field(json, "pid", process.pid);
    field(json, "type", process.type);
    field(json, "name", process.name);
    field(json, "used_memory_mib", process.used_memory_mib);
    field(json, "gpu_instance_id", process.gpu_instance_id);
    field(json, "compute_instance_id", process.compute_instance_id);
    field(json, "sm_utilization_percent", process.sm_utilization_percent);
    field(json, "memory_utilization_percent", process.memory_utilization_percent);
    field(json, "user", process.user);
    field(json, "uid", process.uid);
    field(json, "command", process.command);
    field(json, "started", process.started);
    field(json, "cpu_percent", process.cpu_percent);
    field(json, "host_memory_mib", process.host_memory_mib);
    field(json, "container", process.container);
    field(json, "pod_uid", process.pod_uid);
    field(json, "slurm_job_id", process.slurm_job_id);
    field(json, "systemd_unit", process.systemd_unit);
  });
  field(json, "clock_event_reasons_active", gpu.clock_event_reasons_active);
  // One word for what the GPU is doing (nvsmi/gpu_state.hpp), the same the views show.
  field(json, "state", std::string(gpu_state_key(gpu_state(gpu))));
  for (const ExtraField &extra : gpu.extras)
    field(json, extra.name, extra.value);
}

// The machine beside the GPUs; null for a recording, which was not taken here.
void write_host(JsonWriter &json, const std::optional<Host> &host) {
  json.key("host");
  if (!host) {
    json.null();
    return;
  }
  json.begin_object();
  field(json, "hostname", host->hostname);
  field(json, "cpu_count", host->cpu_count);
  field(json, "cpu_percent", host->cpu_percent);
  field(json, "load1", host->load1);
  field(json, "memory_total_mib", host->memory_total_mib);
  field(json, "memory_used_mib", host->memory_used_mib);
  json.end_object();
}

} // namespace

std::string format_json(const Snapshot &snapshot) {
  std::string out;
  out.reserve(800 + 1100 * snapshot.gpus.size());
  JsonWriter json(out);
  json.begin_object();
  field(json, "schema", std::string("nvsmi-agent.snapshot/1"));
  field(json, "source", std::string(snapshot.source == Source::xml ? "xml" : "csv"));
  json.key("timestamp");
  if (snapshot.timestamp)
    json.value(to_iso8601(*snapshot.timestamp));
  else
    json.null();
  field(json, "driver_version", snapshot.driver_version);
  field(json, "cuda_version", snapshot.cuda_version);
  json.key("gpus");
  json.begin_array();
  for (const Gpu &gpu : snapshot.gpus) {
    json.begin_object();
    write_gpu(json, gpu);
    json.end_object();
  }
  json.end_array();
  write_host(json, snapshot.host);
  json.end_object();
  return out;
}

} // namespace nvsmi
