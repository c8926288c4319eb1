#include "formats/prometheus_dcgm.hpp"
#include "formats/prometheus_text.hpp"

#include "nvsmi/gpu_fields.hpp"

#include <cmath>
#include <set>
#include <string>
#include <vector>

namespace nvsmi {
namespace {

// One DCGM exporter family: its name and type as the exporter's counter files say them
// (etc/default-counters.csv, etc/dcp-metrics-included.csv), and where its reading is.
struct DcgmFamily {
  const char *name = "";
  const char *type = "gauge";
  const char *help = "";
  // The field table's entry, its value as nvidia-smi prints it (DCGM's unit for most: MiB, MHz,
  // W, C, percent 0-100) or, with `base_unit`, as prometheus_value makes it (DCGM's profiling
  // ratios 0-1 of a percent, its bytes per second).
  const GpuField *field = nullptr;
  bool base_unit = false;
  // A reading the field table does not hold (counts summed by hand, a yes/no), in DCGM's unit.
  std::optional<double> (*by_hand)(const Gpu &) = nullptr;
  // On a GPU split into MIG instances, the family has one series per GPU instance (GPU_I_ID) from
  // its reading, in place of the whole GPU's, as the exporter does: a sum over a host stays right.
  Reading MigDevice::*per_instance = nullptr;
};

class Row {
public:
  Row(const char *name, const char *type, const char *help) {
    family_.name = name;
    family_.type = type;
    family_.help = help;
  }
  Row &from(const GpuField &field) {
    family_.field = &field;
    return *this;
  }
  Row &in_base_unit() {
    family_.base_unit = true;
    return *this;
  }
  Row &by_hand(std::optional<double> (*reading)(const Gpu &)) {
    family_.by_hand = reading;
    return *this;
  }
  Row &per_instance(Reading MigDevice::*reading) {
    family_.per_instance = reading;
    return *this;
  }
  operator DcgmFamily() const { return family_; }

private:
  DcgmFamily family_;
};

constexpr const char *gauge = "gauge";
constexpr const char *counter = "counter";

std::optional<double> number(const Reading &reading) {
  if (!reading)
    return std::nullopt;
  return static_cast<double>(*reading);
}

// The exporter's families in its files' order. A family nvidia-smi cannot give has no row (and a
// line in docs/DCGM.md saying why).
const std::vector<DcgmFamily> &dcgm_families() {
  static const std::vector<DcgmFamily> families = {
      Row("DCGM_FI_DEV_SM_CLOCK", gauge, "Current SM clock in MHz (nvidia-smi clocks.sm).")
          .from(gpu_field(&Clocks::sm_mhz)),
      Row("DCGM_FI_DEV_MEM_CLOCK", gauge, "Current memory clock in MHz (nvidia-smi clocks.mem).")
          .from(gpu_field(&Clocks::memory_mhz)),
      Row("DCGM_FI_DEV_GPU_TEMP", gauge,
          "GPU core temperature in degrees C (nvidia-smi temperature.gpu).")
          .from(gpu_field(&Gpu::temperature_c)),
      Row("DCGM_FI_DEV_POWER_USAGE", gauge, "Board power draw in W (nvidia-smi power.draw).")
          .from(gpu_field(&Gpu::power_draw_w)),
      // DCGM reads the driver's own total since the driver loaded; nvidia-smi has no such field
      // (nvsmi/snapshot.hpp, GpuCounters), so this is the agent's integral of the power draw since
      // it started: increase() and rate() mean the same, the absolute value does not.
      Row("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", counter,
          "Energy in mJ since the agent started, integrated from the power draw of every sample.")
          .by_hand([](const Gpu &gpu) -> std::optional<double> {
            if (!gpu.counters || !gpu.counters->energy_joules)
              return std::nullopt;
            return std::round(*gpu.counters->energy_joules * 1000);
          }),
      Row("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", counter,
          "PCIe packets resent, since the driver loaded (nvidia-smi pci/replay_counter).")
          .from(gpu_field(&GpuHealth::pcie_replay_count)),
      Row("DCGM_FI_DEV_GPU_UTIL", gauge,
          "Percent of the last sample period in which a kernel ran (nvidia-smi utilization.gpu).")
          .from(gpu_field(&Gpu::utilization_gpu_percent)),
      Row("DCGM_FI_DEV_MEM_COPY_UTIL", gauge,
          "Percent of the last sample period in which device memory was read or written "
          "(nvidia-smi utilization.memory).")
          .from(gpu_field(&Gpu::utilization_memory_percent)),
      Row("DCGM_FI_DEV_FB_FREE", gauge, "Free framebuffer memory in MiB (nvidia-smi memory.free).")
          .from(gpu_field(&Gpu::memory_free_mib))
          .per_instance(&MigDevice::memory_free_mib),
      Row("DCGM_FI_DEV_FB_USED", gauge,
          "Framebuffer memory in use in MiB (nvidia-smi memory.used).")
          .from(gpu_field(&Gpu::memory_used_mib))
          .per_instance(&MigDevice::memory_used_mib),
      // Not among the exporter's defaults (commented out in its file), but ready where a site
      // turned them on. Single-bit is what NVML calls corrected, double-bit uncorrected.
      Row("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", counter,
          "Corrected ECC errors since the driver loaded, all locations.")
          .by_hand([](const Gpu &gpu) { return number(gpu.health.ecc_volatile.corrected); }),
      Row("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", counter,
          "Uncorrected ECC errors since the driver loaded, all locations.")
          .by_hand([](const Gpu &gpu) { return number(gpu.health.ecc_volatile.uncorrected); }),
      Row("DCGM_FI_DEV_ECC_SBE_AGG_TOTAL", counter,
          "Corrected ECC errors over the GPU's life, all locations.")
          .by_hand([](const Gpu &gpu) { return number(gpu.health.ecc_aggregate.corrected); }),
      Row("DCGM_FI_DEV_ECC_DBE_AGG_TOTAL", counter,
          "Uncorrected ECC errors over the GPU's life, all locations.")
          .by_hand([](const Gpu &gpu) { return number(gpu.health.ecc_aggregate.uncorrected); }),
      Row("DCGM_FI_DEV_RETIRED_SBE", counter, "Pages retired for single-bit (corrected) errors.")
          .by_hand([](const Gpu &gpu) { return number(gpu.health.retired_pages_single_bit); }),
      Row("DCGM_FI_DEV_RETIRED_DBE", counter, "Pages retired for double-bit (uncorrected) errors.")
          .by_hand([](const Gpu &gpu) { return number(gpu.health.retired_pages_double_bit); }),
      Row("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", counter,
          "Memory rows remapped for uncorrectable errors.")
          .by_hand([](const Gpu &gpu) { return number(gpu.health.remapped_rows_uncorrectable); }),
      Row("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", counter,
          "Memory rows remapped for correctable errors.")
          .by_hand([](const Gpu &gpu) { return number(gpu.health.remapped_rows_correctable); }),
      Row("DCGM_FI_DEV_ROW_REMAP_FAILURE", gauge,
          "1 when a row remap failed (replace the GPU), else 0.")
          .by_hand([](const Gpu &gpu) { return flag_value(gpu.health.remapped_rows_failure); }),
      // The profiling families, from nvidia-smi dmon's GPM and PCIe readings (docs/ACTIVITY.md):
      // shares as ratios 0-1, traffic in bytes per second, as the exporter gives them. Its
      // NVLink byte families are in neither of its counter files: the agent's own
      // nvsmi_gpu_nvlink_* carry those (docs/DCGM.md).
      Row("DCGM_FI_PROF_SM_ACTIVE", gauge,
          "Share of time SMs had at least one warp resident, over all SMs (GPM).")
          .from(gpu_field(&Gpu::sm_active_percent))
          .in_base_unit(),
      Row("DCGM_FI_PROF_SM_OCCUPANCY", gauge,
          "Resident warps as a share of the most the SMs can hold (GPM).")
          .from(gpu_field(&Gpu::sm_occupancy_percent))
          .in_base_unit(),
      Row("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", gauge, "Share of time any tensor pipe was busy (GPM).")
          .from(gpu_field(&Gpu::tensor_active_percent))
          .in_base_unit(),
      Row("DCGM_FI_PROF_DRAM_ACTIVE", gauge, "Share of the device memory bandwidth in use (GPM).")
          .from(gpu_field(&Gpu::dram_active_percent))
          .in_base_unit(),
      Row("DCGM_FI_PROF_PIPE_FP64_ACTIVE", gauge, "Share of time the FP64 pipes were busy (GPM).")
          .from(gpu_field(&Gpu::fp64_active_percent))
          .in_base_unit(),
      Row("DCGM_FI_PROF_PIPE_FP32_ACTIVE", gauge, "Share of time the FP32 pipes were busy (GPM).")
          .from(gpu_field(&Gpu::fp32_active_percent))
          .in_base_unit(),
      Row("DCGM_FI_PROF_PIPE_FP16_ACTIVE", gauge, "Share of time the FP16 pipes were busy (GPM).")
          .from(gpu_field(&Gpu::fp16_active_percent))
          .in_base_unit(),
      Row("DCGM_FI_PROF_PCIE_TX_BYTES", gauge, "PCIe transmit throughput in bytes per second.")
          .from(gpu_field(&Gpu::pcie_tx_bytes_per_second))
          .in_base_unit(),
      Row("DCGM_FI_PROF_PCIE_RX_BYTES", gauge, "PCIe receive throughput in bytes per second.")
          .from(gpu_field(&Gpu::pcie_rx_bytes_per_second))
          .in_base_unit(),
  };
  return families;
}

std::optional<double> reading_of(const DcgmFamily &family, const Gpu &gpu) {
  if (family.by_hand)
    return family.by_hand(gpu);
  std::optional<double> value = family.field->number_in(gpu);
  if (value && family.base_unit)
    return prometheus_value(family.field->unit, *value);
  return value;
}

// The exporter's labels of a GPU's series, in its order. `device` is the exporter's name for
// the GPU's device file, nvidiaN by its index.
std::string dcgm_labels(const Snapshot &snapshot, const Gpu &gpu) {
  std::string labels;
  append_label(labels, "gpu", std::to_string(gpu.index));
  append_label(labels, "UUID", gpu.uuid);
  append_label(labels, "pci_bus_id", gpu.pci_bus_id);
  append_label(labels, "device", "nvidia" + std::to_string(gpu.index));
  append_label(labels, "modelName", gpu.name);
  // Spelled as the exporter has since its pull request 655 (Hostname before).
  if (snapshot.host)
    append_label(labels, "hostname", snapshot.host->hostname);
  append_label(labels, "DCGM_FI_DRIVER_VERSION", snapshot.driver_version);
  return labels;
}

// The GPU instance's profile of a MIG device as nvidia-smi -L names it: "3g.40gb" as it is, and
// "1c.3g.40gb" (a compute instance smaller than its GPU instance) without its "1c."; unknown where
// -L was not read.
Text gpu_instance_profile(const Text &profile) {
  if (!profile)
    return std::nullopt;
  std::size_t dot = profile->find('.');
  if (dot != std::string::npos && dot > 1 && (*profile)[dot - 1] == 'c' &&
      profile->find_first_not_of("0123456789") == dot - 1)
    return profile->substr(dot + 1);
  return profile;
}

// A GPU's MIG instances by GPU instance: several compute instances of one GPU instance share its
// memory, and one series per label set is all Prometheus takes. GPU_I_PROFILE where nvidia-smi -L
// named the instance's profile.
void add_instances(Family &family, const std::string &gpu_labels, const Gpu &gpu,
                   Reading MigDevice::*reading) {
  std::set<std::int64_t> written;
  for (const MigDevice &device : *gpu.mig_devices) {
    if (!device.gpu_instance_id || !written.insert(*device.gpu_instance_id).second)
      continue;
    std::string labels = gpu_labels;
    append_label(labels, "GPU_I_ID", std::to_string(*device.gpu_instance_id));
    append_label(labels, "GPU_I_PROFILE", gpu_instance_profile(device.profile));
    family.add(labels, number(device.*reading));
  }
}

} // namespace

void write_dcgm_metrics(const Snapshot &snapshot, MetricsOut &out) {
  std::vector<std::string> labels;
  for (const Gpu &gpu : snapshot.gpus)
    labels.push_back(dcgm_labels(snapshot, gpu));
  for (const DcgmFamily &row : dcgm_families()) {
    Family family(row.name, row.help, row.type);
    for (std::size_t i = 0; i < snapshot.gpus.size(); ++i) {
      const Gpu &gpu = snapshot.gpus[i];
      if (row.per_instance && gpu.mig_devices && !gpu.mig_devices->empty())
        add_instances(family, labels[i], gpu, row.per_instance);
      else
        family.add(labels[i], reading_of(row, gpu));
    }
    family.write(out);
  }
}

} // namespace nvsmi
