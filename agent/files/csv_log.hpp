// The CSV log `watch --csv-log` appends to, for `tail -f` and spreadsheets: the `csv` format's
// columns, a header only at the top of a new or empty file, each sample's rows in one write.
#pragma once

#include "nvsmi/snapshot.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace nvsmi {

struct CsvLogSettings {
  std::string path;
  std::uint64_t max_bytes = 0;           // rotate before passing this size; 0: never
  int keep = 5;                          // rotated files kept: path.1 (newest) .. path.keep
  std::vector<std::string> extra_fields; // `watch --fields`, columns after the standard ones
};

class CsvLog {
public:
  // Opens (or creates) the log and locks it (flock) for as long as it is open. Throws
  // AgentError(exit_io) when it cannot, when another process holds the lock (a second `watch` on
  // one log), or when the file's header is not this agent's: appending would mix columns.
  explicit CsvLog(CsvLogSettings settings);
  ~CsvLog();
  CsvLog(const CsvLog &) = delete;
  CsvLog &operator=(const CsvLog &) = delete;

  // Appends the sample's rows in a single write. Throws AgentError(exit_io).
  void append(const Snapshot &snapshot);
  // Closes and opens the path again, as logrotate expects on SIGHUP.
  void reopen();

private:
  void open();
  void rotate();
  CsvLogSettings settings_;
  int fd_ = -1;
};

} // namespace nvsmi
