#include "formats/formats.hpp"

#include "core/command_text.hpp"

#include "nvsmi/gpu_fields.hpp"
#include "nvsmi/gpu_state.hpp"
#include "nvsmi/timestamp.hpp"
#include "nvsmi/usage_counters.hpp"

#include "formats/fleet_health.hpp"
#include "formats/json_writer.hpp"

#include <cmath>
#include <ctime>

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

void write_ecc(JsonWriter &json, std::string_view scope, const EccErrorCounts &counts) {
  json.key(scope);
  json.begin_object();
  field(json, "corrected", counts.corrected);
  field(json, "uncorrected", counts.uncorrected);
  json.end_object();
}

// The field table's fields that the JSON puts at `place`, in the table's order.
void write_table_fields(JsonWriter &json, const Gpu &gpu, JsonPlace place) {
  for (const GpuField &each : gpu_fields())
    if (each.json_place == place)
      each.with_reading(gpu, [&](const auto &value) { field(json, each.json_key, value); });
}

void write_health(JsonWriter &json, const Gpu &gpu) {
  const GpuHealth &h = gpu.health;
  json.key("health");
  json.begin_object();
  field(json, "ecc_enabled", h.ecc_enabled);
  field(json, "ecc_pending_enabled", h.ecc_pending_enabled);
  json.key("ecc_errors");
  json.begin_object();
  write_ecc(json, "volatile", h.ecc_volatile);
  write_ecc(json, "aggregate", h.ecc_aggregate);
  json.end_object();
  json.key("retired_pages");
  json.begin_object();
  field(json, "single_bit", h.retired_pages_single_bit);
  field(json, "double_bit", h.retired_pages_double_bit);
  field(json, "pending", h.retired_pages_pending);
  json.end_object();
  json.key("remapped_rows");
  json.begin_object();
  field(json, "correctable", h.remapped_rows_correctable);
  field(json, "uncorrectable", h.remapped_rows_uncorrectable);
  field(json, "pending", h.remapped_rows_pending);
  field(json, "failure", h.remapped_rows_failure);
  json.end_object();
  json.key("clock_event_reasons");
  if (!gpu.clock_event_reasons_reported && !gpu.clock_event_reasons_active) {
    json.null();
  } else {
    json.begin_object();
    for (const auto &[reason, active] : clock_event_reasons(gpu))
      field(json, reason, active);
    json.end_object();
  }
  json.key("pcie");
  json.begin_object();
  field(json, "link_gen", h.pcie_link_gen);
  field(json, "link_gen_max", h.pcie_link_gen_max);
  field(json, "link_width", h.pcie_link_width);
  field(json, "link_width_max", h.pcie_link_width_max);
  write_table_fields(json, gpu, JsonPlace::health_pcie);
  json.end_object();
  write_table_fields(json, gpu, JsonPlace::health);
  json.end_object();
}

// Null where the kernel log was not read, so that no Xid reads as none.
void write_xids(JsonWriter &json, const Snapshot &snapshot, std::size_t position) {
  json.key("xid");
  if (!xids_known(snapshot)) {
    json.null();
    return;
  }
  GpuXids xids = gpu_xids(snapshot, position);
  json.begin_object();
  field(json, "total", xids.total);
  json.key("counts");
  json.begin_object();
  for (const auto &[xid, count] : xids.counts)
    field(json, std::to_string(xid), count);
  json.end_object();
  json.key("last");
  if (!xids.last) {
    json.null();
  } else {
    json.begin_object();
    field(json, "xid", xids.last->xid);
    field(json, "message", xids.last->last_message);
    field(json, "seen", xids.last->last_seen);
    json.end_object();
  }
  json.end_object();
}

