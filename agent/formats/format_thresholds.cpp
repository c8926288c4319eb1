// The thresholds table as JSON, for the dashboard, which colours and draws by it without a copy of
// its own.
#include "formats/formats.hpp"

#include "nvsmi/thresholds.hpp"

#include <nlohmann/json.hpp>

namespace nvsmi {

std::string format_thresholds_json() {
  nlohmann::json table = {{"schema", "nvsmi-agent.thresholds/1"},
                          {"hot_c", thresholds::hot_c},
                          {"too_hot_c", thresholds::too_hot_c},
                          {"power_limit_fraction", thresholds::power_limit_fraction},
                          {"idle_below_percent", thresholds::idle_below_percent},
                          {"memory_held_mib", thresholds::memory_held_mib},
                          {"starved_below_percent", thresholds::starved_below_percent}};
  return table.dump() + "\n";
}

} // namespace nvsmi
