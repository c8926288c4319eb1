#pragma once

#include "nvsmi/snapshot.hpp"

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace nvsmi {

struct GpuField;

// The `--query-gpu` fields this reader understands and the agent asks for, in that order.
const std::vector<std::string> &query_fields();

// Which reading each column holds: from nvidia-smi's header ("memory.used [MiB]"), or, for
// `--format=csv,noheader`, from the field list that was asked for. Unknown columns are kept as
// placeholders so that the known ones are found however many columns there are.
class CsvLayout {
public:
  // Throws ParseError when a known column's unit in the header is not the one it must have.
  // Unknown columns named in `extra_fields` are kept per row as Gpu::extras (the report reads the
  // agent's own `host.cpu` column this way); other unknown columns are skipped.
  static CsvLayout from_header(std::string_view header_line,
                               const std::vector<std::string> &extra_fields = {});
  // `extra_fields` follow `fields` and are kept per row as Gpu::extras.
  static CsvLayout from_fields(const std::vector<std::string> &fields,
                               const std::vector<std::string> &extra_fields = {});
  // True when the line names at least one known field, which a row of values never does.
  static bool is_header(std::string_view line);

  std::size_t size() const { return columns_.size(); }

  struct Column {
    int field; // index into the reader's field table, -1 when unknown
    std::string name;
    bool extra = false; // an unknown column kept as Gpu::extras
    // The field table's entry (nvsmi/gpu_fields.hpp) where the column is one of its fields, found
    // once with the header rather than for every cell.
    const GpuField *table_field = nullptr;
  };
  const std::vector<Column> &columns() const { return columns_; }

private:
  std::vector<Column> columns_;
};

// One GPU's row, with the per-row values that belong to the whole sample.
struct CsvRow {
  Gpu gpu;
  std::optional<Timestamp> timestamp;
  Text driver_version;
  Reading gpu_count; // the `count` field: how many rows make one sample
};

// Throws ParseError for a ragged row or a bad value; `position` (0-based) stands in for a missing
// `index` column and names the row in messages.
CsvRow read_csv_row(std::string_view line, const CsvLayout &layout, int position);

// A whole `--query-gpu` output: optional header, one row per GPU. Without a header the columns are
// `fields`. Throws ParseError for no rows, or fewer or more rows than the `count` column says.
Snapshot read_csv(std::string_view text, const std::vector<std::string> &fields = query_fields());

} // namespace nvsmi
