#include "nvsmi/nvlink_status.hpp"

#include "nvlink_lines.hpp"
#include "nvsmi/quantity.hpp"
#include "reader_text.hpp"

#include <charconv>
#include <cmath>

namespace nvsmi {
namespace {

// No GPU's links come near this (an NVLink 5 GPU has 18 links of 53 GB/s); a larger sum is a
// garbled line, and would overflow the reading.
constexpr double max_bytes_per_second = 1e14;

[[noreturn]] void not_understood(std::string_view line) {
  throw ParseError("nvidia-smi nvlink -s: line not understood: " + excerpt(line));
}

// "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-...)"
NvlinkCapacity gpu_header(std::string_view line) {
  std::optional<nvlink_lines::GpuLine> header = nvlink_lines::gpu_line(line);
  if (!header)
    not_understood(line);
  NvlinkCapacity gpu;
  gpu.gpu_index = header->index;
  gpu.uuid = header->uuid;
  return gpu;
}

// "Link 0: 26.562 GB/s" -> its bytes per second; "Link 3: <inactive>" -> nullopt.
std::optional<double> link_speed(std::string_view line) {
  std::string_view rest;
  if (!nvlink_lines::link_line(line, rest))
    not_understood(line);
  std::string_view value = trim(rest);
  if (value == "<inactive>")
    return std::nullopt;
  std::optional<double> speed = nvlink_lines::number_with_unit<double>(value, " GB/s");
  if (!speed || !std::isfinite(*speed) || *speed <= 0)
    not_understood(line);
  return *speed * 1e9;
}

} // namespace

std::vector<NvlinkCapacity> read_nvlink_status(std::string_view text) {
  std::vector<NvlinkCapacity> gpus;
  // The current GPU's active links and the sum of their speeds: no active link is unknown.
  double sum = 0;
  bool any_active = false;
  auto close_gpu = [&] {
    if (!gpus.empty() && any_active)
      gpus.back().bytes_per_second = std::llround(sum);
    sum = 0;
    any_active = false;
  };
  for (std::string_view line; nvlink_lines::next_line(text, line);) {
    if (nvlink_lines::starts_with(line, "GPU ")) {
      close_gpu();
      gpus.push_back(gpu_header(line));
    } else if (nvlink_lines::starts_with(line, "Link ") && !gpus.empty()) {
      if (std::optional<double> speed = link_speed(line)) {
        sum += *speed;
        any_active = true;
        if (sum > max_bytes_per_second)
          not_understood(line);
      }
    } else {
      not_understood(line);
    }
  }
  close_gpu();
  return gpus;
}

void attach_nvlink_capacity(Snapshot &snapshot, const std::vector<NvlinkCapacity> &capacity) {
  for (Gpu &gpu : snapshot.gpus)
    for (const NvlinkCapacity &entry : capacity)
      if (nvlink_lines::same_gpu(gpu.uuid, gpu.index, entry.uuid, entry.gpu_index)) {
        gpu.nvlink_bandwidth_bytes_per_second = entry.bytes_per_second;
        break;
      }
}

} // namespace nvsmi
