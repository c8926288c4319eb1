#include "check_output.hpp"

#include "formats/formats.hpp"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace fuzz {
namespace {

[[noreturn]] void broken(const char *what, const std::string &output) {
  std::fprintf(stderr, "broken output: %s\n%.2000s\n", what, output.c_str());
  std::abort();
}

bool non_negative(const std::optional<std::int64_t> &value) { return !value || *value >= 0; }

} // namespace

void check_formats(const nvsmi::Snapshot &snapshot) {
  for (const nvsmi::Gpu &gpu : snapshot.gpus) {
    if (!non_negative(gpu.memory_total_mib) || !non_negative(gpu.memory_used_mib) ||
        !non_negative(gpu.utilization_gpu_percent) || !non_negative(gpu.fan_speed_percent))
      broken("a negative reading was accepted", nvsmi::format_json(snapshot));
  }
  std::string json = nvsmi::format_json(snapshot);
  if (!nlohmann::json::accept(json))
    broken("--format json is not JSON", json);
  std::string legacy = nvsmi::format_legacy(snapshot);
  if (!nlohmann::json::accept(legacy))
    broken("--format legacy is not JSON", legacy);
  std::string csv = nvsmi::format_csv(snapshot);
  std::size_t lines = 0;
  bool quoted = false;
  for (char c : csv) {
    if (c == '"')
      quoted = !quoted;
    else if (c == '\n' && !quoted)
      ++lines;
  }
  if (lines != snapshot.gpus.size() + 1)
    broken("--format csv does not have a line per GPU after its header", csv);
}

} // namespace fuzz
