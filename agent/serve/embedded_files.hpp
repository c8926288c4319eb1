// The files built into the binary (embed_file.cmake): the dashboard and fleet pages, what both
// load (their state colours, bars and text handling), and the chart library the dashboard loads,
// Debian's dygraphs, so that the pages fetch nothing from outside the agent.
#pragma once

#include <memory>
#include <string>

namespace nvsmi {

std::shared_ptr<const std::string> dashboard_page(); // agent/serve/dashboard/index.html
std::shared_ptr<const std::string> fleet_page();     // agent/serve/dashboard/fleet.html
std::shared_ptr<const std::string> shared_style();   // agent/serve/dashboard/shared.css
std::shared_ptr<const std::string> shared_script();  // agent/serve/dashboard/shared.js
std::shared_ptr<const std::string> dygraph_script(); // dygraph.min.js
std::shared_ptr<const std::string> dygraph_style();  // dygraph.min.css

} // namespace nvsmi
