#pragma once

#include <memory>
#include <string>

namespace nvsmi {

// The dashboard served at `/`: one page with its script and styles
// (agent/serve/dashboard/index.html, built into the binary so that nothing is fetched from
// elsewhere).
std::shared_ptr<const std::string> dashboard_page();

} // namespace nvsmi
