#include "nvsmi/gpu_fields.hpp"

#include <algorithm>
#include <stdexcept>
#include <type_traits>

namespace nvsmi {
namespace {

// An entry of the table, said one property at a time: each says only what the field has.
class Entry {
public:
  explicit Entry(Reading Gpu::*member, Unit unit) {
    integer(FieldPart::gpu, unit).gpu_integer = member;
  }
  explicit Entry(RealReading Gpu::*member, Unit unit) {
    field_.kind = FieldKind::real;
    field_.gpu_real = member;
    field_.unit = unit;
  }
  explicit Entry(Text Gpu::*member) {
    field_.kind = FieldKind::text;
    field_.gpu_text = member;
  }
  explicit Entry(Reading Clocks::*member) {
    integer(FieldPart::clocks, Unit::mhz).clock = member;
    field_.json_place = JsonPlace::gpu_clocks;
  }
  explicit Entry(Reading GpuHealth::*member, Unit unit) {
    integer(FieldPart::health, unit).health_integer = member;
    health_defaults();
  }
  explicit Entry(Text GpuHealth::*member) {
    field_.kind = FieldKind::text;
    field_.part = FieldPart::health;
    field_.health_text = member;
    health_defaults();
  }
  explicit Entry(RealReading (*derived)(const Gpu &), Unit unit) {
    field_.kind = FieldKind::real;
    field_.part = FieldPart::derived;
    field_.derived = derived;
    field_.unit = unit;
    field_.csv_read = false;
  }

  Entry &json(std::string_view key) {
    field_.json_key = key;
    return *this;
  }
  Entry &json(std::string_view key, JsonPlace place) {
    field_.json_place = place;
    return json(key);
  }
  // Read from nvidia-smi's --query-gpu column `name` (and its older `alias`), which the query
  // has always asked for (csv_reader.cpp's query_fields), or which an older driver would refuse.
  Entry &csv(std::string_view name, std::string_view alias = {}) {
    field_.csv_name = name;
    field_.csv_alias = alias;
    return *this;
  }
  // Asked for after the query's fixed names (a field added since, that every driver knows).
  Entry &asked() {
    field_.csv_asked = true;
    return *this;
  }
  // A column name the CSV reader leaves to its own code (several columns are candidates).
  Entry &csv_read_by_hand(std::string_view name) {
    field_.csv_name = name;
    field_.csv_read = false;
    return *this;
  }
  // A column of the agent's own CSV log only: nvidia-smi's query has no such name and is never
  // asked for it; the CSV reader reads it back from the log (report).
  Entry &csv_log_only(std::string_view name) { return csv(name); }
  Entry &logged(int column) {
    field_.csv_log_column = column;
    return *this;
  }
  Entry &xml(const char *parent, const char *leaf) {
    field_.xml_parent = parent;
    field_.xml_leaf = leaf;
    return *this;
  }
  Entry &prometheus(const char *name, const char *help, const char *type = "gauge") {
    field_.prometheus_name = name;
    field_.prometheus_help = help;
    field_.prometheus_type = type;
    return *this;
  }
  Entry &labelled(const char *label, const char *value) {
    field_.prometheus_label = label;
    field_.prometheus_label_value = value;
    return *this;
  }
  Entry &prometheus_from(std::optional<double> (*finer)(const Gpu &)) {
    field_.prometheus_derived = finer;
    return *this;
  }
  Entry &core() {
    field_.core = true;
    return *this;
  }
  Entry &history(History history) {
    field_.history = history;
    return *this;
  }

  operator GpuField() const { return field_; }

private:
  GpuField &integer(FieldPart part, Unit unit) {
    field_.kind = FieldKind::integer;
    field_.part = part;
    field_.unit = unit;
    return field_;
  }
  void health_defaults() {
    field_.json_place = JsonPlace::health;
    field_.history = History::shared;
  }

