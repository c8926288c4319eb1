// Reading the logs a report is made from, in one pass and bounded memory: the files in time
// order, one line at a time. A line that starts with `{` is a `watch --json-log` sample, any other
// a CSV header (which (re)sets the columns) or row; each GPU's reading is handed on, or the line
// counted as bad with the reason.
#pragma once

#include "nvsmi/csv_reader.hpp"

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace nvsmi {

struct BadRows {
  enum Kind {
    unparsable,    // ragged, or a value that is not a number in its unit
    no_timestamp,  // unknown or unreadable timestamp: the row cannot be placed in time
    out_of_order,  // not later than the GPU's previous row
    too_long,      // a line over the cap
    bad_header,    // under a header with a wrong unit: its values cannot be trusted
    too_many_gpus, // a GPU beyond the cap
    unfinished,    // a last line without its newline: a row still being written
    kind_count
  };
  static constexpr std::size_t max_examples = 5;

  std::array<std::int64_t, kind_count> counts{};
  std::vector<std::string> examples; // the first few, "FILE:LINE: why"

  void add(Kind kind, const std::string &where, const std::string &why);
  std::int64_t total() const;
  static const char *name(Kind kind); // "unparsable", "no_timestamp", ...
};

// One GPU's reading at one time: a CSV row, or one GPU of a JSON line.
struct LogRow {
  const std::string &file;
  std::int64_t line;
  const Gpu &gpu;
  const Timestamp &timestamp;
  // The host's readings of the sample: the CSV log's host columns (host.cpu, host.disk.read ...),
  // the JSON log's host object; all unknown where the log has none.
  Host host;
  // Every GPU of the row's sample, this one among them, for a JSON log's line or a sample taken
  // in memory (whose processes kept the host's CPUs busy); nullptr for a CSV row.
  const std::vector<Gpu> *sample_gpus = nullptr;
};

struct LogTotals {
  std::vector<std::string> files; // in the order read
  // CSV rows, and the GPUs of each JSON line (a JSON line that cannot be read counts as one row)
  std::int64_t rows = 0;
};

// Opens every file first (AgentError exit_io when one cannot be read) and reads each once, a pipe
// or FIFO included. Reads them oldest first
// (by their first row's timestamp, when every file has one; else in the order given) and calls
// `take` for each row that has a timestamp. A CSV header line sets the columns for the CSV rows
// after it, across files; before any header they are nvsmi::query_fields(). JSON lines and CSV
// rows may be mixed, in one file or across files.
LogTotals read_logs(const std::vector<std::string> &paths, BadRows &bad,
                    const std::function<void(const LogRow &)> &take);

// The rows of one sample, a JSON log's line read back or one taken in memory: one for each of its
// GPUs, or one bad row ("PATH:NUMBER: why") for a sample without GPUs, and each GPU's a bad row
// without a timestamp.
void take_sample(const Snapshot &snapshot, const std::string &path, std::int64_t number,
                 BadRows &bad, LogTotals &totals, const std::function<void(const LogRow &)> &take);

// Seconds since 1970-01-01 of the timestamp's wall clock, ignoring any offset.
double wall_seconds(const Timestamp &t);
// The instant in seconds since the epoch where the offset is known, else the wall clock.
double instant_seconds(const Timestamp &t);
// Whether `a` is before `b`: as instants when both have an offset, else by wall clock.
bool earlier(const Timestamp &a, const Timestamp &b);

} // namespace nvsmi
