#include "nvsmi/nvlink_counters.hpp"

#include "listing_lines.hpp"
#include "nvsmi/quantity.hpp"
#include "reader_text.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>

namespace nvsmi {
namespace {

// NVLink 5 has 18 links per GPU: more is a garbled output, and would grow the table.
constexpr std::size_t max_links = 64;
// The GPU indexes the agent keeps anywhere (dmon's table stops there too).
constexpr int max_gpu_index = 1023;
// 2^53 KiB (8 EiB): its bytes fit an int64, and a double holds each count exactly. Nothing has
// moved that much over one link; a larger count is garbled.
constexpr std::uint64_t max_kib = std::uint64_t(1) << 53;

[[noreturn]] void counters_not_understood(std::string_view line) {
  throw ParseError("nvidia-smi nvlink -gt d: line not understood: " + excerpt(line));
}

// "Data Tx: 8299479 KiB" -> its bytes; "Data Tx: N/A" -> nullopt. `is_tx` says which direction.
std::optional<std::uint64_t> data_count(std::string_view line, std::string_view rest, bool &is_tx) {
  constexpr std::string_view tx = "Data Tx:", rx = "Data Rx:";
  is_tx = listing_lines::starts_with(rest, tx);
  if (!is_tx && !listing_lines::starts_with(rest, rx))
    counters_not_understood(line);
  std::string_view value = trim(rest.substr(tx.size()));
  if (value == "N/A")
    return std::nullopt;
  // The unit is checked, never assumed: `nvlink -h` says KiB for `-gt d`.
  std::optional<std::uint64_t> kib = listing_lines::number_with_unit<std::uint64_t>(value, " KiB");
  if (!kib || *kib > max_kib)
    counters_not_understood(line);
  return *kib * 1024;
}

// A GPU that takes the counters' rates: an active link (its capacity known) and no NVLink figure
// of dmon's in either direction, so that its two figures never come from different sources.
bool takes_counter_rates(const Gpu &gpu) {
  return gpu.nvlink_bandwidth_bytes_per_second && !gpu.nvlink_rx_bytes_per_second &&
         !gpu.nvlink_tx_bytes_per_second;
}

// One direction of one GPU between two readings; nullopt where unknown (nvlink_rates).
Reading direction_rate(const NvlinkGpuCounters &before, const NvlinkGpuCounters &after,
                       std::optional<std::uint64_t> NvlinkLinkCounters::*count, double seconds) {
  double moved = 0;
  bool any = false;
  for (const NvlinkLinkCounters &link : after.links) {
    auto earlier = std::find_if(before.links.begin(), before.links.end(),
                                [&](const NvlinkLinkCounters &l) { return l.link == link.link; });
    const std::optional<std::uint64_t> &now = link.*count;
    std::optional<std::uint64_t> then =
        earlier == before.links.end() ? std::nullopt : (*earlier).*count;
    if (now.has_value() != then.has_value())
      return std::nullopt; // a link known in one reading only: not the same sum
    if (!now)
      continue; // N/A in both: a link that counts nothing
    if (*now < *then)
      return std::nullopt; // reset, wrapped or garbled: this interval is unknown
    moved += static_cast<double>(*now - *then);
    any = true;
  }
  // A link the earlier reading knew and this one does not name at all.
  for (const NvlinkLinkCounters &link : before.links)
    if ((link.*count).has_value() &&
        std::none_of(after.links.begin(), after.links.end(),
                     [&](const NvlinkLinkCounters &l) { return l.link == link.link; }))
      return std::nullopt;
  if (!any)
    return std::nullopt;
  double rate = moved / seconds;
  if (!std::isfinite(rate) || rate > listing_lines::max_bytes_per_second)
    return std::nullopt;
  return std::llround(rate);
}

} // namespace

std::vector<NvlinkGpuCounters> read_nvlink_counters(std::string_view text) {
  std::vector<NvlinkGpuCounters> gpus;
  // Which directions of each link of the current GPU were named, to refuse one named twice.
  std::vector<std::pair<bool, bool>> named;
  for (std::string_view line; listing_lines::next_line(text, line);) {
    if (listing_lines::starts_with(line, "GPU ")) {
      std::optional<listing_lines::GpuLine> header = listing_lines::gpu_line(line);
      if (!header || header->index > max_gpu_index)
        counters_not_understood(line);
      for (const NvlinkGpuCounters &gpu : gpus)
        if (gpu.gpu_index == header->index || (gpu.uuid && gpu.uuid == header->uuid))
          counters_not_understood(line); // a GPU twice: which reading is its own?
      NvlinkGpuCounters gpu;
      gpu.gpu_index = header->index;
      gpu.uuid = header->uuid;
      gpus.push_back(std::move(gpu));
      named.clear();
    } else if (listing_lines::starts_with(line, "Link ") && !gpus.empty()) {
      std::string_view rest;
      std::optional<int> number = listing_lines::link_line(line, rest);
      if (!number)
        counters_not_understood(line);
      bool is_tx = false;
      std::optional<std::uint64_t> bytes = data_count(line, rest, is_tx);
      std::vector<NvlinkLinkCounters> &links = gpus.back().links;
      auto link = std::find_if(links.begin(), links.end(),
                               [&](const NvlinkLinkCounters &l) { return l.link == *number; });
      if (link == links.end()) {
        if (links.size() >= max_links)
          counters_not_understood(line);
        links.push_back({*number, std::nullopt, std::nullopt});
        named.emplace_back(false, false);
        link = links.end() - 1;
      }
      bool &was_named =
          is_tx ? named[link - links.begin()].first : named[link - links.begin()].second;
      if (was_named)
        counters_not_understood(line); // the same counter twice: which is it?
      was_named = true;
      (is_tx ? link->tx_bytes : link->rx_bytes) = bytes;
    } else if (!gpus.empty() && gpus.back().links.empty() &&
               listing_lines::no_nvlink_answer(line)) {
      // nvidia-smi's answer for a GPU without NVLink figures (all links inactive, none, MIG
      // mode): that GPU has no counters, and the others are read.
      continue;
    } else {
      counters_not_understood(line);
    }
  }
  return gpus;
}

std::vector<NvlinkRates> nvlink_rates(const std::vector<NvlinkGpuCounters> &before,
                                      const std::vector<NvlinkGpuCounters> &after, double seconds) {
  std::vector<NvlinkRates> rates;
  for (const NvlinkGpuCounters &gpu : after) {
    NvlinkRates rate;
    rate.gpu_index = gpu.gpu_index;
    rate.uuid = gpu.uuid;
    auto earlier = std::find_if(before.begin(), before.end(), [&](const NvlinkGpuCounters &b) {
      return listing_lines::same_gpu(b.uuid, b.gpu_index, gpu.uuid, gpu.gpu_index);
    });
    if (earlier != before.end() && std::isfinite(seconds) && seconds > 0) {
      rate.rx_bytes_per_second =
          direction_rate(*earlier, gpu, &NvlinkLinkCounters::rx_bytes, seconds);
      rate.tx_bytes_per_second =
          direction_rate(*earlier, gpu, &NvlinkLinkCounters::tx_bytes, seconds);
    }
    rates.push_back(std::move(rate));
  }
  return rates;
}

bool wants_nvlink_counters(const Snapshot &snapshot) {
  return std::any_of(snapshot.gpus.begin(), snapshot.gpus.end(), takes_counter_rates);
}

void attach_nvlink_rates(Snapshot &snapshot, const std::vector<NvlinkRates> &rates) {
  for (Gpu &gpu : snapshot.gpus) {
    if (!takes_counter_rates(gpu))
      continue;
    for (const NvlinkRates &rate : rates)
      if (listing_lines::same_gpu(gpu.uuid, gpu.index, rate.uuid, rate.gpu_index)) {
        gpu.nvlink_rx_bytes_per_second = rate.rx_bytes_per_second;
        gpu.nvlink_tx_bytes_per_second = rate.tx_bytes_per_second;
        break;
      }
  }
}

} // namespace nvsmi
