// MonitorCost's readings (sampling/monitor_cost.hpp): the agent's own reading for --cpu-budget is
// never the one a client is given (a client asking again within the second is given its own
// reading again: tests/test_monitor_cost.cpp): serve's first /metrics after the budget's minute was
// a reading up to a second old, below what /proc said of the agent before the scrape.
#include "sampling/monitor_cost.hpp"

#include <catch2/catch.hpp>

#include <ctime>

namespace test_monitor_cost_reading {

namespace {

// Spends `seconds` of this process's CPU (std::clock, the count getrusage has too).
void burn(double seconds) {
  std::clock_t until = std::clock() + static_cast<std::clock_t>(seconds * CLOCKS_PER_SEC);
  volatile unsigned long spin = 0;
  while (std::clock() < until)
    for (int i = 0; i < 10000; ++i)
      spin = spin + 1;
}

} // namespace

TEST_CASE("monitor cost: the budget's reading is never the one a client is given") {
  nvsmi::MonitorCost cost;
  nvsmi::AgentCost budget = cost.read_now({});
  burn(0.06);
  nvsmi::AgentCost client = cost.read({});
  CHECK(client.cpu_seconds >= budget.cpu_seconds + 0.05);
  // Nor is a client's reading, within its second, the budget's: it is always read now.
  burn(0.06);
  nvsmi::AgentCost later = cost.read_now({});
  CHECK(later.cpu_seconds >= client.cpu_seconds + 0.05);
}

} // namespace test_monitor_cost_reading
