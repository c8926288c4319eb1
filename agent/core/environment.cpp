#include "core/environment.hpp"

#include <algorithm>

extern char **environ;

namespace nvsmi {

std::vector<std::string> environment_with(const std::vector<std::string> &set,
                                          const std::vector<std::string> &unset) {
  auto name_of = [](const std::string &variable) { return variable.substr(0, variable.find('=')); };
  std::vector<std::string> names = unset;
  for (const std::string &variable : set)
    names.push_back(name_of(variable));
  std::vector<std::string> environment;
  for (char **entry = environ; entry && *entry; ++entry) {
    std::string variable = *entry;
    if (std::find(names.begin(), names.end(), name_of(variable)) == names.end())
      environment.push_back(std::move(variable));
  }
  environment.insert(environment.end(), set.begin(), set.end());
  return environment;
}

} // namespace nvsmi
