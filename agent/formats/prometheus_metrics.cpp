#include "formats/prometheus_metrics.hpp"

#include "core/closest_name.hpp"

#include "formats/prometheus_dcgm.hpp"
#include "formats/prometheus_health.hpp"
#include "formats/prometheus_mig.hpp"
#include "formats/prometheus_text.hpp"

#include "nvsmi/gpu_fields.hpp"
#include "nvsmi/usage_counters.hpp"
#include "nvsmi/utf8.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <vector>

namespace nvsmi {
namespace {

// A reading in nvidia-smi's unit as Prometheus's base unit (nvsmi/gpu_fields.hpp), or nullopt.
template <typename T> std::optional<double> in_base_unit(const std::optional<T> &value, Unit unit) {
  if (!value)
    return std::nullopt;
  return prometheus_value(unit, static_cast<double>(*value));
}

// The field table's families of the GPU's own readings (its health's are written with the rest of
// its health, prometheus_health.cpp), in the table's order: fields next to each other with one
// family name are that family's series for each GPU, told apart by their label.
void write_gpu_reading_metrics(const Snapshot &snapshot, const std::vector<std::string> &labels,
                               MetricsOut &out) {
  const std::vector<GpuField> &fields = gpu_fields();
  for (std::size_t first = 0; first < fields.size();) {
    std::size_t end = first + 1;
    while (end < fields.size() &&
           std::string_view(fields[end].prometheus_name) == fields[first].prometheus_name)
      ++end;
    const GpuField &head = fields[first];
    if (head.part == FieldPart::health || *head.prometheus_name == '\0') {
      first = end;
      continue;
    }
    Family family(head.prometheus_name, head.prometheus_help, head.prometheus_type);
    for (std::size_t i = 0; i < snapshot.gpus.size(); ++i)
      for (std::size_t f = first; f < end; ++f) {
        const GpuField &field = fields[f];
        std::string series = labels[i];
        if (*field.prometheus_label != '\0')
          append_label(series, field.prometheus_label, std::string(field.prometheus_label_value));
        std::optional<double> value;
        if (field.prometheus_derived)
          value = field.prometheus_derived(snapshot.gpus[i]);
        else if (std::optional<double> number = field.number_in(snapshot.gpus[i]))
          value = prometheus_value(field.unit, *number);
        family.add(series, value);
      }
    family.write(out);
    first = end;
  }
}

// A long run's totals (nvsmi/usage_counters.hpp): counters from every sample the agent read, so
// that rate(busy) / rate(sampled) is the exact mean utilization between any two scrapes. Each
// pair is absent until its reading was known once; a one-shot sample has none.
void write_counter_metrics(const Snapshot &snapshot, const std::vector<std::string> &labels,
                           MetricsOut &out) {
  for (const CounterField &counter : counter_fields()) {
    Family family(counter.prometheus_name, counter.prometheus_help, "counter");
    for (std::size_t i = 0; i < snapshot.gpus.size(); ++i)
      if (const std::optional<GpuCounters> &c = snapshot.gpus[i].counters)
        family.add(labels[i], (*c).*counter.member);
    family.write(out);
  }
  // nvidia-smi has no energy counter of the driver's to read (nvsmi/snapshot.hpp, GpuCounters).
  Family source("nvsmi_gpu_energy_source_info",
                "Constant 1: where nvsmi_gpu_energy_joules_total comes from (source).");
  for (std::size_t i = 0; i < snapshot.gpus.size(); ++i) {
    const std::optional<GpuCounters> &c = snapshot.gpus[i].counters;
    if (!c || !c->energy_joules)
      continue;
    std::string info = labels[i];
    append_label(info, "source", std::string("integrated_power_draw"));
    source.add(info, 1.0);
  }
  source.write(out);
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
                           MetricsOut &out) {
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
      memory.add(labels, in_base_unit(process.used_memory_mib, Unit::mib));
      sm.add(labels, in_base_unit(process.sm_utilization_percent, Unit::percent));
      bandwidth.add(labels, in_base_unit(process.memory_utilization_percent, Unit::percent));
    }
  }
  memory.write(out);
  sm.write(out);
  bandwidth.write(out);
}

