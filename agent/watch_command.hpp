#pragma once

#include "formats.hpp"
#include "snapshot_command.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace nvsmi {

struct WatchOptions {
  double interval_seconds = 1;
  SourceKind source = SourceKind::csv;
  std::optional<Format> format; // stdout stream; default legacy unless --csv-log is given
  std::optional<std::string> csv_log;
  std::uint64_t csv_max_bytes = 0;
  int csv_keep = 5;
  std::optional<long> count;
  std::optional<std::string> nvidia_smi;
  std::optional<std::string> fixture; // replayed at the interval instead of running nvidia-smi
  std::optional<double> stall_timeout_seconds; // default max(3 x interval, 10 s)
  std::vector<std::string> fields; // --fields: csv source only, after the standard query
};

// Samples until --count, SIGINT or SIGTERM, and returns the exit code. Throws AgentError for
// what stops it before it starts (a log it may not append to, an unreadable fixture).
int run_watch(const WatchOptions &options);

} // namespace nvsmi
