#include "formats/prometheus_health.hpp"

#include "formats/fleet_health.hpp"
#include "formats/prometheus_text.hpp"

#include "nvsmi/gpu_fields.hpp"
#include "nvsmi/gpu_state.hpp"

#include <cstdint>
#include <functional>
#include <map>

namespace nvsmi {
namespace {

// Most serious first, as gpu_state decides them, so that a dashboard lists them in that order.
constexpr GpuState every_state[] = {
    GpuState::lost,           GpuState::failing,   GpuState::hot,    GpuState::at_power_limit,
    GpuState::allocated_idle, GpuState::idle_held, GpuState::in_use, GpuState::idle,
    GpuState::free,           GpuState::unknown};

std::optional<double> plain(const Reading &value) {
  if (!value)
    return std::nullopt;
  return static_cast<double>(*value);
}

std::string with(std::string labels, const char *name, const std::string &value) {
  append_label(labels, name, value);
  return labels;
}

void write_state_metrics(const Snapshot &snapshot, const std::vector<std::string> &labels,
                         const UserLabels &user_labels, MetricsOut &out) {
  Family state("nvsmi_gpu_state",
               "1 for the one word that says what the GPU is doing (lost, failing, hot, "
               "at_power_limit, allocated_idle, idle_but_held, in_use, idle, free, unknown), 0 "
               "for each other word, so that a count of GPUs in a state is 0 rather than empty.");
  for (std::size_t i = 0; i < snapshot.gpus.size(); ++i) {
    GpuState now = gpu_state(snapshot.gpus[i]);
    for (GpuState each : every_state)
      state.add(with(labels[i], "state", std::string(gpu_state_key(each))), each == now ? 1 : 0);
  }
  state.write(out);

  Family lost("nvsmi_gpu_lost",
              "1 when nvidia-smi could not read the GPU (fallen off the bus, lost, needs a reset: "
              "see the JSON's lost_reason and the kernel log), 0 when it read it. A lost GPU's "
              "other readings are absent.");
  for (const Gpu &gpu : snapshot.gpus) {
    std::string gpu_and_bus;
    append_label(gpu_and_bus, "gpu", std::to_string(gpu.index));
    append_label(gpu_and_bus, "pci_bus_id", gpu.pci_bus_id);
    lost.add(gpu_and_bus, gpu.lost_reason ? 1 : 0);
  }
  lost.write(out);

  // Per GPU and user, over the compute processes whose user is known: graphics-only processes (a
  // desktop's Xorg) hold no GPU for compute work, as gpu_state counts them. The users beyond the
  // cap are one series per GPU (UserLabels).
  Family users("nvsmi_gpu_user_processes",
               "Compute processes of a user on the GPU (graphics-only processes not counted; "
               "users beyond serve's --metrics-users summed as user=\"(other users)\").");
  for (std::size_t i = 0; i < snapshot.gpus.size(); ++i) {
    const Gpu &gpu = snapshot.gpus[i];
    if (!gpu.processes)
      continue;
    std::map<std::string, int> counts; // by the label's value: one series per label set
    for (const Process &process : *gpu.processes)
      if (for_compute(process))
        if (std::optional<std::string> user = user_labels.label(process.user))
          ++counts[*user];
    for (const auto &[user, count] : counts)
      users.add(with(labels[i], "user", user), count);
  }
  users.write(out);

  // Bounded by the running jobs: a series per GPU that a job holds, gone when the job ends.
  Family allocations("nvsmi_gpu_allocation_info",
                     "1 for each GPU a batch job holds (docs/SLURM.md): its job id, and its user "
                     "where serve shows users. No series for a GPU no job holds.");
  for (std::size_t i = 0; i < snapshot.gpus.size(); ++i) {
    const std::optional<Allocation> &allocation = snapshot.gpus[i].allocation;
    if (!allocation)
      continue;
    std::string series = with(labels[i], "job_id", allocation->job_id);
    append_label(series, "user", allocation->user);
    allocations.add(series, 1);
  }
  allocations.write(out);
}

// A family with one series per GPU, from one reading of its health.
struct HealthGauge {
  const char *name, *help;
  std::function<std::optional<double>(const Gpu &)> value;
};

void write_gauge(const HealthGauge &spec, const Snapshot &snapshot,
                 const std::vector<std::string> &labels, MetricsOut &out) {
  Family family(spec.name, spec.help);
  for (std::size_t i = 0; i < snapshot.gpus.size(); ++i)
    family.add(labels[i], spec.value(snapshot.gpus[i]));
  family.write(out);
}

void write_memory_health(const Snapshot &snapshot, const std::vector<std::string> &labels,
                         MetricsOut &out) {
  write_gauge({"nvsmi_gpu_ecc_enabled", "1 when ECC is on (current mode), 0 when off.",
               [](const Gpu &g) { return flag_value(g.health.ecc_enabled); }},
              snapshot, labels, out);
  write_gauge({"nvsmi_gpu_ecc_pending_enabled",
               "1 when ECC will be on after the next reboot, 0 when off (pending mode).",
               [](const Gpu &g) { return flag_value(g.health.ecc_pending_enabled); }},
              snapshot, labels, out);

  Family ecc("nvsmi_gpu_ecc_errors_total",
             "ECC errors by error_type (corrected, uncorrected) and scope (volatile: since the "
             "driver was loaded; aggregate: over the GPU's life). Uncorrected errors kill the "
             "job that met them; the GPU needs a reset.",
             "counter");
  for (std::size_t i = 0; i < snapshot.gpus.size(); ++i) {
    const GpuHealth &h = snapshot.gpus[i].health;
    const std::pair<const char *, const EccErrorCounts &> scopes[] = {
        {"volatile", h.ecc_volatile}, {"aggregate", h.ecc_aggregate}};
    for (const auto &[scope, counts] : scopes) {
      std::string corrected = with(labels[i], "error_type", "corrected");
      std::string uncorrected = with(labels[i], "error_type", "uncorrected");
      ecc.add(with(corrected, "scope", scope), plain(counts.corrected));
      ecc.add(with(uncorrected, "scope", scope), plain(counts.uncorrected));
    }
  }
  ecc.write(out);

  Family retired("nvsmi_gpu_retired_pages",
                 "Framebuffer pages retired by cause (single_bit_ecc, double_bit_ecc); GPUs "
                 "before Ampere. Many retired pages: replace the GPU.");
  for (std::size_t i = 0; i < snapshot.gpus.size(); ++i) {
    const GpuHealth &h = snapshot.gpus[i].health;
    retired.add(with(labels[i], "cause", "single_bit_ecc"), plain(h.retired_pages_single_bit));
    retired.add(with(labels[i], "cause", "double_bit_ecc"), plain(h.retired_pages_double_bit));
  }
  retired.write(out);
  write_gauge({"nvsmi_gpu_retired_pages_pending",
               "1 when a page retirement waits for a reboot or GPU reset to take effect.",
               [](const Gpu &g) { return flag_value(g.health.retired_pages_pending); }},
              snapshot, labels, out);

  Family remapped("nvsmi_gpu_remapped_rows",
                  "Memory rows remapped to spares by error_type (correctable, uncorrectable); "
                  "Ampere and later.");
  for (std::size_t i = 0; i < snapshot.gpus.size(); ++i) {
    const GpuHealth &h = snapshot.gpus[i].health;
    remapped.add(with(labels[i], "error_type", "correctable"), plain(h.remapped_rows_correctable));
    remapped.add(with(labels[i], "error_type", "uncorrectable"),
                 plain(h.remapped_rows_uncorrectable));
  }
  remapped.write(out);
  write_gauge({"nvsmi_gpu_remapped_rows_pending",
               "1 when a row remap is pending: a GPU reset is needed to complete it.",
               [](const Gpu &g) { return flag_value(g.health.remapped_rows_pending); }},
              snapshot, labels, out);
  write_gauge({"nvsmi_gpu_remapped_rows_failure",
               "1 when a row remap failed (no spare rows left): the GPU should be replaced.",
               [](const Gpu &g) { return flag_value(g.health.remapped_rows_failure); }},
              snapshot, labels, out);
}

// A family per numeric health field of the table that names one (nvsmi/gpu_fields.hpp); the
// GPU's own readings are written first of all (prometheus_metrics.cpp).
void write_field_table_metrics(const Snapshot &snapshot, const std::vector<std::string> &labels,
                               MetricsOut &out) {
  for (const GpuField &field : gpu_fields()) {
    if (field.part != FieldPart::health || *field.prometheus_name == '\0' ||
        field.kind == FieldKind::text)
      continue;
    Family family(field.prometheus_name, field.prometheus_help, field.prometheus_type);
    for (std::size_t i = 0; i < snapshot.gpus.size(); ++i) {
      std::optional<double> value = field.number_in(snapshot.gpus[i]);
      family.add(labels[i], value ? std::optional<double>(prometheus_value(field.unit, *value))
                                  : std::nullopt);
    }
    family.write(out);
  }
}

void write_clock_and_link_health(const Snapshot &snapshot, const std::vector<std::string> &labels,
                                 MetricsOut &out) {
  Family reasons("nvsmi_gpu_clock_event_reason_active",
                 "1 when a clock event (throttle) reason holds the clocks down now, 0 when the "
                 "driver reports it not active. hw_thermal_slowdown or sw_thermal_slowdown for "
                 "long: check cooling; hw_slowdown or hw_power_brake_slowdown: check power.");
  for (std::size_t i = 0; i < snapshot.gpus.size(); ++i)
    for (const auto &[reason, active] : clock_event_reasons(snapshot.gpus[i]))
      reasons.add(with(labels[i], "reason", reason), flag_value(active));
  reasons.write(out);

  const HealthGauge gauges[] = {
      {"nvsmi_gpu_performance_state",
       "Performance state: 0 for P0 (fastest) up to 15 for P15 (slowest).",
       [](const Gpu &g) -> std::optional<double> {
         if (std::optional<int> number = performance_state_number(g.pstate))
           return *number;
         return std::nullopt;
       }},
      {"nvsmi_gpu_pcie_link_generation", "PCIe link generation now (it drops when idle).",
       [](const Gpu &g) { return plain(g.health.pcie_link_gen); }},
      {"nvsmi_gpu_pcie_link_generation_max",
       "Highest PCIe link generation the link can train at (nvidia-smi's maximum).",
       [](const Gpu &g) { return plain(g.health.pcie_link_gen_max); }},
      {"nvsmi_gpu_pcie_link_width",
       "PCIe lanes in use now; fewer than the maximum under load: reseat or check the riser.",
       [](const Gpu &g) { return plain(g.health.pcie_link_width); }},
      {"nvsmi_gpu_pcie_link_width_max",
       "Most PCIe lanes the link can train at (nvidia-smi's maximum).",
       [](const Gpu &g) { return plain(g.health.pcie_link_width_max); }},
  };
  for (const HealthGauge &gauge : gauges)
    write_gauge(gauge, snapshot, labels, out);
  write_field_table_metrics(snapshot, labels, out);
}

void write_recovery_and_xids(const Snapshot &snapshot, const std::vector<std::string> &labels,
                             MetricsOut &out) {
  Family recovery("nvsmi_gpu_recovery_action",
                  "1, labelled with what the driver asks an operator to do: none, gpu_reset, "
                  "node_reboot, drain_p2p, drain_and_reset, or its words in lower_snake_case.");
  for (std::size_t i = 0; i < snapshot.gpus.size(); ++i)
    if (std::optional<std::string> action =
            recovery_action_key(snapshot.gpus[i].health.recovery_action))
      recovery.add(with(labels[i], "action", *action), 1);
  recovery.write(out);

  if (!snapshot.kernel_log)
    return;
  if (snapshot.kernel_log->readable) {
    // Summed by label set: two spellings of one device must not make two series of one name.
    std::vector<std::pair<std::string, std::int64_t>> series;
    std::map<std::string, std::size_t> position;
    for (const XidTally &tally : snapshot.kernel_log->xids) {
      std::string xid_labels;
      if (std::optional<std::size_t> at = xid_gpu(snapshot, tally)) {
        append_label(xid_labels, "gpu", std::to_string(snapshot.gpus[*at].index));
        append_label(xid_labels, "pci_bus_id", snapshot.gpus[*at].pci_bus_id);
      } else {
        append_label(xid_labels, "pci_bus_id", tally.pci_device);
      }
      append_label(xid_labels, "xid", std::to_string(tally.xid));
      auto [found, added] = position.emplace(xid_labels, series.size());
      if (added)
        series.emplace_back(xid_labels, 0);
      series[found->second].second += tally.count;
    }
    Family xids(
        "nvsmi_gpu_xid_errors_total",
        "Xid errors the kernel log holds for the GPU (or another PCI device), by Xid "
        "code. 79: fallen off the bus (restart the node); 46, 48, 62, 64, 74, 95, 109, 119, "
        "120 and others need a GPU reset (NVIDIA's Xid catalog).",
        "counter");
    for (const auto &[xid_labels, count] : series)
      xids.add(xid_labels, static_cast<double>(count));
    xids.write(out);
  }
  Family readable("nvsmi_xid_readable",
                  "1 when the agent reads the kernel log for Xid errors, 0 when it may not "
                  "(nvsmi_gpu_xid_errors_total is then unknown, not zero: give the agent read "
                  "access to /dev/kmsg, CAP_SYSLOG where dmesg_restrict is set, or --kernel-log a "
                  "file it may read).");
  readable.add("", snapshot.kernel_log->readable ? 1 : 0);
  readable.write(out);
}

} // namespace

void write_fleet_health_metrics(const Snapshot &snapshot, const std::vector<std::string> &labels,
                                const UserLabels &user_labels, MetricsOut &out) {
  write_state_metrics(snapshot, labels, user_labels, out);
  write_memory_health(snapshot, labels, out);
  write_clock_and_link_health(snapshot, labels, out);
  write_recovery_and_xids(snapshot, labels, out);
}

} // namespace nvsmi
