#include "formats.hpp"

#include <nlohmann/json.hpp>

#include <cstdio>

namespace nvsmi {
namespace {

using ordered_json = nlohmann::ordered_json;

ordered_json entry(int gpu_index, std::string value, std::string shown) {
  ordered_json item;
  item["data"] = ordered_json::array({std::move(value), std::move(shown)});
  item["name"] = gpu_index;
  return item;
}

ordered_json unknown_entry(int gpu_index) { return entry(gpu_index, "N/A", "N/A"); }

std::string two_decimals(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.2f", value);
  return buffer;
}

} // namespace

std::string format_legacy(const Snapshot &snapshot) {
  ordered_json temp = ordered_json::array(), usage = ordered_json::array(),
               used_percent = ordered_json::array();
  for (const Gpu &gpu : snapshot.gpus) {
    if (gpu.temperature_c) {
      std::string value = std::to_string(*gpu.temperature_c);
      temp.push_back(entry(gpu.index, value, value + "C"));
    } else {
      temp.push_back(unknown_entry(gpu.index));
    }
    // "used/total" needs both; a used figure without its total is shown as unknown too.
    if (gpu.memory_used_mib && gpu.memory_total_mib) {
      std::string used = std::to_string(*gpu.memory_used_mib);
      usage.push_back(
          entry(gpu.index, used, used + "MiB/" + std::to_string(*gpu.memory_total_mib) + "MiB"));
    } else {
      usage.push_back(unknown_entry(gpu.index));
    }
    if (auto percent = gpu.memory_used_percent()) {
      std::string value = two_decimals(*percent);
      used_percent.push_back(entry(gpu.index, value, value + "%"));
    } else {
      used_percent.push_back(unknown_entry(gpu.index));
    }
  }
  ordered_json document;
  document["temp"] = std::move(temp);
  document["usage"] = std::move(usage);
  document["usedPercent"] = std::move(used_percent);
  return document.dump();
}

} // namespace nvsmi
