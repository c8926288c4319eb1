#include "nvsmi/dmon.hpp"

#include "nvsmi/quantity.hpp"
#include "nvsmi/stream_readings.hpp"
#include "reader_text.hpp"

#include <cstddef>
#include <cstdint>
#include <limits>
#include <utility>

namespace nvsmi {
namespace {

using Target = DmonReader::Target;

// A row of every dmon group and GPM metric is a few hundred bytes.
constexpr std::size_t max_dmon_line_bytes = 4096;
constexpr std::int64_t mib = 1024 * 1024;

// Every column dmon prints that this reader knows, with the unit its second header line must
// give. Names and units are those of driver 580 (fixtures/recorded/nvidia-h200__580.159.04: the
// dmon-*.txt files, dmon -h for the GPM ids) and 595 (the corpus's L40S capture).
struct KnownColumn {
  std::string_view name, unit;
  Target target;
  std::int64_t scale;
};
constexpr KnownColumn known_columns[] = {
    {"gpu", "Idx", Target::gpu_index, 1},
    // -s p, u, c (the default), v, m, e: the GPU query reads these; known, read past.
    {"pwr", "W", Target::skip, 1},
    {"gtemp", "C", Target::skip, 1},
    {"mtemp", "C", Target::skip, 1},
    {"sm", "%", Target::skip, 1},
    {"mem", "%", Target::skip, 1},
    {"enc", "%", Target::skip, 1},
    {"dec", "%", Target::skip, 1},
    {"jpg", "%", Target::skip, 1},
    {"ofa", "%", Target::skip, 1},
    {"mclk", "MHz", Target::skip, 1},
    {"pclk", "MHz", Target::skip, 1},
    {"pviol", "%", Target::skip, 1},
    {"tviol", "bool", Target::skip, 1},
    {"fb", "MB", Target::skip, 1},
    {"bar1", "MB", Target::skip, 1},
    {"ccpm", "MB", Target::skip, 1},
    {"sbecc", "errs", Target::skip, 1},
    {"dbecc", "errs", Target::skip, 1},
    {"pci", "errs", Target::skip, 1},
    // -s t
    {"rxpci", "MB/s", Target::pcie_rx, mib},
    {"txpci", "MB/s", Target::pcie_tx, mib},
    // --gpm-metrics: 1 gract, 2 smutil, 3 smocc, 4 intutil, 5 mmaact, 6 dfmat, 7 hmmat, 9 immat,
    // 10 dram, 11 fp64, 12 fp32, 13 fp16, 60 nvlrx, 61 nvltx
    {"gract", "GPM:%", Target::skip, 1},
    {"smutil", "GPM:%", Target::sm_active, 1},
    {"smocc", "GPM:%", Target::sm_occupancy, 1},
    {"intutil", "GPM:%", Target::skip, 1},
    {"mmaact", "GPM:%", Target::tensor_active, 1},
    {"dfmat", "GPM:%", Target::skip, 1},
    {"hmmat", "GPM:%", Target::skip, 1},
    {"immat", "GPM:%", Target::skip, 1},
    {"dram", "GPM:%", Target::dram_active, 1},
    {"fp64", "GPM:%", Target::fp64_active, 1},
    {"fp32", "GPM:%", Target::fp32_active, 1},
    {"fp16", "GPM:%", Target::fp16_active, 1},
    {"nvlrx", "GPM:MiB/s", Target::nvlink_rx, mib},
    {"nvltx", "GPM:MiB/s", Target::nvlink_tx, mib},
};

const KnownColumn *find_known(std::string_view name) {
  for (const KnownColumn &column : known_columns)
    if (column.name == name)
      return &column;
  return nullptr;
}

// A GPM metric this driver has no name for: dmon heads its column "id=N" and prints "-" under it
// (driver 580 for an id it does not know: fixtures/recorded/nvidia-h100-80gb-hbm3__580.159.04/
// dmon-gpm-unknown-id.txt). Read past: it names no figure, so nothing is guessed.
bool unnamed_gpm_metric(std::string_view name, std::string_view unit) {
  if (name.size() < 4 || name.substr(0, 3) != "id=" || unit.substr(0, 4) != "GPM:")
    return false;
  for (char c : name.substr(3))
    if (c < '0' || c > '9')
      return false;
  return true;
}

// The cells of a header or row: whitespace-separated in the table, ", "-separated with
// `--format csv`. A header's leading '#' is the caller's to remove.
std::vector<std::string_view> cells_of(std::string_view text, bool csv) {
  std::vector<std::string_view> cells;
  if (csv) {
    while (true) {
      std::size_t comma = text.find(',');
      cells.push_back(trim(text.substr(0, comma)));
      if (comma == std::string_view::npos)
        break;
      text.remove_prefix(comma + 1);
    }
    if (cells.size() == 1 && cells[0].empty())
      cells.clear();
  } else {
    for (std::string_view token = next_token(text); !token.empty(); token = next_token(text))
      cells.push_back(token);
  }
  return cells;
}

// Where a target's figure must lie (nvsmi/stream_readings.hpp): GPM's shares of the interval,
// and the traffic, which is a rate.
bool is_share(Target target) {
  switch (target) {
  case Target::sm_active:
  case Target::sm_occupancy:
  case Target::tensor_active:
  case Target::dram_active:
  case Target::fp16_active:
  case Target::fp32_active:
  case Target::fp64_active:
    return true;
  default:
    return false;
  }
}
bool is_rate(Target target) {
  return target == Target::pcie_rx || target == Target::pcie_tx || target == Target::nvlink_rx ||
         target == Target::nvlink_tx;
}

Reading value_of(std::string_view cell, const DmonReader::Column &column,
                 std::vector<std::string> &dropped) {
  if (is_share(column.target) || is_rate(column.target))
    return stream_reading(cell,
                          {"dmon", column.name, column.unit,
                           is_share(column.target) ? StreamRange::share : StreamRange::rate,
                           column.scale},
                          dropped);
  // The GPU's index, and the columns read past: a number or unknown, nothing more is asked.
  std::string name = "dmon column " + column.name;
  if (cell == "-" || is_unknown(cell))
    return std::nullopt;
  return parse_integer(cell, Unit::none, UnitPolicy::optional, name);
}

void assign(DmonRow &row, Target target, Reading value) {
  switch (target) {
  case Target::skip:
    break;
  case Target::gpu_index:
    row.gpu_index = value;
    break;
  case Target::sm_active:
    row.sm_active_percent = value;
    break;
  case Target::sm_occupancy:
    row.sm_occupancy_percent = value;
    break;
  case Target::tensor_active:
    row.tensor_active_percent = value;
    break;
  case Target::dram_active:
    row.dram_active_percent = value;
    break;
  case Target::fp16_active:
    row.fp16_active_percent = value;
    break;
  case Target::fp32_active:
    row.fp32_active_percent = value;
    break;
  case Target::fp64_active:
    row.fp64_active_percent = value;
    break;
  case Target::pcie_rx:
    row.pcie_rx_bytes_per_second = value;
    break;
  case Target::pcie_tx:
    row.pcie_tx_bytes_per_second = value;
    break;
  case Target::nvlink_rx:
    row.nvlink_rx_bytes_per_second = value;
    break;
  case Target::nvlink_tx:
    row.nvlink_tx_bytes_per_second = value;
    break;
  }
}

} // namespace

DmonReader::Outcome DmonReader::add_line(std::string_view line) {
  Outcome outcome;
  if ((outcome.error = overlong_line("dmon", line, max_dmon_line_bytes)))
    return outcome;
  std::string_view content = trim(line);
  if (content.empty())
    return outcome;
  if (content.front() == '#') {
    content.remove_prefix(1);
    bool csv = content.find(',') != std::string_view::npos;
    std::vector<std::string_view> cells = cells_of(content, csv);
    if (cells.empty())
      return outcome;
    if (cells[0] == "gpu") {
      // The names line; the units line follows. Until it does, rows are not read.
      names_.assign(cells.begin(), cells.end());
      columns_.clear();
      csv_ = csv;
      return outcome;
    }
    if (cells[0] != "Idx")
      return outcome; // a comment dmon does not print; nothing to read in it
    if (names_.empty()) {
      if (!columns_.empty())
        return outcome; // a units line again under a header already read
      outcome.error = "dmon units line without its names line: " + excerpt(line);
      return outcome;
    }
    std::vector<std::string> names = std::move(names_);
    names_.clear();
    if (cells.size() != names.size()) {
      outcome.error = "dmon header has " + std::to_string(names.size()) + " names but " +
                      std::to_string(cells.size()) + " units; its rows are not read";
      return outcome;
    }
    std::vector<Column> columns;
    for (std::size_t i = 0; i < names.size(); ++i) {
      if (unnamed_gpm_metric(names[i], cells[i])) {
        columns.push_back({Target::skip, 1, names[i], std::string(cells[i])});
        continue;
      }
      const KnownColumn *known = find_known(names[i]);
      if (!known || known->unit != cells[i]) {
        outcome.error = "dmon column " + excerpt(names[i]) + " in " + excerpt(cells[i]) +
                        (known ? " (this reader knows it in " + std::string(known->unit) + ")"
                               : " is not one this reader knows") +
                        "; the rows under this header are not read";
        return outcome;
      }
      // The unit a note shows: GPM's "GPM:%" is a share like any other.
      std::string_view unit =
          known->unit.substr(0, 4) == "GPM:" ? known->unit.substr(4) : known->unit;
      columns.push_back({known->target, known->scale, names[i], std::string(unit)});
    }
    columns_ = std::move(columns);
    return outcome;
  }
  if (columns_.empty()) {
    outcome.error = "dmon row without a header it knows: " + excerpt(content);
    return outcome;
  }
  std::vector<std::string_view> cells = cells_of(content, csv_);
  if (cells.size() != columns_.size()) {
    outcome.error = "dmon row has " + std::to_string(cells.size()) + " values for " +
                    std::to_string(columns_.size()) + " columns: " + excerpt(content);
    return outcome;
  }
  DmonRow row;
  std::vector<std::string> dropped;
  try {
    for (std::size_t i = 0; i < cells.size(); ++i)
      assign(row, columns_[i].target, value_of(cells[i], columns_[i], dropped));
  } catch (const ParseError &error) {
    outcome.error = error.what();
    return outcome;
  }
  if (!row.gpu_index) {
    outcome.error = "dmon row without a GPU index: " + excerpt(content);
    return outcome;
  }
  if (!dropped.empty())
    outcome.dropped = dropped_line("dmon GPU " + std::to_string(*row.gpu_index), dropped);
  outcome.row = std::move(row);
  return outcome;
}

void attach_dmon(Snapshot &snapshot, const std::vector<DmonRow> &rows) {
  for (const DmonRow &row : rows)
    for (Gpu &gpu : snapshot.gpus) {
      if (!row.gpu_index || gpu.index != *row.gpu_index)
        continue;
      gpu.sm_active_percent = row.sm_active_percent;
      gpu.sm_occupancy_percent = row.sm_occupancy_percent;
      gpu.tensor_active_percent = row.tensor_active_percent;
      gpu.dram_active_percent = row.dram_active_percent;
      gpu.fp16_active_percent = row.fp16_active_percent;
      gpu.fp32_active_percent = row.fp32_active_percent;
      gpu.fp64_active_percent = row.fp64_active_percent;
      gpu.nvlink_rx_bytes_per_second = row.nvlink_rx_bytes_per_second;
      gpu.nvlink_tx_bytes_per_second = row.nvlink_tx_bytes_per_second;
      if (row.pcie_rx_bytes_per_second)
        gpu.pcie_rx_bytes_per_second = row.pcie_rx_bytes_per_second;
      if (row.pcie_tx_bytes_per_second)
        gpu.pcie_tx_bytes_per_second = row.pcie_tx_bytes_per_second;
    }
}

std::vector<DmonRow> read_dmon(std::string_view text) {
  DmonReader reader;
  std::vector<DmonRow> rows;
  while (!text.empty()) {
    std::size_t newline = text.find('\n');
    DmonReader::Outcome outcome = reader.add_line(text.substr(0, newline));
    text.remove_prefix(newline == std::string_view::npos ? text.size() : newline + 1);
    if (outcome.error)
      throw ParseError(*outcome.error);
    if (outcome.row)
      rows.push_back(std::move(*outcome.row));
  }
  return rows;
}

} // namespace nvsmi
