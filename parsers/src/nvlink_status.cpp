#include "nvsmi/nvlink_status.hpp"

#include "listing_lines.hpp"
#include "nvsmi/quantity.hpp"
#include "reader_text.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <utility>

namespace nvsmi {
namespace {

// A line this reader cannot place: nothing of it is guessed.
[[noreturn]] void not_understood(std::string_view line) {
  throw ParseError("nvidia-smi nvlink -s: line not understood: " + excerpt(line));
}

// "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-...)"
NvlinkCapacity gpu_header(std::string_view line) {
  std::optional<listing_lines::GpuLine> header = listing_lines::gpu_line(line);
  if (!header)
    not_understood(line);
  NvlinkCapacity gpu;
  gpu.gpu_index = header->index;
  gpu.uuid = header->uuid;
  return gpu;
}

// "Link 0: 26.562 GB/s" -> its bytes per second; "Link 3: <inactive>" -> 0 (adds nothing);
// nullopt for a line that is not a link with a positive speed in GB/s.
std::optional<double> link_speed(std::string_view line) {
  std::string_view rest;
  if (!listing_lines::link_line(line, rest))
    return std::nullopt;
  std::string_view value = trim(rest);
  if (value == "<inactive>")
    return 0.0;
  std::optional<double> speed = listing_lines::number_with_unit<double>(value, " GB/s");
  // One link past what all of a GPU's links may sum to is a garbled speed, not a fast link.
  if (!speed || !std::isfinite(*speed) || *speed <= 0 ||
      *speed * 1e9 > listing_lines::max_bytes_per_second)
    return std::nullopt;
  return *speed * 1e9;
}

// The GPUs named in a notice, at most this many; the rest are counted.
constexpr std::size_t max_named_gpus = 8;
// The distinct reasons said, at most this many; the GPUs of the rest are counted.
constexpr std::size_t max_reasons = 4;

} // namespace

std::vector<NvlinkCapacity> read_nvlink_status(std::string_view text) {
  std::vector<NvlinkCapacity> gpus;
  // The current GPU's active links and the sum of their speeds: no active link is unknown.
  double sum = 0;
  bool any_active = false;
  auto close_gpu = [&] {
    if (!gpus.empty() && any_active && !gpus.back().no_figures)
      gpus.back().bytes_per_second = std::llround(sum);
    sum = 0;
    any_active = false;
  };
  // What the current GPU has instead of figures; its first such line is the one said.
  auto no_figures = [&](std::string why) {
    if (!gpus.back().no_figures)
      gpus.back().no_figures = std::move(why);
  };
  for (std::string_view line; listing_lines::next_line(text, line);) {
    if (listing_lines::starts_with(line, "GPU ")) {
      close_gpu();
      gpus.push_back(gpu_header(line));
    } else if (gpus.empty()) {
      not_understood(line); // a link or a message before any GPU: whose would it be?
    } else if (std::optional<std::string_view> answer = listing_lines::no_nvlink_answer(line)) {
      no_figures("nvlink -s says \"" + std::string(*answer) + "\"");
    } else if (std::optional<double> speed =
                   listing_lines::starts_with(line, "Link ") ? link_speed(line) : std::nullopt) {
      sum += *speed;
      any_active = any_active || *speed > 0;
      if (sum > listing_lines::max_bytes_per_second)
        no_figures("nvlink -s gives links past " +
                   std::to_string(std::llround(listing_lines::max_bytes_per_second / 1e9)) +
                   " GB/s in all: " + excerpt(line));
    } else {
      no_figures("nvlink -s line not understood: " + excerpt(line));
    }
  }
  close_gpu();
  return gpus;
}

std::vector<std::string> nvlink_capacity_notices(const std::vector<NvlinkCapacity> &capacity) {
  // Each reason once, with its GPUs, in the order the output first gave it.
  std::vector<std::pair<std::string, std::vector<int>>> reasons;
  std::size_t more_gpus = 0;
  for (const NvlinkCapacity &gpu : capacity) {
    if (!gpu.no_figures)
      continue;
    auto same = std::find_if(reasons.begin(), reasons.end(),
                             [&](const auto &reason) { return reason.first == *gpu.no_figures; });
    if (same != reasons.end())
      same->second.push_back(gpu.gpu_index);
    else if (reasons.size() < max_reasons)
      reasons.push_back({*gpu.no_figures, {gpu.gpu_index}});
    else
      ++more_gpus;
  }
  std::vector<std::string> notices;
  for (const auto &[reason, indexes] : reasons) {
    std::string line = indexes.size() == 1 ? "GPU " : "GPUs ";
    for (std::size_t i = 0; i < indexes.size() && i < max_named_gpus; ++i)
      line += (i > 0 ? ", " : "") + std::to_string(indexes[i]);
    if (indexes.size() > max_named_gpus)
      line += " and " + std::to_string(indexes.size() - max_named_gpus) + " more";
    line += ": " + reason;
    notices.push_back(std::move(line));
  }
  if (more_gpus > 0)
    notices.push_back(std::to_string(more_gpus) + " more GPU" + (more_gpus == 1 ? "" : "s") +
                      " without NVLink figures for other reasons");
  return notices;
}

void attach_nvlink_capacity(Snapshot &snapshot, const std::vector<NvlinkCapacity> &capacity) {
  for (Gpu &gpu : snapshot.gpus)
    for (const NvlinkCapacity &entry : capacity)
      if (listing_lines::same_gpu(gpu.uuid, gpu.index, entry.uuid, entry.gpu_index)) {
        gpu.nvlink_bandwidth_bytes_per_second = entry.bytes_per_second;
        break;
      }
}

} // namespace nvsmi
