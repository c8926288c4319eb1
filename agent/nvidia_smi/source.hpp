// What nvidia-smi is to this agent, apart from how it is run: which command, which of its two
// outputs, how much of it is accepted, and how its bytes become a Snapshot. Every way of running
// it (one-shot, long-lived stream, replayed recording) shares these.
#pragma once

#include "nvsmi/snapshot.hpp"

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace nvsmi {

enum class SourceKind { xml, csv };

// Largest nvidia-smi output or fixture accepted (a 64-GPU `-q -x` is about 3 MiB).
constexpr std::size_t max_input_bytes = 64u << 20;

// The nvidia-smi command to run: --nvidia-smi, else $NVIDIA_SMI, else nvidia-smi from PATH,
// split into words like a shell would. Throws AgentError(exit_usage) for an empty or unclosed one.
std::vector<std::string> nvidia_smi_argv(const std::optional<std::string> &option);

// Field names comma-separated, as nvidia-smi's --query-* options take them.
std::string field_list(const std::vector<std::string> &names);
// The compute processes, asked for as one answer with its header (for read_compute_apps).
std::vector<std::string> compute_apps_arguments();
// The compute processes from nvidia-smi's own loop, every `interval`: timestamp first, so that
// the rows of one iteration are known by it, and with the header, so that a run's start is seen
// even when no process runs (ComputeAppsLoop).
std::vector<std::string> compute_apps_loop_arguments(std::chrono::milliseconds interval);

// nvidia-smi may say on stdout, before its XML, which GPUs it cannot read ("Unable to determine
// the device handle for GPU ..."): the document is read, and those GPUs are in it, lost. nullopt
// for output that does not start with such lines and go on with a document. Throws ParseError
// for a bad document.
std::optional<Snapshot> read_xml_after_unreadable_lines(std::string_view content);

// Parses recorded or live nvidia-smi output, telling XML from CSV by content. `origin` names
// it in error messages. Throws AgentError(exit_bad_output).
Snapshot parse_output(const std::string &bytes, const std::string &origin);

} // namespace nvsmi
