#pragma once

#include "fleet/fleet_poller.hpp"
#include "fleet/ssh_fleet.hpp"
#include "sampling/sampler.hpp"

#include <optional>

namespace nvsmi {

struct TopOptions {
  SamplerOptions sampling;
  // --hosts: other agents' serve, asked every --interval, instead of this machine's nvidia-smi.
  std::optional<FleetClientOptions> fleet;
  // --ssh: machines sampled over ssh, every --interval, instead.
  std::optional<SshFleetOptions> ssh;
};

// Shows the samples full-screen until `q`, SIGINT or SIGTERM, and returns the exit code. Throws
// AgentError(exit_usage) when stdin or stdout is not a terminal, and what the sampler throws
// before it starts (an unreadable fixture, no nvidia-smi).
int run_top(const TopOptions &options);

} // namespace nvsmi
