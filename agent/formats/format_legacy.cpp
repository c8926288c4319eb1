#include "core/number_text.hpp"
#include "formats/formats.hpp"
#include "formats/json_writer.hpp"

#include <cstdio>

namespace nvsmi {
namespace {

// {"data":[value, shown],"name":index}, both "N/A" when the reading is unknown.
void entry(JsonWriter &json, int gpu_index, const std::optional<std::string> &value,
           const std::string &shown) {
  json.begin_object();
  json.key("data");
  json.begin_array();
  json.value(value.value_or("N/A"));
  json.value(value ? shown : std::string("N/A"));
  json.end_array();
  json.key("name");
  json.value(gpu_index);
  json.end_object();
}

std::optional<std::string> text_of(const Reading &reading) {
  return reading ? std::optional<std::string>(std::to_string(*reading)) : std::nullopt;
}

} // namespace

std::string format_legacy(const Snapshot &snapshot) {
  std::string out;
  JsonWriter json(out);
  json.begin_object();
  json.key("temp");
  json.begin_array();
  for (const Gpu &gpu : snapshot.gpus) {
    auto value = text_of(gpu.temperature_c);
    entry(json, gpu.index, value, value.value_or("") + "C");
  }
  json.end_array();
  json.key("usage");
  json.begin_array();
  for (const Gpu &gpu : snapshot.gpus) {
    // "used/total" needs both; a used figure without its total is shown as unknown too.
    auto used = gpu.memory_total_mib ? text_of(gpu.memory_used_mib) : std::nullopt;
    entry(json, gpu.index, used,
          used ? *used + "MiB/" + std::to_string(*gpu.memory_total_mib) + "MiB" : "");
  }
  json.end_array();
  json.key("usedPercent");
  json.begin_array();
  for (const Gpu &gpu : snapshot.gpus) {
    auto percent = gpu.memory_used_percent();
    auto value = percent ? std::optional<std::string>(fixed_text(*percent, 2)) : std::nullopt;
    entry(json, gpu.index, value, value.value_or("") + "%");
  }
  json.end_array();
  json.end_object();
  return out;
}

} // namespace nvsmi
