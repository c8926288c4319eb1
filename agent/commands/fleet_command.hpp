#pragma once

#include "fleet/fleet_poller.hpp"
#include "formats/format_table.hpp"

namespace nvsmi {

struct FleetOptions {
  FleetClientOptions client;
  bool json = false;
  TableStyle table_style;
};

// Asks every host once, all at once, each within the client's timeout, and prints what each
// answered (fleet_view.hpp). Returns exit_ok once printed, whatever the hosts answered: which
// are unreachable or stale is in the output. Throws AgentError for a CA file that cannot be
// loaded, or stdout that cannot be written.
int run_fleet(const FleetOptions &options);

} // namespace nvsmi
