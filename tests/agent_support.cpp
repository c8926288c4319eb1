// What only the suites that run the built agent link (nvsmi_test in tests/CMakeLists.txt): the
// library-only suites have no AGENT_BIN, so that they need not wait for the agent to link.
#include "support.hpp"

namespace test {

Run run_agent(const std::string &arguments) {
  return run_shell(quote(AGENT_BIN) + " " + arguments);
}

} // namespace test