// Per user, over the processes whose user is known, the users beyond the cap as one (UserLabels).
// Keyed by the label's value, so that two names that differ only in bytes that are not UTF-8 make
// one series, not two of the same labels.
void write_user_metrics(const Snapshot &snapshot, const UserLabels &user_labels, MetricsOut &out) {
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
      std::optional<std::string> user = user_labels.label(process.user);
      if (!user)
        continue;
      Totals &totals = users[*user];
      totals.gpus.insert(gpu.index);
      if (process.used_memory_mib)
        totals.memory_mib += static_cast<double>(*process.used_memory_mib);
      else
        totals.memory_known = false;
    }
  }
  Family memory("nvsmi_user_gpu_memory_used_bytes",
                "Framebuffer memory used by a user's processes on all GPUs, in bytes (users "
                "beyond serve's --metrics-users summed as user=\"(other users)\").");
  Family gpus("nvsmi_user_gpus", "GPUs on which a user has at least one process (users beyond "
                                 "serve's --metrics-users: GPUs on which any of them has one).");
  for (const auto &[user, totals] : users) {
    std::string labels;
    append_label(labels, "user", user);
    if (totals.memory_known)
      memory.add(labels, prometheus_value(Unit::mib, totals.memory_mib));
    gpus.add(labels, static_cast<double>(totals.gpus.size()));
  }
  memory.write(out);
  gpus.write(out);
}

// The machine's own figures; none at all where the snapshot has no host (a recording).
void write_host_metrics(const std::optional<Host> &host, MetricsOut &out) {
  if (!host)
    return;
  Family cpu("nvsmi_host_cpu_utilization_ratio",
             "Share of all the host's CPU time that was busy since the previous sample (0-1).");
  cpu.add("", in_base_unit(host->cpu_percent, Unit::percent));
  cpu.write(out);
  Family used("nvsmi_host_memory_used_bytes",
              "Host memory in use (total less available) in bytes.");
  used.add("", in_base_unit(host->memory_used_mib, Unit::mib));
  used.write(out);
  Family total("nvsmi_host_memory_total_bytes", "Host memory in bytes.");
  total.add("", in_base_unit(host->memory_total_mib, Unit::mib));
  total.write(out);
  // Rates since the previous sample, as the CPU's share is: a gauge of what the sample saw, absent
  // where it is unknown (the first sample, a counter that went back).
  struct Rate {
    const char *name, *help;
    RealReading Host::*reading;
  };
  for (const Rate &rate : {
           Rate{"nvsmi_host_disk_read_bytes_per_second",
                "Bytes a second read from the host's whole disks since the previous sample.",
                &Host::disk_read_bytes_per_second},
           Rate{"nvsmi_host_disk_write_bytes_per_second",
                "Bytes a second written to the host's whole disks since the previous sample.",
                &Host::disk_write_bytes_per_second},
           Rate{"nvsmi_host_network_receive_bytes_per_second",
                "Bytes a second received by the host's network interfaces (NICs, not bridges or "
                "veths) since the previous sample.",
                &Host::network_receive_bytes_per_second},
           Rate{"nvsmi_host_network_send_bytes_per_second",
                "Bytes a second sent by the host's network interfaces (NICs, not bridges or "
                "veths) since the previous sample.",
                &Host::network_send_bytes_per_second},
       }) {
    Family family(rate.name, rate.help);
    family.add("", (*host).*rate.reading);
    family.write(out);
  }
}

} // namespace

