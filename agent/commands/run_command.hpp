// `nvsmi-agent run`: claims GPUs, runs a command on them while sampling, and reports what the
// command did there.
#pragma once

#include "jobs/gpu_choice.hpp"
#include "sampling/sampler.hpp"

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace nvsmi {

struct RunOptions {
  SamplerOptions sampling;
  PickCriteria criteria;
  std::size_t gpu_count = 1;          // --gpus, when no --gpu
  std::vector<std::string> gpu_ids;   // --gpu: these GPUs (nvsmi/gpu_selector.hpp)
  std::string gpu_option = "--gpu";   // as the command line spelt it, for its messages
  std::optional<double> wait_seconds; // keep sampling until enough are free, at most this long
  bool uuid = false;                  // CUDA_VISIBLE_DEVICES holds UUIDs
  std::optional<std::string> lock_dir;
  std::optional<std::string> report_file, log_file;
  std::string format = "text"; // of the end-of-run report: text, json or html
  bool details = false;        // --details: the text report's figures behind the job's section
  std::vector<std::string> command;
};

// Runs the job and returns its exit code (128 + N when signal N ended it). Throws AgentError for
// what stops it before the job starts: not enough GPUs (exit 9, or 10 past --wait), a command not
// found (127) or not executable (126), a log that cannot be written.
int run_job(const RunOptions &options);

} // namespace nvsmi
