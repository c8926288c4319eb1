#include "formats/prometheus_metrics.hpp"

#include "formats/prometheus_health.hpp"
#include "formats/prometheus_text.hpp"

#include "nvsmi/utf8.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <vector>

namespace nvsmi {
namespace {

constexpr double bytes_per_mib = 1024.0 * 1024.0;

template <typename T> std::optional<double> scaled(const std::optional<T> &value, double factor) {
  if (!value)
    return std::nullopt;
  return static_cast<double>(*value) * factor;
}

// A percentage as a ratio, divided rather than multiplied by 0.01: 35% is 0.35, not
// 0.35000000000000003.
template <typename T> std::optional<double> ratio(const std::optional<T> &percent) {
  if (!percent)
    return std::nullopt;
  return static_cast<double>(*percent) / 100;
}

std::optional<double> used_ratio(const Gpu &gpu) {
  if (!gpu.memory_used_mib || !gpu.memory_total_mib || *gpu.memory_total_mib <= 0)
    return std::nullopt;
  return static_cast<double>(*gpu.memory_used_mib) / static_cast<double>(*gpu.memory_total_mib);
}

struct GaugeSpec {
  const char *name, *help;
  std::function<std::optional<double>(const Gpu &)> value;
};

const std::vector<GaugeSpec> &gpu_gauges() {
  static const std::vector<GaugeSpec> specs = {
      {"nvsmi_gpu_temperature_celsius", "GPU core temperature in degrees Celsius.",
       [](const Gpu &g) { return scaled(g.temperature_c, 1); }},
      {"nvsmi_gpu_memory_total_bytes", "Total framebuffer memory in bytes.",
       [](const Gpu &g) { return scaled(g.memory_total_mib, bytes_per_mib); }},
      {"nvsmi_gpu_memory_used_bytes", "Framebuffer memory in use in bytes.",
       [](const Gpu &g) { return scaled(g.memory_used_mib, bytes_per_mib); }},
      {"nvsmi_gpu_memory_free_bytes", "Free framebuffer memory in bytes.",
       [](const Gpu &g) { return scaled(g.memory_free_mib, bytes_per_mib); }},
      {"nvsmi_gpu_memory_used_ratio", "Framebuffer memory in use as a ratio of the total (0-1).",
       used_ratio},
      {"nvsmi_gpu_utilization_ratio",
       "Share of the last sample period in which a kernel ran on the GPU (0-1).",
       [](const Gpu &g) { return ratio(g.utilization_gpu_percent); }},
      {"nvsmi_gpu_memory_utilization_ratio",
       "Share of the last sample period in which device memory was read or written (0-1).",
       [](const Gpu &g) { return ratio(g.utilization_memory_percent); }},
      {"nvsmi_gpu_power_draw_watts", "Power drawn by the board in watts.",
       [](const Gpu &g) { return scaled(g.power_draw_w, 1); }},
      {"nvsmi_gpu_power_limit_watts", "Power management limit in watts.",
       [](const Gpu &g) { return scaled(g.power_limit_w, 1); }},
      {"nvsmi_gpu_fan_speed_ratio", "Intended fan speed as a ratio of its maximum (0-1).",
       [](const Gpu &g) { return ratio(g.fan_speed_percent); }},
  };
  return specs;
}

// A process's series: its GPU's labels, then pid and name, then who runs it and where, each
// label only where known (Prometheus reads an absent label and an empty one alike).
std::string process_labels(const std::string &gpu, const Process &process) {
  std::string labels = gpu;
  append_label(labels, "pid", std::to_string(*process.pid));
  append_label(labels, "process_name", process.name);
  append_label(labels, "user", process.user);
  append_label(labels, "container", process.container);
  append_label(labels, "pod_uid", process.pod_uid);
  return labels;
}

void write_process_metrics(const Snapshot &snapshot, const std::vector<std::string> &gpu_labels,
                           std::string &out) {
  Family memory("nvsmi_gpu_process_memory_used_bytes",
                "Framebuffer memory used by a process in bytes.");
  Family sm("nvsmi_gpu_process_sm_utilization_ratio",
            "Share of the GPU's SM time a process had over nvidia-smi pmon's last interval (0-1).");
  Family bandwidth("nvsmi_gpu_process_memory_utilization_ratio",
                   "Share of the GPU's memory read/write time a process had over nvidia-smi "
                   "pmon's last interval (0-1).");
  for (std::size_t i = 0; i < snapshot.gpus.size(); ++i) {
    if (!snapshot.gpus[i].processes)
      continue;
    for (const Process &process : *snapshot.gpus[i].processes) {
      if (!process.pid)
        continue;
      std::string labels = process_labels(gpu_labels[i], process);
      memory.add(labels, scaled(process.used_memory_mib, bytes_per_mib));
      sm.add(labels, ratio(process.sm_utilization_percent));
      bandwidth.add(labels, ratio(process.memory_utilization_percent));
    }
  }
  memory.write(out);
  sm.write(out);
  bandwidth.write(out);
}

// Per user, over the processes whose user is known. Keyed by the label's value, so that two
// names that differ only in bytes that are not UTF-8 make one series, not two of the same labels.
void write_user_metrics(const Snapshot &snapshot, std::string &out) {
  struct Totals {
    double memory_mib = 0;
    bool memory_known = true; // a part of the processes is not the user's total
    std::set<int> gpus;
  };
  std::map<std::string, Totals> users;
  for (const Gpu &gpu : snapshot.gpus) {
    if (!gpu.processes)
      continue;
    for (const Process &process : *gpu.processes) {
      if (!process.user || process.user->empty())
        continue;
      Totals &totals = users[valid_utf8(*process.user)];
      totals.gpus.insert(gpu.index);
      if (process.used_memory_mib)
        totals.memory_mib += static_cast<double>(*process.used_memory_mib);
      else
        totals.memory_known = false;
    }
  }
  Family memory("nvsmi_user_gpu_memory_used_bytes",
                "Framebuffer memory used by a user's processes on all GPUs, in bytes.");
  Family gpus("nvsmi_user_gpus", "GPUs on which a user has at least one process.");
  for (const auto &[user, totals] : users) {
    std::string labels;
    append_label(labels, "user", user);
    if (totals.memory_known)
      memory.add(labels, totals.memory_mib * bytes_per_mib);
    gpus.add(labels, static_cast<double>(totals.gpus.size()));
  }
  memory.write(out);
  gpus.write(out);
}

// The machine's own figures; none at all where the snapshot has no host (a recording).
void write_host_metrics(const std::optional<Host> &host, std::string &out) {
  if (!host)
    return;
  Family cpu("nvsmi_host_cpu_utilization_ratio",
             "Share of all the host's CPU time that was busy since the previous sample (0-1).");
  cpu.add("", ratio(host->cpu_percent));
  cpu.write(out);
  Family used("nvsmi_host_memory_used_bytes",
              "Host memory in use (total less available) in bytes.");
  used.add("", scaled(host->memory_used_mib, bytes_per_mib));
  used.write(out);
  Family total("nvsmi_host_memory_total_bytes", "Host memory in bytes.");
  total.add("", scaled(host->memory_total_mib, bytes_per_mib));
  total.write(out);
}

} // namespace

std::string format_snapshot_metrics(const Snapshot &snapshot) {
  std::string out;
  std::vector<std::string> labels;
  for (const Gpu &gpu : snapshot.gpus)
    labels.push_back(gpu_labels(gpu));

  for (const GaugeSpec &spec : gpu_gauges()) {
    Family family(spec.name, spec.help);
    for (std::size_t i = 0; i < snapshot.gpus.size(); ++i)
      family.add(labels[i], spec.value(snapshot.gpus[i]));
    family.write(out);
  }

  Family clocks("nvsmi_gpu_clock_hz", "Current clock frequency in hertz, by clock domain.");
  for (std::size_t i = 0; i < snapshot.gpus.size(); ++i) {
    const Clocks &c = snapshot.gpus[i].clocks;
    const std::pair<const char *, const Reading &> domains[] = {{"graphics", c.graphics_mhz},
                                                                {"sm", c.sm_mhz},
                                                                {"memory", c.memory_mhz},
                                                                {"video", c.video_mhz}};
    for (const auto &[domain, mhz] : domains) {
      std::string with_clock = labels[i];
      append_label(with_clock, "clock", std::string(domain));
      clocks.add(with_clock, scaled(mhz, 1e6));
    }
  }
  clocks.write(out);

  Family info("nvsmi_gpu_info", "Constant 1, labelled with what identifies the GPU.");
  for (std::size_t i = 0; i < snapshot.gpus.size(); ++i) {
    std::string info_labels = labels[i];
    append_label(info_labels, "driver_version", snapshot.driver_version);
    append_label(info_labels, "pci_bus_id", snapshot.gpus[i].pci_bus_id);
    info.add(info_labels, 1.0);
  }
  info.write(out);
  write_process_metrics(snapshot, labels, out);
  write_user_metrics(snapshot, out);
  write_host_metrics(snapshot.host, out);
  write_fleet_health_metrics(snapshot, labels, out);
  return out;
}

std::string format_health_metrics(const AgentHealth &health) {
  std::string out;
  Family up("nvsmi_up", "1 when the last sample is younger than three intervals, else 0.");
  up.add("", health.up ? 1.0 : 0.0);
  up.write(out);
  Family last("nvsmi_last_sample_timestamp_seconds",
              "Unix time at which the last good sample arrived.");
  last.add("", health.last_sample_unix_s);
  last.write(out);
  Family errors("nvsmi_sample_errors_total", "Samples lost or runs of nvidia-smi gone wrong.",
                "counter");
  const SamplingCounters &c = health.sampling;
  const std::pair<const char *, std::uint64_t> causes[] = {{"bad_sample", c.bad_samples},
                                                           {"partial_sample", c.partial_samples},
                                                           {"stall", c.stalls},
                                                           {"child_exit", c.child_exits},
                                                           {"spawn_failure", c.spawn_failures}};
  for (const auto &[cause, count] : causes) {
    std::string labels;
    append_label(labels, "cause", std::string(cause));
    errors.add(labels, static_cast<double>(count));
  }
  errors.write(out);
  Family restarts("nvsmi_child_restarts_total", "Times nvidia-smi was started again.", "counter");
  restarts.add("", static_cast<double>(c.restarts));
  restarts.write(out);
  Family samples("nvsmi_history_samples", "Samples kept for /api/v1/history and the dashboard.");
  samples.add("", static_cast<double>(health.history_samples));
  samples.write(out);
  Family bytes("nvsmi_history_bytes",
               "Memory the history holds, counted against its cap (--history-max-mib).");
  bytes.add("", static_cast<double>(health.history_bytes));
  bytes.write(out);
  Family pending("nvsmi_serve_pending_body_bytes",
                 "Bytes of /api/v1/series answers made and not yet sent, bounded (README, serve).");
  pending.add("", static_cast<double>(health.pending_body_bytes));
  pending.write(out);
  return out;
}

} // namespace nvsmi
