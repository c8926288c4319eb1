// The files built into the binary (embed_file.cmake): the dashboard page and the chart library it
// loads, Debian's dygraphs, so that the dashboard fetches nothing from outside the agent.
#pragma once

#include <memory>
#include <string>

namespace nvsmi {

std::shared_ptr<const std::string> dashboard_page(); // agent/serve/dashboard/index.html
std::shared_ptr<const std::string> fleet_page();     // agent/serve/dashboard/fleet.html
std::shared_ptr<const std::string> dygraph_script(); // dygraph.min.js
std::shared_ptr<const std::string> dygraph_style();  // dygraph.min.css

} // namespace nvsmi
