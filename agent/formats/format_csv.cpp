#include "formats/formats.hpp"

#include "nvsmi/timestamp.hpp"
#include "nvsmi/utf8.hpp"

#include <cstdio>

namespace nvsmi {
namespace {

constexpr std::string_view csv_header_line =
    "timestamp,index,uuid,name,pstate,temperature.gpu,utilization.gpu [%],"
    "utilization.memory [%],memory.total [MiB],memory.free [MiB],memory.used [MiB],"
    "memory.used_percent [%],power.draw [W]";

// RFC 4180: quote a cell holding a comma, quote or line break, doubling inner quotes.
void append_cell(std::string &row, std::string_view cell, bool first = false) {
  if (!first)
    row += ',';
  if (cell.find_first_of(",\"\r\n") == std::string_view::npos) {
    row += cell;
    return;
  }
  row += '"';
  for (char c : cell) {
    if (c == '"')
      row += '"';
    row += c;
  }
  row += '"';
}

// The log is read by people and spreadsheets: text from nvidia-smi is made valid UTF-8 first.
std::string cell(const Text &text) { return text ? valid_utf8(*text) : std::string(); }
std::string cell(const Reading &value) { return value ? std::to_string(*value) : std::string(); }
std::string cell_2dp(const RealReading &value) {
  if (!value)
    return {};
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.2f", *value);
  return buffer;
}

} // namespace

std::string csv_header(const std::vector<std::string> &extra_fields) {
  std::string line(csv_header_line);
  for (const std::string &name : extra_fields)
    append_cell(line, name);
  return line;
}

std::vector<std::string> extra_field_names(const Snapshot &snapshot) {
  std::vector<std::string> names;
  if (!snapshot.gpus.empty())
    for (const ExtraField &extra : snapshot.gpus.front().extras)
      names.push_back(extra.name);
  return names;
}

std::string format_csv(const Snapshot &snapshot, bool header) {
  std::string out;
  if (header) {
    out += csv_header(extra_field_names(snapshot));
    out += '\n';
  }
  std::string timestamp = snapshot.timestamp ? to_iso8601(*snapshot.timestamp) : std::string();
  for (const Gpu &gpu : snapshot.gpus) {
    std::string row;
    append_cell(row, timestamp, true);
    append_cell(row, std::to_string(gpu.index));
    append_cell(row, cell(gpu.uuid));
    append_cell(row, cell(gpu.name));
    append_cell(row, cell(gpu.pstate));
    append_cell(row, cell(gpu.temperature_c));
    append_cell(row, cell(gpu.utilization_gpu_percent));
    append_cell(row, cell(gpu.utilization_memory_percent));
    append_cell(row, cell(gpu.memory_total_mib));
    append_cell(row, cell(gpu.memory_free_mib));
    append_cell(row, cell(gpu.memory_used_mib));
    append_cell(row, cell_2dp(gpu.memory_used_percent()));
    append_cell(row, cell_2dp(gpu.power_draw_w));
    for (const ExtraField &extra : gpu.extras)
      append_cell(row, cell(extra.value));
    out += row;
    out += '\n';
  }
  return out;
}

} // namespace nvsmi
