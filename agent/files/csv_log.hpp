// The CSV log `watch --csv-log` appends to, for `tail -f`, spreadsheets and `report`: the `csv`
// format's columns, a header only at the top of a new or empty file, each sample's rows in one
// write, rotated as rotating_log.hpp does.
#pragma once

#include "files/rotating_log.hpp"

#include "nvsmi/snapshot.hpp"

#include <string>
#include <vector>

namespace nvsmi {

struct CsvLogSettings {
  std::string path;
  RotationSettings rotation;
  std::vector<std::string> extra_fields; // `watch --fields`, columns after the standard ones
};

class CsvLog {
public:
  // Opens (or creates) the log and locks it; throws AgentError(exit_io) as RotatingLog does. A
  // file whose header is one an earlier version of the agent wrote (fewer columns, the same
  // --fields) is moved aside to PATH.old-columns, untouched, and a new file started: appending
  // would mix rows of two widths, and deleting it would lose them. A file with any other header
  // is refused (exit_io): it is not ours to move.
  explicit CsvLog(CsvLogSettings settings);

  // Appends the sample's rows in a single write. Throws AgentError(exit_io).
  void append(const Snapshot &snapshot);
  void reopen() { log_.reopen(); }

private:
  RotatingLog log_;
};

} // namespace nvsmi
