// The thresholds table as JSON, for the dashboard, which colours and draws by it without a copy of
// its own.
#include "formats/formats.hpp"

#include "nvsmi/thresholds.hpp"

#include <nlohmann/json.hpp>

namespace nvsmi {

std::string format_thresholds_json() {
  nlohmann::json table = {{"schema", "nvsmi-agent.thresholds/1"},
                          {"hot_c", gpu_thresholds::hot_c},
                          {"too_hot_c", gpu_thresholds::too_hot_c},
                          {"power_limit_fraction", gpu_thresholds::power_limit_fraction},
                          {"memory_full_fraction", gpu_thresholds::memory_full_fraction},
                          {"idle_below_percent", gpu_thresholds::idle_below_percent},
                          {"memory_held_mib", gpu_thresholds::memory_held_mib},
                          {"starved_below_percent", gpu_thresholds::starved_below_percent}};
  return table.dump() + "\n";
}

} // namespace nvsmi
