// `top --hosts`: every host's GPUs from its agent's serve, asked every interval by the fleet's
// poller, on top's screen and keys; `top --ssh`: every machine's, sampled over ssh.
#pragma once

#include "fleet/fleet_poller.hpp"
#include "fleet/ssh_fleet.hpp"
#include "terminal/top_layout.hpp"

#include <chrono>
#include <cstddef>
#include <vector>

namespace nvsmi {

// Exactly `size.lines` lines, none wider than `size.columns`: a heading, the fleet's one summary
// line (fleet_view's, as `fleet` prints it; bold, each state's count in its colour), the GPU rows'
// column heading, then from line `scroll` of the hosts' part each host's line (its status, why,
// the age of its last good sample), that sample's summary and its GPUs as top draws them, in the
// same columns for every host, dimmed where the host is not ok; the keys last. `scroll` is
// clamped to what there is to show. `unicode`: the terminal's locale is UTF-8.
std::vector<ScreenLine> layout_fleet_screen(const std::vector<HostReading> &hosts,
                                            std::chrono::system_clock::time_point now,
                                            ScreenSize size, std::size_t &scroll,
                                            std::chrono::milliseconds interval,
                                            bool unicode = true);

// Shows the hosts full-screen, asking them every `interval` (a poll still out is not doubled),
// until `q`, SIGINT or SIGTERM; returns the exit code. Throws AgentError(exit_usage) when stdin
// or stdout is not a terminal, and what the poller throws (a CA file it cannot load).
int run_top_fleet(const FleetClientOptions &client, std::chrono::milliseconds interval);
// The same for machines sampled over ssh (ssh_fleet.hpp) at its interval; on `q` every ssh is
// ended and reaped before the screen is given back. Throws AgentError as SshFleet::start does.
int run_top_ssh(const SshFleetOptions &ssh);

} // namespace nvsmi
