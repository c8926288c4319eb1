// Output formats: each a pure function of a Snapshot.
#pragma once

#include "formats/format_table.hpp"
#include "nvsmi/snapshot.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace nvsmi {

enum class Format { legacy, json, csv, table };

std::optional<Format> format_from_name(std::string_view name);
// Its name on the command line: format_from_name(format_name(f)) is f.
std::string format_name(Format format);

// The document the legacy business UI reads, one line:
// {"temp":[{"data":["72","72C"],"name":0}],"usage":[{"data":["8493","8493MiB/15079MiB"],...
std::string format_legacy(const Snapshot &snapshot);
// The typed snapshot ("nvsmi-agent.snapshot/1"), one line, null for unknown readings.
std::string format_json(const Snapshot &snapshot);
// The `csv` format's header line, without its newline, then a column per extra field.
std::string csv_header(const std::vector<std::string> &extra_fields = {});
// The headers earlier versions of this agent wrote for the same extra fields, oldest first: a log
// that starts with one of them holds rows of fewer columns than csv_header's.
std::vector<std::string> earlier_csv_headers(const std::vector<std::string> &extra_fields = {});
// The names of the extra fields (`watch --fields`) the snapshot's GPUs carry.
std::vector<std::string> extra_field_names(const Snapshot &snapshot);
// A header (unless `header` is false) and one row per GPU, nvidia-smi's column names, extra
// fields last.
std::string format_csv(const Snapshot &snapshot, bool header = true);

// The thresholds table (nvsmi/thresholds.hpp) as one JSON object ("nvsmi-agent.thresholds/1"),
// newline-terminated: what `serve` hands the dashboard at /api/v1/thresholds.
std::string format_thresholds_json();

// Any of the above, newline-terminated; `table` (format_table.hpp) drawn in `style`.
std::string format_snapshot(const Snapshot &snapshot, Format format, const TableStyle &style = {});

} // namespace nvsmi
