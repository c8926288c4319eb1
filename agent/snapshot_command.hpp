#pragma once

#include "formats.hpp"

#include <optional>
#include <string>
#include <vector>

namespace nvsmi {

enum class SourceKind { xml, csv };

struct SnapshotOptions {
  SourceKind source = SourceKind::xml;
  Format format = Format::legacy;
  std::optional<std::string> fixture;    // a recorded output to read instead; "-" is stdin
  std::optional<std::string> nvidia_smi; // command (with arguments) to run instead of nvidia-smi
  double timeout_seconds = 10;
  std::optional<std::string> output; // replaced atomically instead of printing
  std::optional<std::string> lock;   // leave at once (exit_locked) if another run holds it
};

// Largest nvidia-smi output or fixture accepted (a 64-GPU `-q -x` is about 3 MiB).
constexpr std::size_t max_input_bytes = 64u << 20;

// The nvidia-smi command to run: --nvidia-smi, else $NVIDIA_SMI, else nvidia-smi from PATH,
// split into words like a shell would. Throws AgentError(exit_usage) for an empty or unclosed one.
std::vector<std::string> nvidia_smi_argv(const std::optional<std::string> &option);

// Reads nvidia-smi (or the fixture), and prints or writes the snapshot. Throws AgentError.
void run_snapshot(const SnapshotOptions &options);

// Parses recorded or live nvidia-smi output, telling XML from CSV by content. `origin` names
// it in error messages. Throws AgentError(exit_bad_output).
Snapshot parse_output(const std::string &bytes, const std::string &origin);

} // namespace nvsmi
