// The environment a child of the agent gets: the agent's own, with some variables set anew.
#pragma once

#include <string>
#include <vector>

namespace nvsmi {

// The agent's environment ("NAME=value" each) without the variables named in `set` or `unset`,
// then `set` ("NAME=value" each): a variable the caller already had cannot shadow or repeat one
// the agent sets for its child.
std::vector<std::string> environment_with(const std::vector<std::string> &set,
                                          const std::vector<std::string> &unset = {});

} // namespace nvsmi
