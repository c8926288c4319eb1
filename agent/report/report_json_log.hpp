// One line of a `watch --json-log` file (the `nvsmi-agent.snapshot/1` document) read back into a
// Snapshot, as far as the report uses it.
#pragma once

#include "nvsmi/quantity.hpp"
#include "nvsmi/snapshot.hpp"

#include <cstddef>
#include <functional>
#include <limits>
#include <optional>
#include <string_view>

namespace nvsmi {

// What one line may hold before it is refused, counted while it is read so that what is built of
// it stays bounded: none for a log of the operator's own; another host's answer to `fleet` is
// held to fleet_answer_limits (fleet/fleet_poller.hpp).
struct SnapshotLimits {
  std::size_t max_gpus = std::numeric_limits<std::size_t>::max();
  std::size_t max_processes_per_gpu = std::numeric_limits<std::size_t>::max();
  std::size_t max_text_bytes = std::numeric_limits<std::size_t>::max(); // of one string or name
  // Of every JSON value of the line (members the reader skips included): what bounds the parsed
  // tree where the counts above do not reach.
  std::size_t max_values = std::numeric_limits<std::size_t>::max();
};

// A line over one of its limits: "more than 64 GPUs, the most a host's answer may hold".
class SnapshotLimitError : public ParseError {
public:
  using ParseError::ParseError;
};

// Reads the timestamp; of each GPU its identity (index, uuid, name, pci_bus_id), pstate,
// temperature, memory, utilization, power draw and limit, fan speed and processes (pid, type,
// name, used memory, user, CPU share); and the host's figures. Other fields are skipped, and
// `null` or a missing field is unknown. A timestamp that cannot be read is unknown too, as in the
// CSV log. Throws ParseError, naming the field, for what is not such a line: not JSON, nested
// deeper than any snapshot, another schema, no `gpus` list, or a field of the wrong type or sign;
// SnapshotLimitError, as soon as it is seen, for a line over `limits`.
Snapshot read_json_log_line(std::string_view line, const SnapshotLimits &limits = {});

struct ServeHistoryRead {
  std::size_t samples = 0;
  std::optional<double> history_seconds; // how far back the serve keeps samples
};

// serve's /api/v1/history document ("nvsmi-agent.history/1"): each sample's snapshot, read as
// read_json_log_line reads a line, handed to `take` oldest first and let go of, so that memory
// holds one sample's tree at a time beside the body. Throws ParseError, naming the sample and
// field, for what is not such a document (after `take` has seen the samples before it).
ServeHistoryRead read_serve_history(std::string_view body,
                                    const std::function<void(Snapshot)> &take);

} // namespace nvsmi
