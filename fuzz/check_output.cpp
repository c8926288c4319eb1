#include "check_output.hpp"

#include "core/screen_text.hpp"
#include "formats/format_table.hpp"
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
  // The table goes to a terminal: no line past its width, no control byte but the newline.
  std::string table = nvsmi::format_table(snapshot, {false, 80});
  std::size_t start = 0;
  for (std::size_t end; (end = table.find('\n', start)) != std::string::npos; start = end + 1)
    if (nvsmi::text_columns(table.substr(start, end - start)) > 80)
      broken("--format table has a line wider than 80 columns", table);
  for (char c : table)
    if ((static_cast<unsigned char>(c) < 0x20 && c != '\n') || c == 0x7f)
      broken("--format table holds a control byte", table);
}

} // namespace fuzz
