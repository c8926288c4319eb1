#pragma once

#include "fleet/fleet_poller.hpp"
#include "fleet/fleet_prometheus.hpp"
#include "formats/format_table.hpp"

namespace nvsmi {

struct FleetOptions {
  FleetClientOptions client;
  bool json = false;
  TableStyle table_style;
  // Read the fleet from this Prometheus instead of asking the client's hosts.
  std::optional<PrometheusServer> prometheus;
};

// Asks every host once, all at once, each within the client's timeout, and prints what each
// answered (fleet_view.hpp). Returns exit_ok once printed, whatever the hosts answered: which
// are unreachable or stale is in the output. Throws AgentError for a CA file that cannot be
// loaded, or stdout that cannot be written. With a Prometheus, throws what ask_prometheus throws
// where it cannot be asked (exit_io) or answers what is not its API (exit_bad_output).
int run_fleet(const FleetOptions &options);

} // namespace nvsmi
