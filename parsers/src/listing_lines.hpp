// What the readers of nvidia-smi's listings share: `-L` and `nvlink` (-s, -gt d) print, per GPU, a
// line "GPU 0: NVIDIA A100-SXM4-40GB (UUID: GPU-...)" and under it one line per MIG device
// ("MIG 3g.40gb Device 0: (UUID: MIG-...)") or per link ("Link 3: ...").
#pragma once

#include "nvsmi/quantity.hpp"
#include "nvsmi/snapshot.hpp"
#include "reader_text.hpp"

#include <charconv>
#include <optional>
#include <string_view>

namespace nvsmi::listing_lines {

// No GPU's links come near this (an NVLink 5 GPU has 18 links of 53 GB/s): a larger capacity or
// rate is a garbled line, and would overflow the reading.
constexpr double max_bytes_per_second = 1e14;

inline bool starts_with(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

// The whole of `text` as a non-negative integer, or nullopt.
inline std::optional<int> whole_number(std::string_view text) {
  int value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value < 0)
    return std::nullopt;
  return value;
}

// "NUMBER UNIT" (the unit with its space, " GB/s", " KiB") -> the whole of NUMBER read as T, or
// nullopt: the unit is checked, never assumed, and nothing may follow the number but it.
template <typename T>
std::optional<T> number_with_unit(std::string_view value, std::string_view unit) {
  if (value.size() <= unit.size() || value.substr(value.size() - unit.size()) != unit)
    return std::nullopt;
  std::string_view number = value.substr(0, value.size() - unit.size());
  T read{};
  auto [end, error] = std::from_chars(number.data(), number.data() + number.size(), read);
  if (error != std::errc() || end != number.data() + number.size())
    return std::nullopt;
  return read;
}

// The next line of `text` that is not blank, trimmed, and `text` past it; false at its end.
inline bool next_line(std::string_view &text, std::string_view &line) {
  while (!text.empty()) {
    std::size_t newline = text.find('\n');
    line = trim(text.substr(0, newline));
    text.remove_prefix(newline == std::string_view::npos ? text.size() : newline + 1);
    if (!line.empty())
      return true;
  }
  return false;
}

// Whether two entries name the same GPU: by UUID where both know it, else by index (an output
// without UUIDs, an older driver's).
inline bool same_gpu(const Text &uuid_a, int index_a, const Text &uuid_b, int index_b) {
  return uuid_a && uuid_b ? *uuid_a == *uuid_b : index_a == index_b;
}

// "N: REST" (what follows "GPU " or "Link ") -> N, with `rest` set to what follows the colon;
// nullopt where N is not a whole number.
inline std::optional<int> numbered(std::string_view after_word, std::string_view &rest) {
  std::size_t colon = after_word.find(':');
  std::optional<int> number =
      colon == std::string_view::npos ? std::nullopt : whole_number(after_word.substr(0, colon));
  if (number)
    rest = after_word.substr(colon + 1);
  return number;
}

struct GpuLine {
  int index = 0;
  Text name, uuid;
};

// "... (UUID: X)" -> X, with `rest` cut to what comes before it, trimmed; unknown (and `rest`
// as it was) where the line does not end so.
inline Text uuid_at_end(std::string_view &rest) {
  constexpr std::string_view mark = "(UUID: ";
  std::size_t at = rest.rfind(mark);
  if (at == std::string_view::npos || rest.back() != ')')
    return std::nullopt;
  Text uuid = parse_text(rest.substr(at + mark.size(), rest.size() - at - mark.size() - 1));
  rest = trim(rest.substr(0, at));
  return uuid;
}

// "GPU 0: NAME (UUID: GPU-...)" (a line that starts with "GPU "); nullopt where its index is not a
// whole number. A name or UUID that is not there stays unknown.
inline std::optional<GpuLine> gpu_line(std::string_view line) {
  std::string_view rest;
  std::optional<int> index = numbered(line.substr(4), rest);
  if (!index)
    return std::nullopt;
  GpuLine gpu;
  gpu.index = *index;
  rest = trim(rest);
  gpu.uuid = uuid_at_end(rest);
  gpu.name = parse_text(rest);
  return gpu;
}

// "Link 3: REST" (a line that starts with "Link ") -> the link's number, and REST trimmed on its
// left; nullopt where the number is not a whole number.
inline std::optional<int> link_line(std::string_view line, std::string_view &rest) {
  std::optional<int> number = numbered(line.substr(5), rest);
  if (!number)
    return std::nullopt;
  while (!rest.empty() && (rest.front() == ' ' || rest.front() == '\t'))
    rest.remove_prefix(1);
  return number;
}

// What nvidia-smi prints under a GPU's line instead of its links, with exit status 0, where that
// GPU has no NVLink figures (fixtures/README.md says where each was seen): as printed, but for
// case, a trailing '.' and the "NVML: " some drivers put before it. The one answer that depends on
// the GPU's mode (MIG) says nothing of the others.
inline std::optional<std::string_view> no_nvlink_answer(std::string_view line) {
  static constexpr std::string_view answers[] = {
      "NVML: Unable to retrieve Nvlink information as all links are inActive",
      "Device does not have or support Nvlink",
      "Nvlink queries are not supported for Devices in MIG mode",
  };
  auto without_nvml = [](std::string_view text) {
    constexpr std::string_view nvml = "nvml: ";
    bool prefixed =
        text.size() >= nvml.size() && equal_ignoring_case(text.substr(0, nvml.size()), nvml);
    return prefixed ? text.substr(nvml.size()) : text;
  };
  if (!line.empty() && line.back() == '.')
    line.remove_suffix(1);
  line = without_nvml(line);
  for (std::string_view answer : answers)
    if (equal_ignoring_case(without_nvml(answer), line))
      return answer;
  return std::nullopt;
}

} // namespace nvsmi::listing_lines