namespace {

void write_snapshot_metrics(const Snapshot &snapshot, MetricsOut &out) {
  std::vector<std::string> labels;
  for (const Gpu &gpu : snapshot.gpus)
    labels.push_back(gpu_labels(gpu));

  if (out.selection.names == MetricNames::dcgm) {
    write_dcgm_metrics(snapshot, out);
    // What the exporter has no family for and costs nothing more: who holds the GPUs (their `gpu`
    // label is the exporter's too). The host's and the fleet health's families stay ours alone.
    if (out.selection.processes)
      write_process_metrics(snapshot, labels, out);
    write_user_metrics(snapshot, UserLabels(snapshot, out.selection.users), out);
    return;
  }
  write_gpu_reading_metrics(snapshot, labels, out);
  write_counter_metrics(snapshot, labels, out);

  Family info("nvsmi_gpu_info", "Constant 1, labelled with what identifies the GPU.");
  for (std::size_t i = 0; i < snapshot.gpus.size(); ++i) {
    std::string info_labels = labels[i];
    append_label(info_labels, "driver_version", snapshot.driver_version);
    append_label(info_labels, "pci_bus_id", snapshot.gpus[i].pci_bus_id);
    info.add(info_labels, 1.0);
  }
  info.write(out);
  // A pid label makes a new series with every process: only where serve is asked for them.
  if (out.selection.processes)
    write_process_metrics(snapshot, labels, out);
  UserLabels user_labels(snapshot, out.selection.users);
  write_user_metrics(snapshot, user_labels, out);
  write_host_metrics(snapshot.host, out);
  write_fleet_health_metrics(snapshot, labels, user_labels, out);
  write_mig_metrics(snapshot, user_labels, out);
}

// The monitor's own cost (docs/METRICS.md): the agent's process, and each nvidia-smi stream's
// runs, ended and running.
void write_cost_metrics(const AgentCost &cost, MetricsOut &out) {
  auto labels_of = [](const StreamCost &stream) {
    std::string labels;
    append_label(labels, "process", std::string("nvidia-smi"));
    append_label(labels, "stream", stream.stream);
    return labels;
  };
  std::string agent;
  append_label(agent, "process", std::string("agent"));
  Family cpu("nvsmi_agent_cpu_seconds_total",
             "CPU time, user and system, of the agent and of each nvidia-smi stream it runs (every "
             "run so far).",
             "counter");
  cpu.add(agent, cost.cpu_seconds);
  for (const StreamCost &stream : cost.streams)
    cpu.add(labels_of(stream), stream.cpu_seconds);
  cpu.write(out);
  Family memory("nvsmi_agent_memory_bytes",
                "Resident memory of the agent and of each nvidia-smi stream's running process.");
  auto bytes = [](const std::optional<std::uint64_t> &value) -> std::optional<double> {
    if (!value)
      return std::nullopt;
    return static_cast<double>(*value);
  };
  memory.add(agent, bytes(cost.memory_bytes));
  for (const StreamCost &stream : cost.streams)
    memory.add(labels_of(stream), bytes(stream.memory_bytes));
  memory.write(out);
  Family starts("nvsmi_agent_nvidia_smi_starts_total", "Times each nvidia-smi stream was started.",
                "counter");
  for (const StreamCost &stream : cost.streams) {
    std::string labels;
    append_label(labels, "stream", stream.stream);
    starts.add(labels, static_cast<double>(stream.starts));
  }
  starts.write(out);
  Family interval("nvsmi_agent_stream_interval_seconds",
                  "Seconds between each running nvidia-smi loop's samples, in force now "
                  "(--cpu-budget may have lengthened them).");
  for (const StreamCost &stream : cost.streams) {
    std::string labels;
    append_label(labels, "stream", stream.stream);
    interval.add(labels, stream.interval_seconds);
  }
  interval.write(out);
  Family budget("nvsmi_agent_cpu_budget_percent",
                "--cpu-budget: the share of one core the agent and its nvidia-smi keep to.");
  budget.add("", cost.budget_percent);
  budget.write(out);
  Family steps("nvsmi_agent_cpu_budget_steps",
               "Steps --cpu-budget has taken to keep to it (slower or stopped streams, a longer "
               "interval); 0: none.");
  if (cost.budget_percent)
    steps.add("", static_cast<double>(cost.budget_steps.size()));
  steps.write(out);
  Family judged("nvsmi_agent_cpu_budget_judged_percent",
                "The whole cost (the agent and its nvidia-smi) over the last minute --cpu-budget "
                "judged, in percent of one core.");
  judged.add("", cost.budget_judged_percent);
  judged.write(out);
}

void write_health_metrics(const AgentHealth &health, MetricsOut &out) {
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
  if (health.cost)
    write_cost_metrics(*health.cost, out);
}

} // namespace