  GpuField field_;
};

RealReading memory_used_percent(const Gpu &gpu) { return gpu.memory_used_percent(); }

// /metrics' ratio is used / total as it is: the JSON's percent is rounded to two decimals.
std::optional<double> memory_used_ratio(const Gpu &gpu) {
  if (!gpu.memory_used_mib || !gpu.memory_total_mib || *gpu.memory_total_mib <= 0)
    return std::nullopt;
  return static_cast<double>(*gpu.memory_used_mib) / static_cast<double>(*gpu.memory_total_mib);
}

constexpr const char *clock_help = "Current clock frequency in hertz, by clock domain.";
constexpr const char *pipe_help =
    "Share of time the FP16, FP32 or FP64 pipes were active, by pipe (GPM; 0-1).";

} // namespace

const std::vector<GpuField> &gpu_fields() {
  static const std::vector<GpuField> fields = {
      // The GPU's own readings, in the order the JSON and /metrics have always written them.
      // Their CSV log columns keep the order of the agent's first log.
      Entry(&Gpu::temperature_c, Unit::celsius)
          .json("temperature_c")
          .core()
          .csv("temperature.gpu")
          .logged(2)
          .xml("temperature", "gpu_temp")
          .prometheus("nvsmi_gpu_temperature_celsius", "GPU core temperature in degrees Celsius."),
      Entry(&Gpu::memory_total_mib, Unit::mib)
          .json("memory_total_mib")
          .core()
          .csv("memory.total")
          .logged(5)
          .xml("fb_memory_usage", "total")
          .prometheus("nvsmi_gpu_memory_total_bytes", "Total framebuffer memory in bytes."),
      Entry(&Gpu::memory_used_mib, Unit::mib)
          .json("memory_used_mib")
          .core()
          .csv("memory.used")
          .logged(7)
          .xml("fb_memory_usage", "used")
          .prometheus("nvsmi_gpu_memory_used_bytes", "Framebuffer memory in use in bytes."),
      Entry(&Gpu::memory_free_mib, Unit::mib)
          .json("memory_free_mib")
          .core()
          .csv("memory.free")
          .logged(6)
          .xml("fb_memory_usage", "free")
          .prometheus("nvsmi_gpu_memory_free_bytes", "Free framebuffer memory in bytes."),
      // The agent's own column: nvidia-smi has no such query field.
      Entry(memory_used_percent, Unit::percent)
          .json("memory_used_percent")
          .csv_read_by_hand("memory.used_percent")
          .logged(8)
          .prometheus("nvsmi_gpu_memory_used_ratio",
                      "Framebuffer memory in use as a ratio of the total (0-1).")
          .prometheus_from(memory_used_ratio),
      Entry(&Gpu::utilization_gpu_percent, Unit::percent)
          .json("utilization_gpu_percent")
          .core()
          .csv("utilization.gpu")
          .logged(3)
          .xml("utilization", "gpu_util")
          .prometheus("nvsmi_gpu_utilization_ratio",
                      "Share of the last sample period in which a kernel ran on the GPU (0-1)."),
      Entry(&Gpu::utilization_memory_percent, Unit::percent)
          .json("utilization_memory_percent")
          .core()
          .csv("utilization.memory")
          .logged(4)
          .xml("utilization", "memory_util")
          .prometheus("nvsmi_gpu_memory_utilization_ratio",
                      "Share of the last sample period in which device memory was read or written "
                      "(0-1)."),
      // The first known of power.draw, .average and .instant (CSV), or of the XML's elements
      // (the GPU's own readings, never the module's): read by hand.
      Entry(&Gpu::power_draw_w, Unit::watt)
          .json("power_draw_w")
          .csv_read_by_hand("power.draw")
          .logged(9)
          .prometheus("nvsmi_gpu_power_draw_watts", "Power drawn by the board in watts."),
      Entry(&Gpu::power_limit_w, Unit::watt)
          .json("power_limit_w")
          .csv_read_by_hand("power.limit")
          .logged(10)
          .prometheus("nvsmi_gpu_power_limit_watts", "Power management limit in watts."),
      Entry(&Gpu::fan_speed_percent, Unit::percent)
          .json("fan_speed_percent")
          .csv("fan.speed")
          .logged(11)
          .xml("", "fan_speed")
          .prometheus("nvsmi_gpu_fan_speed_ratio",
                      "Intended fan speed as a ratio of its maximum (0-1)."),
      Entry(&Gpu::pstate).json("pstate").csv("pstate").logged(1).xml("", "performance_state"),
      // nvidia-smi still takes the short names (clocks.gr) that scripts and recordings use.
      Entry(&Clocks::graphics_mhz)
          .json("graphics")
          .csv("clocks.current.graphics", "clocks.gr")
          .xml("clocks", "graphics_clock")
          .prometheus("nvsmi_gpu_clock_hz", clock_help)
          .labelled("clock", "graphics"),
      Entry(&Clocks::sm_mhz)
          .json("sm")
          .csv("clocks.current.sm", "clocks.sm")
          .xml("clocks", "sm_clock")
          .prometheus("nvsmi_gpu_clock_hz", clock_help)
          .labelled("clock", "sm"),
      Entry(&Clocks::memory_mhz)
          .json("memory")
          .csv("clocks.current.memory", "clocks.mem")
          .xml("clocks", "mem_clock")
          .prometheus("nvsmi_gpu_clock_hz", clock_help)
          .labelled("clock", "memory"),
      Entry(&Clocks::video_mhz)
          .json("video")
          .csv("clocks.current.video", "clocks.video")
          .xml("clocks", "video_clock")
          .prometheus("nvsmi_gpu_clock_hz", clock_help)
          .labelled("clock", "video"),

      // Activity and traffic (nvidia-smi dmon: agent/nvidia_smi's dmon stream; PCIe also from the
      // XML, read by hand there from KB/s). Their CSV names are the agent's own, for its log.
      Entry(&Gpu::sm_active_percent, Unit::percent)
          .json("sm_active_percent")
          .csv_log_only("activity.sm")
          .logged(13)
          .prometheus("nvsmi_gpu_sm_active_ratio",
                      "Share of time SMs had at least one warp resident, averaged over the SMs "
                      "(GPM; 0-1). Unlike utilization, one busy SM is not a busy GPU."),
      Entry(&Gpu::sm_occupancy_percent, Unit::percent)
          .json("sm_occupancy_percent")
          .csv_log_only("activity.sm_occupancy")
          .logged(14)
          .prometheus("nvsmi_gpu_sm_occupancy_ratio",
                      "Resident warps as a share of the most the SMs can hold (GPM; 0-1)."),
      Entry(&Gpu::tensor_active_percent, Unit::percent)
          .json("tensor_active_percent")
          .csv_log_only("activity.tensor")
          .logged(15)
          .prometheus("nvsmi_gpu_tensor_active_ratio",
                      "Share of time any tensor pipe was active (GPM; 0-1)."),
      Entry(&Gpu::dram_active_percent, Unit::percent)
          .json("dram_active_percent")
          .csv_log_only("activity.dram")
          .logged(16)
          .prometheus("nvsmi_gpu_dram_active_ratio",
                      "Share of the device memory bandwidth in use (GPM; 0-1)."),
      Entry(&Gpu::fp16_active_percent, Unit::percent)
          .json("fp16_active_percent")
          .csv_log_only("activity.fp16")
          .logged(17)
          .prometheus("nvsmi_gpu_pipe_active_ratio", pipe_help)
          .labelled("pipe", "fp16"),
      Entry(&Gpu::fp32_active_percent, Unit::percent)
          .json("fp32_active_percent")
          .csv_log_only("activity.fp32")
          .logged(18)
          .prometheus("nvsmi_gpu_pipe_active_ratio", pipe_help)
          .labelled("pipe", "fp32"),
      Entry(&Gpu::fp64_active_percent, Unit::percent)
          .json("fp64_active_percent")
          .csv_log_only("activity.fp64")
          .logged(19)
          .prometheus("nvsmi_gpu_pipe_active_ratio", pipe_help)
          .labelled("pipe", "fp64"),
      Entry(&Gpu::pcie_rx_bytes_per_second, Unit::bytes_per_s)
          .json("pcie_rx_bytes_per_second")
          .csv_log_only("pcie.rx_bytes_per_second")
          .logged(20)
          .prometheus("nvsmi_gpu_pcie_rx_bytes_per_second",
                      "PCIe receive throughput in bytes per second (dmon, or the XML's rx_util)."),
      Entry(&Gpu::pcie_tx_bytes_per_second, Unit::bytes_per_s)
          .json("pcie_tx_bytes_per_second")
          .csv_log_only("pcie.tx_bytes_per_second")
          .logged(21)
          .prometheus("nvsmi_gpu_pcie_tx_bytes_per_second",
                      "PCIe transmit throughput in bytes per second (dmon, or the XML's tx_util)."),
      Entry(&Gpu::nvlink_rx_bytes_per_second, Unit::bytes_per_s)
          .json("nvlink_rx_bytes_per_second")
          .csv_log_only("nvlink.rx_bytes_per_second")
          .logged(22)
          .prometheus("nvsmi_gpu_nvlink_rx_bytes_per_second",
                      "NVLink receive throughput over all links in bytes per second (GPM)."),
      Entry(&Gpu::nvlink_tx_bytes_per_second, Unit::bytes_per_s)
          .json("nvlink_tx_bytes_per_second")
          .csv_log_only("nvlink.tx_bytes_per_second")
          .logged(23)
          .prometheus("nvsmi_gpu_nvlink_tx_bytes_per_second",
                      "NVLink transmit throughput over all links in bytes per second (GPM)."),
      Entry(&Gpu::nvlink_bandwidth_bytes_per_second, Unit::bytes_per_s)
          .json("nvlink_bandwidth_bytes_per_second")
          .csv_log_only("nvlink.bandwidth_bytes_per_second")
          .logged(24)
          .prometheus("nvsmi_gpu_nvlink_bandwidth_bytes_per_second",
                      "What the GPU's active NVLink links carry at most, each way, in bytes per "
                      "second (nvidia-smi nvlink -s, read at start)."),

      // Health readings: /metrics writes their families right after the PCIe link's.
      Entry(&GpuHealth::temperature_slowdown_c, Unit::celsius)
          .json("temperature_slowdown_c")
          .xml("temperature", "gpu_temp_slow_threshold")
          .prometheus("nvsmi_gpu_temperature_slowdown_celsius",
                      "Temperature in degrees Celsius at which the GPU slows its clocks down."),
      Entry(&GpuHealth::temperature_shutdown_c, Unit::celsius)
          .json("temperature_shutdown_c")
          .xml("temperature", "gpu_temp_max_threshold")
          .prometheus("nvsmi_gpu_temperature_shutdown_celsius",
                      "Temperature in degrees Celsius at which the GPU shuts down."),
      // The XML's gpu_reset_status of older drivers stands in for it (xml_reader.cpp), and its
      // Prometheus family is labelled by the action (prometheus_health.cpp).
      Entry(&GpuHealth::recovery_action).json("recovery_action").csv("gpu_recovery_action"),
      // Driver 580 has no --query-gpu field for it (help-query-gpu.txt of the H200 recording):
      // the CSV name is the agent's own, for its log.
      Entry(&GpuHealth::pcie_replay_count, Unit::none)
          .json("pcie_replay_count")
          .csv("pcie.replay_counter")
          .logged(12)
          .xml("pci", "replay_counter")
          .prometheus(
              "nvsmi_gpu_pcie_replays_total",
              "PCIe packets the link had to resend (nvidia-smi's XML pci/replay_counter). A "
              "count that keeps rising: check the riser, slot or cable.",
              "counter"),
  };
  return fields;
}

const std::vector<const GpuField *> &csv_logged_fields() {
  static const std::vector<const GpuField *> logged = [] {
    std::vector<const GpuField *> out;
    for (const GpuField &field : gpu_fields())
      if (field.csv_log_column > 0)
        out.push_back(&field);
    std::sort(out.begin(), out.end(), [](const GpuField *a, const GpuField *b) {
      return a->csv_log_column < b->csv_log_column;
    });
    return out;
  }();
  return logged;
}

std::optional<double> GpuField::number_in(const Gpu &gpu) const {
  std::optional<double> number;
  with_reading(gpu, [&](const auto &value) {
    if constexpr (!std::is_same_v<std::decay_t<decltype(value)>, Text>)
      if (value)
        number = static_cast<double>(*value);
  });
  return number;
}

double prometheus_value(Unit unit, double value) {
  switch (unit) {
  case Unit::mib:
    return value * 1024 * 1024;
  case Unit::percent:
    return value / 100; // divided, not times 0.01: 35 % is 0.35, not 0.35000000000000003
  case Unit::mhz:
    return value * 1e6;
  case Unit::kib_per_s:
    return value * 1024;
  case Unit::none:
  case Unit::bytes_per_s:
  case Unit::watt:
  case Unit::celsius:
  case Unit::lanes:
    break;
  }
  return value;
}

bool same_field_readings(const GpuHealth &a, const GpuHealth &b) {
  for (const GpuField &field : gpu_fields()) {
    if (field.history != History::shared)
      continue;
    if (field.kind == FieldKind::integer ? a.*field.health_integer != b.*field.health_integer
                                         : a.*field.health_text != b.*field.health_text)
      return false;
  }
  return true;
}

std::size_t own_slot_field_count(FieldKind kind) {
  std::size_t own = 0;
  for (const GpuField &field : gpu_fields())
    own += field.history == History::own_slot && field.part != FieldPart::derived &&
           field.kind == kind;
  return own;
}

namespace {

template <typename Same> std::size_t own_slot_where(FieldKind kind, Same same) {
  std::size_t slot = 0;
  for (const GpuField &field : gpu_fields()) {
    if (field.history != History::own_slot || field.part == FieldPart::derived ||
        field.kind != kind)
      continue;
    if (same(field))
      return slot;
    ++slot;
  }
  throw std::logic_error("own_slot_of: not a field of the table kept in a slot of its own");
}

} // namespace

std::size_t own_slot_of(Reading Gpu::*member) {
  return own_slot_where(FieldKind::integer, [&](const GpuField &field) {
    return field.part == FieldPart::gpu && field.gpu_integer == member;
  });
}

std::size_t own_slot_of(RealReading Gpu::*member) {
  return own_slot_where(FieldKind::real, [&](const GpuField &field) {
    return field.part == FieldPart::gpu && field.gpu_real == member;
  });
}

namespace {

template <typename Same> const GpuField &field_where(Same same) {
  for (const GpuField &field : gpu_fields())
    if (same(field))
      return field;
  throw std::logic_error("gpu_field: not a member of the field table");
}

} // namespace

const GpuField &gpu_field(Reading Gpu::*member) {
  return field_where([&](const GpuField &field) {
    return field.part == FieldPart::gpu && field.kind == FieldKind::integer &&
           field.gpu_integer == member;
  });
}

const GpuField &gpu_field(RealReading Gpu::*member) {
  return field_where([&](const GpuField &field) {
    return field.part == FieldPart::gpu && field.kind == FieldKind::real &&
           field.gpu_real == member;
  });
}

const GpuField &gpu_field(Reading Clocks::*member) {
  return field_where([&](const GpuField &field) {
    return field.part == FieldPart::clocks && field.clock == member;
  });
}

const GpuField &gpu_field(Reading GpuHealth::*member) {
  return field_where([&](const GpuField &field) {
    return field.part == FieldPart::health && field.kind == FieldKind::integer &&
           field.health_integer == member;
  });
}

} // namespace nvsmi