// The batch job that holds the GPU (host/job_mapping.hpp): null where none does; absent where the
// job mapping folder was not read, since then nobody knows. "since" is when the prolog wrote its
// record (the file's mtime), in UTC.
void write_allocation(JsonWriter &json, const Snapshot &snapshot,
                      const std::optional<Allocation> &held) {
  if (!snapshot.allocations_read)
    return;
  json.key("allocation");
  if (!held) {
    json.null();
    return;
  }
  const Allocation &allocation = *held;
  json.begin_object();
  field(json, "scheduler", allocation.scheduler);
  field(json, "job_id", allocation.job_id);
  field(json, "user", allocation.user);
  field(json, "account", allocation.account);
  std::time_t since = static_cast<std::time_t>(allocation.since_epoch_s);
  std::tm utc{};
  if (::gmtime_r(&since, &utc)) {
    Timestamp stamp{utc.tm_year + 1900, utc.tm_mon + 1, utc.tm_mday,  utc.tm_hour,
                    utc.tm_min,         utc.tm_sec,     std::nullopt, 0};
    field(json, "since", to_iso8601(stamp));
  } else {
    field(json, "since", Text());
  }
  field(json, "held_s", allocation.held_s);
  json.end_object();
}

// A long run's totals for the GPU (nvsmi/usage_counters.hpp), to the millisecond and millijoule;
// absent from a one-shot sample, and each pair absent until its reading was known once.
void write_counters(JsonWriter &json, const Gpu &gpu) {
  if (!gpu.counters)
    return;
  const GpuCounters &c = *gpu.counters;
  json.key("counters");
  json.begin_object();
  for (const CounterField &counter : counter_fields())
    if (const std::optional<double> &value = c.*counter.member)
      field(json, counter.json_key, std::round(*value * 1000) / 1000);
  json.end_object();
}

