#pragma once

#include "formats/formats.hpp"
#include "sampling/one_sample.hpp"

#include <optional>
#include <string>

namespace nvsmi {

struct SnapshotOptions : OneSampleOptions {
  Format format = Format::legacy;
  TableStyle table_style;            // for Format::table: the screen the caller found
  std::optional<std::string> output; // replaced atomically instead of printing
  std::optional<std::string> lock;   // leave at once (exit_locked) if another run holds it
};

// Reads nvidia-smi (or the fixture), and prints or writes the snapshot. Throws AgentError.
void run_snapshot(const SnapshotOptions &options);

} // namespace nvsmi
