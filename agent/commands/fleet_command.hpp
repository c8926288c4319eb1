#pragma once

#include "fleet/fleet_poller.hpp"
#include "fleet/fleet_prometheus.hpp"
#include "fleet/ssh_fleet.hpp"
#include "formats/format_table.hpp"

namespace nvsmi {

struct FleetOptions {
  FleetClientOptions client;
  bool json = false;
  TableStyle table_style;
  // Read the fleet from this Prometheus instead of asking the client's hosts.
  std::optional<PrometheusServer> prometheus;
  // Sample these machines over ssh instead (--ssh): one sample each, then every ssh ended.
  std::optional<SshFleetOptions> ssh;
};

// Asks every host once, all at once, each within the client's timeout, and prints what each
// answered (fleet_view.hpp). Returns exit_ok once printed, whatever the hosts answered: which
// are unreachable or stale is in the output. Throws AgentError for a CA file that cannot be
// loaded, or stdout that cannot be written. With a Prometheus, throws what ask_prometheus throws
// where it cannot be asked (exit_io) or answers what is not its API (exit_bad_output).
// With ssh: every host's first sample (and who runs its processes), or why it has none, within
// the timeout and 5 s more; then every ssh it started is ended and reaped. Throws
// AgentError(exit_not_found) where ssh cannot be run.
int run_fleet(const FleetOptions &options);

} // namespace nvsmi
