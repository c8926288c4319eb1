#include "core/number_text.hpp"
#include "formats/formats.hpp"

#include "nvsmi/gpu_fields.hpp"
#include "nvsmi/timestamp.hpp"
#include "nvsmi/utf8.hpp"

#include <cstdio>

namespace nvsmi {
namespace {

// Earlier versions of the agent ended a row at power.draw. A log that holds such rows is moved
// aside rather than appended to (files/csv_log.cpp), so this header stays known.
constexpr std::string_view csv_header_before_host =
    "timestamp,index,uuid,name,pstate,temperature.gpu,utilization.gpu [%],"
    "utilization.memory [%],memory.total [MiB],memory.free [MiB],memory.used [MiB],"
    "memory.used_percent [%],power.draw [W]";
// power.limit tells `report` whether a GPU sat at its limit; the host's CPU and memory whether
// the GPUs waited on the machine beside them.
constexpr std::string_view csv_header_added_columns =
    ",power.limit [W],fan.speed [%],host.cpu [%],host.memory.used [MiB]";

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
  return fixed_text(*value, 2);
}

// The field table's logged columns (nvsmi/gpu_fields.hpp), the first `count` of them, each with
// its unit as the other columns have theirs.
std::string table_columns(std::size_t count) {
  std::string columns;
  for (const GpuField &field : gpu_fields()) {
    if (!field.csv_logged)
      continue;
    if (count-- == 0)
      break;
    columns += ',';
    columns += field.csv_name;
    if (field.unit != Unit::none) {
      columns += " [";
      columns += unit_symbol(field.unit);
      columns += ']';
    }
  }
  return columns;
}

std::size_t logged_field_count() {
  std::size_t count = 0;
  for (const GpuField &field : gpu_fields())
    count += field.csv_logged;
  return count;
}

std::string header_with(std::string line, const std::vector<std::string> &extra_fields) {
  for (const std::string &name : extra_fields)
    append_cell(line, name);
  return line;
}

} // namespace

std::string csv_header(const std::vector<std::string> &extra_fields) {
  return header_with(std::string(csv_header_before_host) + std::string(csv_header_added_columns) +
                         table_columns(logged_field_count()),
                     extra_fields);
}

// The field table's columns were added one at a time after the host's: a header with fewer of
// them is an earlier agent's.
std::vector<std::string> earlier_csv_headers(const std::vector<std::string> &extra_fields) {
  std::vector<std::string> headers{header_with(std::string(csv_header_before_host), extra_fields)};
  for (std::size_t count = 0; count < logged_field_count(); ++count)
    headers.push_back(header_with(std::string(csv_header_before_host) +
                                      std::string(csv_header_added_columns) + table_columns(count),
                                  extra_fields));
  return headers;
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
  // The same on every row of the sample: the machine is one for all its GPUs.
  std::string host_cpu = snapshot.host ? cell_2dp(snapshot.host->cpu_percent) : std::string();
  std::string host_memory = snapshot.host ? cell(snapshot.host->memory_used_mib) : std::string();
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
    append_cell(row, cell_2dp(gpu.power_limit_w));
    append_cell(row, cell(gpu.fan_speed_percent));
    append_cell(row, host_cpu);
    append_cell(row, host_memory);
    for (const GpuField &field : gpu_fields())
      if (field.csv_logged)
        append_cell(row, field.kind == FieldKind::integer ? cell(gpu.health.*field.integer)
                                                          : cell(gpu.health.*field.text));
    for (const ExtraField &extra : gpu.extras)
      append_cell(row, cell(extra.value));
    out += row;
    out += '\n';
  }
  return out;
}

} // namespace nvsmi
