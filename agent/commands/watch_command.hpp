#pragma once

#include "files/rotating_log.hpp"
#include "formats/formats.hpp"
#include "sampling/sampler.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace nvsmi {

struct WatchOptions {
  SamplerOptions sampling;
  std::optional<Format> format; // stdout stream; default legacy unless a log is given
  std::optional<std::string> csv_log, json_log;
  RotationSettings csv_rotation = default_log_rotation, json_rotation = default_log_rotation;
  std::optional<long> count;
  double cost_every_seconds = 60; // the JSON's `agent` object; 0: never
};

// Samples until --count, SIGINT or SIGTERM, and returns the exit code. Throws AgentError for
// what stops it before it starts (a log it may not append to, an unreadable fixture).
int run_watch(const WatchOptions &options);

} // namespace nvsmi