std::string format_snapshot_metrics(const Snapshot &snapshot, const MetricsSelection &selection) {
  MetricsOut out(selection);
  write_snapshot_metrics(snapshot, out);
  return std::move(out.text);
}

std::string format_health_metrics(const AgentHealth &health, const MetricsSelection &selection) {
  MetricsOut out(selection);
  write_health_metrics(health, out);
  return std::move(out.text);
}

std::vector<std::string> metric_family_names() {
  // Every writer, on a sample that reaches each family's write (a host, a readable kernel log,
  // every family turned on), noting the names offered: the writers are the one list.
  static const std::vector<std::string> names = [] {
    MetricsSelection everything;
    everything.processes = true;
    std::set<std::string> offered;
    MetricsOut out(everything);
    out.offered = &offered;
    Snapshot reaching_all;
    reaching_all.host = Host{};
    reaching_all.kernel_log = KernelLog{};
    reaching_all.kernel_log->readable = true;
    write_snapshot_metrics(reaching_all, out);
    everything.names = MetricNames::dcgm;
    write_snapshot_metrics(reaching_all, out);
    AgentHealth with_cost;
    with_cost.cost = AgentCost{};
    write_health_metrics(with_cost, out);
    return std::vector<std::string>(offered.begin(), offered.end());
  }();
  return names;
}

std::string metrics_include_problem(const std::string &pattern) {
  bool prefix = !pattern.empty() && pattern.back() == '*';
  std::string stem = prefix ? pattern.substr(0, pattern.size() - 1) : pattern;
  auto name_character = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == ':';
  };
  // The value is repeated back only when it is a name: it may be any bytes, and reaches a terminal.
  if ((stem.empty() && !prefix) || !std::all_of(stem.begin(), stem.end(), name_character))
    return "not a metric family name (letters, digits, '_' and ':', or a prefix of them ending "
           "in '*')";
  const std::vector<std::string> &known = metric_family_names();
  if (std::any_of(known.begin(), known.end(),
                  [&](const std::string &family) { return family_matches(pattern, family); }))
    return {};
  std::string said = std::string("no metric family ") +
                     (prefix ? "starts with \"" + stem : "is \"" + pattern) + "\"";
  std::string meant = prefix ? std::string() : closest_name(pattern, known);
  if (!meant.empty())
    return said + "; did you mean '" + meant + "'? (docs/METRICS.md lists every family)";
  // The families whose names begin with the most of its words ("nvsmi_" of "nvsmi_nothing_*"):
  // all of them would not fit a line.
  auto shared_words = [&](const std::string &family) {
    std::size_t words = 0;
    for (std::size_t i = 0; i < stem.size() && i < family.size() && stem[i] == family[i]; ++i)
      if (stem[i] == '_')
        words = i + 1;
    return words;
  };
  std::size_t most = 0;
  for (const std::string &family : known)
    most = std::max(most, shared_words(family));
  std::string list;
  for (const std::string &family : known)
    if (shared_words(family) == most)
      list += (list.empty() ? "" : ", ") + family;
  return said + " (the families" +
         (most ? " that start with \"" + stem.substr(0, most) + "\"" : std::string()) + ": " +
         list + ")";
}

} // namespace nvsmi