void write_gpu(JsonWriter &json, const Snapshot &snapshot, std::size_t position) {
  const Gpu &gpu = snapshot.gpus[position];
  field(json, "index", gpu.index);
  field(json, "uuid", gpu.uuid);
  field(json, "name", gpu.name);
  field(json, "pci_bus_id", gpu.pci_bus_id);
  write_table_fields(json, gpu, JsonPlace::gpu);
  json.key("clocks_mhz");
  json.begin_object();
  write_table_fields(json, gpu, JsonPlace::gpu_clocks);
  json.end_object();
  field(json, "mig_enabled", gpu.mig_enabled);
  list_or_null(json, "mig_devices", gpu.mig_devices, [&](const MigDevice &device) {
    field(json, "index", device.index);
    field(json, "gpu_instance_id", device.gpu_instance_id);
    field(json, "compute_instance_id", device.compute_instance_id);
    field(json, "memory_total_mib", device.memory_total_mib);
    field(json, "memory_used_mib", device.memory_used_mib);
    field(json, "memory_free_mib", device.memory_free_mib);
    // From `nvidia-smi -L` where it was read: what CUDA_VISIBLE_DEVICES takes, and the profile.
    field(json, "uuid", device.uuid);
    field(json, "profile", device.profile);
    field(json, "state", std::string(gpu_state_key(mig_state(gpu, device))));
    write_allocation(json, snapshot, device.allocation); // its `<GPU>.<GPU instance>` record
    // Who holds it: its processes (null where that cannot be told: instance_processes), each with
    // the fields a person acts on; the GPU's "processes" has each in full.
    std::optional<std::vector<const Process *>> holders = instance_processes(gpu, device);
    if (!holders) {
      field(json, "holders", Text());
      return;
    }
    json.key("holders");
    json.begin_array();
    for (const Process *process : *holders) {
      json.begin_object();
      field(json, "pid", process->pid);
      field(json, "user", process->user);
      field(json, "program", process_name(*process));
      json.end_object();
    }
    json.end_array();
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
    field(json, "utilization_age_seconds", process.utilization_age_seconds);
    field(json, "user", process.user);
    field(json, "uid", process.uid);
    field(json, "command", process.command);
    // The name every screen gives it (`train.py` for `python3 -u train.py`), from the command
    // line, else nvidia-smi's name.
    field(json, "program", process_name(process));
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
  field(json, "lost_reason", gpu.lost_reason);
  field(json, "failure", gpu_failure(gpu));
  // Where "failure" is an earlier sample's, its reading unknown now: when that sample was taken.
  std::optional<Timestamp> as_of = gpu_failure_as_of(gpu);
  field(json, "failure_as_of", as_of ? Text(to_iso8601(*as_of)) : Text());
  write_health(json, gpu);
  write_allocation(json, snapshot, gpu.allocation);
  write_xids(json, snapshot, position);
  write_counters(json, gpu);
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
  field(json, "disk_read_bytes_per_second", host->disk_read_bytes_per_second);
  field(json, "disk_write_bytes_per_second", host->disk_write_bytes_per_second);
  field(json, "network_receive_bytes_per_second", host->network_receive_bytes_per_second);
  field(json, "network_send_bytes_per_second", host->network_send_bytes_per_second);
  json.end_object();
}

// What the agent read of the kernel log; `unmatched` holds the Xids of devices that are no GPU
// of the sample (an NVSwitch, a GPU gone from nvidia-smi's list), which no GPU's "xid" counts.
void write_kernel_log(JsonWriter &json, const Snapshot &snapshot) {
  json.key("kernel_log");
  if (!snapshot.kernel_log) {
    json.null();
    return;
  }
  const KernelLog &log = *snapshot.kernel_log;
  json.begin_object();
  field(json, "source", log.source);
  field(json, "readable", log.readable);
  field(json, "error", log.error);
  json.key("unmatched");
  json.begin_array();
  if (log.readable)
    for (const XidTally &tally : log.xids) {
      if (xid_gpu(snapshot, tally))
        continue;
      json.begin_object();
      field(json, "pci_device", tally.pci_device);
      field(json, "xid", tally.xid);
      field(json, "count", tally.count);
      field(json, "last_message", tally.last_message);
      field(json, "last_seen", tally.last_seen);
      json.end_object();
    }
  json.end_array();
  json.end_object();
}

// Rounded to the millisecond: the clock behind it ticks no finer, and the line stays short.
double millis(double seconds) { return std::round(seconds * 1000) / 1000; }

std::optional<std::int64_t> whole(const std::optional<std::uint64_t> &number) {
  if (!number)
    return std::nullopt;
  return static_cast<std::int64_t>(*number);
}

// The monitor's own cost, where the command attached it (docs/WATCH.md): absent otherwise.
void write_agent_cost(JsonWriter &json, const AgentCost &cost) {
  json.key("agent");
  json.begin_object();
  field(json, "cpu_seconds", millis(cost.cpu_seconds));
  field(json, "memory_bytes", whole(cost.memory_bytes));
  json.key("core_percent");
  if (cost.core_percent)
    json.value(std::round(*cost.core_percent * 100) / 100);
  else
    json.null();
  field(json, "window_seconds", std::round(cost.window_seconds * 10) / 10);
  json.key("streams");
  json.begin_array();
  for (const StreamCost &stream : cost.streams) {
    json.begin_object();
    field(json, "stream", stream.stream);
    field(json, "cpu_seconds", millis(stream.cpu_seconds));
    field(json, "memory_bytes", whole(stream.memory_bytes));
    field(json, "starts", static_cast<std::int64_t>(stream.starts));
    json.key("interval_seconds");
    if (stream.interval_seconds)
      json.value(*stream.interval_seconds);
    else
      json.null();
    json.end_object();
  }
  json.end_array();
  json.key("budget_percent");
  if (cost.budget_percent)
    json.value(*cost.budget_percent);
  else
    json.null();
  json.key("budget_judged_percent");
  if (cost.budget_judged_percent)
    json.value(std::round(*cost.budget_judged_percent * 100) / 100);
  else
    json.null();
  json.key("budget_steps");
  json.begin_array();
  for (const std::string &step : cost.budget_steps)
    json.value(step);
  json.end_array();
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
  // Only on a first sample that went out without its process lists (docs/WATCH.md).
  if (snapshot.processes_unknown_reason)
    field(json, "processes_unknown_reason", snapshot.processes_unknown_reason);
  json.key("gpus");
  json.begin_array();
  for (std::size_t i = 0; i < snapshot.gpus.size(); ++i) {
    json.begin_object();
    write_gpu(json, snapshot, i);
    json.end_object();
  }
  json.end_array();
  write_host(json, snapshot.host);
  write_kernel_log(json, snapshot);
  if (snapshot.agent)
    write_agent_cost(json, *snapshot.agent);
  json.end_object();
  return out;
}

} // namespace nvsmi
