#include "core/number_text.hpp"
#include "formats/formats.hpp"

#include "nvsmi/gpu_fields.hpp"
#include "nvsmi/timestamp.hpp"
#include "nvsmi/utf8.hpp"

#include <cstdio>

namespace nvsmi {
namespace {

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
// Watts and the memory percent to two decimals, as nvidia-smi prints them.
std::string cell(const RealReading &value) {
  if (!value)
    return {};
  return fixed_text(*value, 2);
}

// What each row starts with, in every version of the log.
constexpr std::string_view identity_columns = "timestamp,index,uuid,name";

// The first `count` of the GPU's columns the CSV log has (nvsmi/gpu_fields.hpp), each with its
// unit, and the first `host_count` of the host's after column csv_log_host_after where `count`
// reaches past it.
std::string gpu_columns(std::size_t count, std::size_t host_count = host_log_columns.size()) {
  std::string columns;
  for (std::size_t i = 0; i < count && i < csv_logged_fields().size(); ++i) {
    const GpuField &field = *csv_logged_fields()[i];
    columns += ',';
    columns += field.csv_name;
    // nvidia-smi's own CSV header prints no unit after a temperature: nor does the log's.
    if (field.unit != Unit::none && field.unit != Unit::celsius) {
      columns += " [";
      columns += unit_symbol(field.unit);
      columns += ']';
    }
    // power.limit tells `report` whether a GPU sat at its limit; the host's CPU, memory, disk and
    // network whether the GPUs waited on the machine beside them.
    if (static_cast<int>(i) + 1 == csv_log_host_after)
      for (std::size_t h = 0; h < host_count; ++h)
        columns +=
            std::string(",") + host_log_columns[h].name + " [" + host_log_columns[h].symbol + "]";
  }
  return columns;
}

std::string header_with(std::string line, const std::vector<std::string> &extra_fields) {
  for (const std::string &name : extra_fields)
    append_cell(line, name);
  return line;
}

} // namespace

std::string csv_header(const std::vector<std::string> &extra_fields) {
  return header_with(std::string(identity_columns) + gpu_columns(csv_logged_fields().size()),
                     extra_fields);
}

// Earlier versions of the agent ended a row at power.draw (the ninth of the GPU's columns), then
// at the host's two columns (CPU and memory) after fan.speed, then added the table's columns one
// at a time, then the host's disk and network columns (all_host_log_columns_since), then more of
// the table's. A log that holds such rows is
// moved aside rather than appended to (files/csv_log.cpp), so their headers stay known.
std::vector<std::string> earlier_csv_headers(const std::vector<std::string> &extra_fields) {
  constexpr std::size_t first_log_columns = 9;
  std::vector<std::string> headers{
      header_with(std::string(identity_columns) + gpu_columns(first_log_columns), extra_fields)};
  std::size_t now = csv_logged_fields().size();
  for (std::size_t count = csv_log_host_after; count <= now; ++count)
    headers.push_back(
        header_with(std::string(identity_columns) + gpu_columns(count, earlier_host_log_columns),
                    extra_fields));
  for (std::size_t count = all_host_log_columns_since; count < now; ++count)
    headers.push_back(
        header_with(std::string(identity_columns) + gpu_columns(count), extra_fields));
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
  std::string host_cells;
  for (const HostLogColumn &column : host_log_columns) {
    std::string value;
    if (snapshot.host)
      value =
          column.real ? cell((*snapshot.host).*column.real) : cell((*snapshot.host).*column.whole);
    append_cell(host_cells, value);
  }
  for (const Gpu &gpu : snapshot.gpus) {
    std::string row;
    append_cell(row, timestamp, true);
    append_cell(row, std::to_string(gpu.index));
    append_cell(row, cell(gpu.uuid));
    append_cell(row, cell(gpu.name));
    for (std::size_t i = 0; i < csv_logged_fields().size(); ++i) {
      csv_logged_fields()[i]->with_reading(
          gpu, [&](const auto &value) { append_cell(row, cell(value)); });
      if (static_cast<int>(i) + 1 == csv_log_host_after)
        row += host_cells; // each cell with its comma before it
    }
    for (const ExtraField &extra : gpu.extras)
      append_cell(row, cell(extra.value));
    out += row;
    out += '\n';
  }
  return out;
}

} // namespace nvsmi
