// The JSON log `watch --json-log` appends to: one typed snapshot (format_json) per line, with
// what CSV rows cannot hold (processes, their users and containers, the host). Locked, written a
// sample at a time and rotated as rotating_log.hpp does. A path ending in ".gz" gets each line as
// a gzip member of its own (gzip_text.hpp): the same lines, about a seventh of the bytes, and the
// file is whole gzip after every write.
#pragma once

#include "files/rotating_log.hpp"

#include "nvsmi/snapshot.hpp"

#include <string>

namespace nvsmi {

class JsonLog {
public:
  // Opens (or creates) the log and locks it; throws AgentError(exit_io) as RotatingLog does, and
  // when the file holds something other than this agent's snapshots, compressed where the path
  // ends in ".gz" and plain where not: appending would mix them.
  JsonLog(const std::string &path, RotationSettings rotation);

  // Appends the sample's line in a single write. Throws AgentError(exit_io).
  void append(const Snapshot &snapshot);
  void reopen() { log_.reopen(); }

private:
  RotatingLog log_;
  bool compressed_;
};

} // namespace nvsmi
