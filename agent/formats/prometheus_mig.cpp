#include "formats/prometheus_mig.hpp"

#include "nvsmi/gpu_state.hpp"

#include <cstddef>
#include <map>
#include <optional>
#include <string>

namespace nvsmi {
namespace {

// The words mig_state gives, most serious first: each instance has a series for every one.
constexpr GpuState instance_states[] = {GpuState::lost,           GpuState::failing,
                                        GpuState::allocated_idle, GpuState::in_use,
                                        GpuState::free,           GpuState::unknown};

// No GPU has more than 7 GPU instances with 7 compute instances between them: more in a sample is
// not a layout a driver makes, and would only multiply series.
constexpr std::size_t max_instances_per_gpu = 64;

std::optional<double> bytes(const Reading &mib) {
  if (!mib)
    return std::nullopt;
  return static_cast<double>(*mib) * 1024 * 1024;
}

// gpu (index), gpu_uuid, then the instance: uuid (MIG-...), profile, gpu_instance,
// compute_instance; each only where known.
std::string instance_labels(const Gpu &gpu, const MigDevice &device) {
  std::string labels;
  append_label(labels, "gpu", std::to_string(gpu.index));
  append_label(labels, "gpu_uuid", gpu.uuid);
  append_label(labels, "uuid", device.uuid);
  append_label(labels, "profile", device.profile);
  append_label(labels, "gpu_instance", std::to_string(*device.gpu_instance_id));
  append_label(labels, "compute_instance", std::to_string(*device.compute_instance_id));
  return labels;
}

} // namespace

void write_mig_metrics(const Snapshot &snapshot, const UserLabels &user_labels, MetricsOut &out) {
  Family total("nvsmi_mig_memory_total_bytes", "A MIG instance's framebuffer memory in bytes.");
  Family used("nvsmi_mig_memory_used_bytes", "Framebuffer memory used on a MIG instance in bytes.");
  Family state("nvsmi_mig_state",
               "1 for the one word that says what the MIG instance is doing (lost, failing, "
               "allocated_idle, in_use, free, unknown), 0 for each other word.");
  Family processes("nvsmi_mig_processes",
                   "Compute processes on a MIG instance (absent where the GPU's process list, or "
                   "which instance a process is on, is unknown).");
  Family users("nvsmi_mig_user_processes",
               "Compute processes of a user on a MIG instance (users beyond serve's "
               "--metrics-users summed as user=\"(other users)\"; absent where which instance a "
               "process is on is unknown).");
  // Bounded by the running jobs, as nvsmi_gpu_allocation_info is.
  Family allocations("nvsmi_mig_allocation_info",
                     "1 for each MIG instance a batch job holds (its `GPU.GPU_INSTANCE` record, "
                     "docs/SLURM.md): its job id, and its user where serve shows users.");
  for (const Gpu &gpu : snapshot.gpus) {
    if (!gpu.mig_devices)
      continue;
    std::size_t written = 0;
    for (const MigDevice &device : *gpu.mig_devices) {
      // Without both ids an instance has no name that stays the same across samples.
      if (!device.gpu_instance_id || !device.compute_instance_id)
        continue;
      if (++written > max_instances_per_gpu)
        break;
      std::string labels = instance_labels(gpu, device);
      total.add(labels, bytes(device.memory_total_mib));
      used.add(labels, bytes(device.memory_used_mib));
      GpuState now = mig_state(gpu, device);
      for (GpuState each : instance_states) {
        std::string with_state = labels;
        append_label(with_state, "state", std::string(gpu_state_key(each)));
        state.add(with_state, each == now ? 1 : 0);
      }
      if (std::optional<std::vector<const Process *>> on = instance_processes(gpu, device)) {
        std::size_t compute = 0;
        std::map<std::string, int> by_user; // by the label's value: one series per label set
        for (const Process *process : *on) {
          if (!for_compute(*process))
            continue;
          ++compute;
          if (std::optional<std::string> user = user_labels.label(process->user))
            ++by_user[*user];
        }
        processes.add(labels, static_cast<double>(compute));
        for (const auto &[user, count] : by_user) {
          std::string series = labels;
          append_label(series, "user", user);
          users.add(series, count);
        }
      }
      if (device.allocation) {
        std::string series = labels;
        append_label(series, "job_id", device.allocation->job_id);
        append_label(series, "user", device.allocation->user);
        allocations.add(series, 1);
      }
    }
  }
  total.write(out);
  used.write(out);
  state.write(out);
  processes.write(out);
  users.write(out);
  allocations.write(out);
}

} // namespace nvsmi
