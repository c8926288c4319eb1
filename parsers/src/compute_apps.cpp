#include "nvsmi/compute_apps.hpp"

#include "nvsmi/quantity.hpp"
#include "reader_text.hpp"

#include <array>
#include <cstddef>

namespace nvsmi {
namespace {

enum class Column { other, gpu_uuid, pid, used_memory, process_name };

struct KnownName {
  std::string_view name;
  Column column;
};

// `--help-query-compute-apps` lists these; "name" and "used_memory" are its aliases. The first four
// are the agent's own; the rest are known only so that a header naming them is seen as one.
constexpr std::array<KnownName, 10> known_names{{
    {"gpu_uuid", Column::gpu_uuid},
    {"pid", Column::pid},
    {"used_gpu_memory", Column::used_memory},
    {"used_memory", Column::used_memory},
    {"process_name", Column::process_name},
    {"name", Column::process_name},
    {"timestamp", Column::other},
    {"gpu_name", Column::other},
    {"gpu_bus_id", Column::other},
    {"gpu_serial", Column::other},
}};

const KnownName *find_name(std::string_view name) {
  for (const KnownName &known : known_names)
    if (known.name == name)
      return &known;
  return nullptr;
}

// A cell's place in its line, so that a process name holding ", " can be taken back as printed.
struct Span {
  std::size_t begin, end;
};

// nvidia-smi separates values with ", " and never quotes them: a quote is part of a value.
std::vector<Span> split_cells(std::string_view line) {
  std::vector<Span> cells;
  std::size_t begin = 0;
  while (true) {
    std::size_t comma = line.find(',', begin);
    cells.push_back({begin, comma == std::string_view::npos ? line.size() : comma});
    if (comma == std::string_view::npos)
      return cells;
    begin = comma + 1;
  }
}

std::string_view cell_text(std::string_view line, Span span) {
  return trim(line.substr(span.begin, span.end - span.begin));
}

struct Layout {
  std::vector<Column> columns;
  std::ptrdiff_t name_column = -1; // the process_name column, which takes the cells to spare
};

Layout layout_from_fields(const std::vector<std::string> &fields) {
  Layout layout;
  for (const std::string &field : fields) {
    const KnownName *known = find_name(field);
    Column column = known ? known->column : Column::other;
    if (column == Column::process_name && layout.name_column < 0)
      layout.name_column = static_cast<std::ptrdiff_t>(layout.columns.size());
    layout.columns.push_back(column);
  }
  return layout;
}

// Field names start with a lower-case letter and no value nvidia-smi prints in the first column
// does ("GPU-...", a date, a pid, "[N/A]"); a name must also be one of the known fields, so that a
// message such as "no devices were found" is not taken for a header.
bool is_header(std::string_view line) {
  std::string_view first = trim(line.substr(0, line.find(',')));
  if (first.empty() || first.front() < 'a' || first.front() > 'z')
    return false;
  for (Span span : split_cells(line)) {
    std::string_view name, unit;
    split_header_cell(cell_text(line, span), name, unit);
    if (find_name(name))
      return true;
  }
  return false;
}

Layout layout_from_header(std::string_view line) {
  std::vector<std::string> names;
  for (Span span : split_cells(line)) {
    std::string_view name, unit;
    split_header_cell(cell_text(line, span), name, unit);
    const KnownName *known = find_name(name);
    if (known && known->column == Column::used_memory && !unit.empty() &&
        unit != unit_symbol(Unit::mib))
      throw ParseError(std::string(name) + ": header unit [" + std::string(unit) +
                       "], expected [MiB]");
    names.emplace_back(name);
  }
  return layout_from_fields(names);
}

ComputeApp read_row(std::string_view line, const Layout &layout, std::size_t row) {
  std::vector<Span> cells = split_cells(line);
  std::size_t columns = layout.columns.size();
  if (cells.size() < columns || (cells.size() > columns && layout.name_column < 0))
    throw ParseError("compute-apps row " + std::to_string(row) + " is not a row of " +
                     std::to_string(columns) + " values (" + std::to_string(cells.size()) +
                     " found): " + excerpt(line));
  std::size_t spare = cells.size() - columns;
  ComputeApp app;
  try {
    for (std::size_t j = 0; j < columns; ++j) {
      bool after_name = layout.name_column >= 0 && j > static_cast<std::size_t>(layout.name_column);
      Span span = cells[after_name ? j + spare : j];
      switch (layout.columns[j]) {
      case Column::other:
        break;
      case Column::gpu_uuid:
        app.gpu_uuid = parse_text(cell_text(line, span));
        break;
      case Column::pid:
        app.pid = parse_integer(cell_text(line, span), Unit::none, UnitPolicy::optional, "pid");
        break;
      case Column::used_memory:
        app.used_memory_mib = parse_integer(cell_text(line, span), Unit::mib, UnitPolicy::optional,
                                            "used_gpu_memory");
        break;
      case Column::process_name:
        if (static_cast<std::ptrdiff_t>(j) == layout.name_column) // the commas in it are its own
          span.end = cells[j + spare].end;
        app.process_name = parse_text(cell_text(line, span));
        break;
      }
    }
  } catch (const ParseError &error) {
    throw ParseError("compute-apps row " + std::to_string(row) + " " + error.what());
  }
  return app;
}

} // namespace

const std::vector<std::string> &compute_apps_fields() {
  static const std::vector<std::string> fields{"gpu_uuid", "pid", "used_gpu_memory",
                                               "process_name"};
  return fields;
}

std::vector<ComputeApp> read_compute_apps(std::string_view text) {
  std::vector<ComputeApp> apps;
  std::optional<Layout> layout;
  std::size_t row = 0;
  while (!text.empty()) {
    std::size_t newline = text.find('\n');
    std::string_view line = text.substr(0, newline);
    text.remove_prefix(newline == std::string_view::npos ? text.size() : newline + 1);
    if (!line.empty() && line.back() == '\r')
      line.remove_suffix(1);
    if (trim(line).empty())
      continue;
    // A header again (outputs joined) sets the columns again rather than failing as a row.
    if (is_header(line)) {
      layout = layout_from_header(line);
      continue;
    }
    if (!layout)
      layout = layout_from_fields(compute_apps_fields());
    apps.push_back(read_row(line, *layout, ++row));
  }
  return apps;
}

const std::vector<std::string> &compute_apps_loop_fields() {
  static const std::vector<std::string> fields = [] {
    std::vector<std::string> all{"timestamp"};
    all.insert(all.end(), compute_apps_fields().begin(), compute_apps_fields().end());
    return all;
  }();
  return fields;
}

ComputeAppsLoopReader::Outcome ComputeAppsLoopReader::add_line(std::string_view line) {
  // A row is under 200 bytes and an iteration lists a few hundred processes at most: far past
  // either is not nvidia-smi's loop, and holding it would let the writer grow our memory.
  constexpr std::size_t max_line_bytes = 4096, max_rows = 4096;
  Outcome outcome;
  if (!line.empty() && line.back() == '\r')
    line.remove_suffix(1);
  if ((outcome.error = overlong_line("compute-apps", line, max_line_bytes))) {
    other_seen_ = true;
    return outcome;
  }
  if (trim(line).empty())
    return outcome;
  if (is_header(line)) {
    header_seen_ = true;
    return outcome;
  }
  other_seen_ = true;
  static const Layout layout = layout_from_fields(compute_apps_loop_fields());
  ComputeApp app;
  try {
    app = read_row(line, layout, pending_ ? pending_->apps.size() + 1 : 1);
  } catch (const ParseError &error) {
    outcome.error = error.what();
    return outcome;
  }
  // The first cell (timestamp comes first in compute_apps_loop_fields()).
  std::string_view timestamp = trim(line.substr(0, line.find(',')));
  if (timestamp.empty() || is_unknown(timestamp)) {
    outcome.error = "compute-apps row without its timestamp: " + excerpt(line);
    return outcome;
  }
  if (pending_ && pending_->timestamp != timestamp)
    outcome.sample = flush();
  if (!pending_ && timestamp == done_) {
    outcome.error =
        "compute-apps row of an iteration already taken or dropped skipped: " + excerpt(line);
    return outcome;
  }
  if (!pending_)
    pending_ = Sample{std::string(timestamp), {}};
  if (pending_->apps.size() >= max_rows) {
    outcome.error =
        "compute-apps iteration of more than " + std::to_string(max_rows) + " rows dropped";
    done_ = pending_->timestamp;
    pending_.reset();
    return outcome;
  }
  pending_->apps.push_back(std::move(app));
  return outcome;
}

std::optional<ComputeAppsLoopReader::Sample> ComputeAppsLoopReader::flush() {
  std::optional<Sample> sample = std::move(pending_);
  pending_.reset();
  if (sample)
    done_ = sample->timestamp;
  return sample;
}

void attach_compute_apps(Snapshot &snapshot, const std::vector<ComputeApp> &apps) {
  for (Gpu &gpu : snapshot.gpus) {
    if (!gpu.uuid)
      continue;
    std::vector<Process> processes;
    for (const ComputeApp &app : apps) {
      if (app.gpu_uuid != gpu.uuid)
        continue;
      Process process;
      process.pid = app.pid;
      process.type = "C"; // the query lists compute processes only
      process.name = app.process_name;
      process.used_memory_mib = app.used_memory_mib;
      processes.push_back(std::move(process));
    }
    gpu.processes = std::move(processes);
  }
}

} // namespace nvsmi
