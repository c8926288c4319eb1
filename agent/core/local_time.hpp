#pragma once

#include "nvsmi/snapshot.hpp"

#include <chrono>
#include <cstdint>
#include <optional>

namespace nvsmi {

// nvidia-smi prints this machine's local time without a zone: this attaches the UTC offset (TZ,
// else /etc/localtime) that was in force at that moment. A wall time has one offset, except in
// the hour that repeats when the clocks go back (02:00-02:59 twice in Europe/Berlin), where it
// takes, in turn:
//   1. the pass within 10 minutes of the moment the agent received the sample (a live sample);
//   2. else the first pass not before the previous sample (a recording replayed in order);
//   3. else the first pass.
// A wall time the clocks skip (02:30 when they go forward) is read with the offset before the
// change.
class LocalOffsets {
public:
  using Clock = std::chrono::system_clock;
  // Does nothing when the snapshot has no timestamp, or one that carries its offset.
  void attach(Snapshot &snapshot, Clock::time_point received = Clock::now());

private:
  std::optional<std::int64_t> previous_ms_; // the previous sample's instant
};

// One sample on its own (no previous one), received now.
void attach_local_offset(Snapshot &snapshot);

// `seconds` after the epoch as this machine's local time then, with its UTC offset (and the given
// milliseconds), as ISO 8601: "2026-11-23T09:14:02+01:00". nullopt where the calendar cannot say.
Text local_iso8601(std::int64_t seconds, std::optional<int> millisecond = std::nullopt);

// The instant a timestamp names, in seconds after the epoch; nullopt where its offset is unknown.
std::optional<double> epoch_seconds(const Timestamp &t);

} // namespace nvsmi
