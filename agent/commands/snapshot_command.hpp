#pragma once

#include "formats/formats.hpp"
#include "nvidia_smi/source.hpp"

#include <optional>
#include <string>
#include <vector>

namespace nvsmi {

struct SnapshotOptions {
  SourceKind source = SourceKind::xml;
  Format format = Format::legacy;
  TableStyle table_style;                // for Format::table: the screen the caller found
  std::optional<std::string> fixture;    // a recorded output to read instead; "-" is stdin
  std::optional<std::string> nvidia_smi; // command (with arguments) to run instead of nvidia-smi
  double timeout_seconds = 10;
  std::optional<std::string> output; // replaced atomically instead of printing
  std::optional<std::string> lock;   // leave at once (exit_locked) if another run holds it
  bool processes = true;             // csv source: ask --query-compute-apps too
  bool host = true;                  // read this machine's /proc: not when nvidia-smi is remote
};

// Reads nvidia-smi (or the fixture), and prints or writes the snapshot. Throws AgentError.
void run_snapshot(const SnapshotOptions &options);

} // namespace nvsmi
