// What nvidia-smi is to this agent, apart from how it is run: which command, and how much of its
// output is accepted. Every way of running it (one-shot, long-lived stream, replayed recording)
// shares these; its bytes become a Snapshot in parsers/ (nvsmi/nvidia_smi_output.hpp).
#pragma once

#include "nvsmi/snapshot.hpp"

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace nvsmi {

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

} // namespace nvsmi
