#pragma once

#include "sampling/sampler.hpp"

namespace nvsmi {

struct TopOptions {
  SamplerOptions sampling;
};

// Shows the samples full-screen until `q`, SIGINT or SIGTERM, and returns the exit code. Throws
// AgentError(exit_usage) when stdin or stdout is not a terminal, and what the sampler throws
// before it starts (an unreadable fixture, no nvidia-smi).
int run_top(const TopOptions &options);

} // namespace nvsmi
