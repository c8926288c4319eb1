#include "nvidia_smi/source.hpp"

#include "core/exit_codes.hpp"
#include "core/privilege.hpp"
#include "nvidia_smi/command_line.hpp"

#include "nvsmi/compute_apps.hpp"

#include <cstdlib>
#include <stdexcept>

namespace nvsmi {

std::string field_list(const std::vector<std::string> &names) {
  std::string joined;
  for (const std::string &name : names)
    joined += (joined.empty() ? "" : ",") + name;
  return joined;
}

std::vector<std::string> compute_apps_arguments() {
  return {"--query-compute-apps=" + field_list(compute_apps_fields()), "--format=csv"};
}

std::vector<std::string> compute_apps_loop_arguments(std::chrono::milliseconds interval) {
  return {"--query-compute-apps=" + field_list(compute_apps_loop_fields()), "--format=csv,nounits",
          "-lms", std::to_string(interval.count())};
}

std::vector<std::string> nvidia_smi_argv(const std::optional<std::string> &option) {
  std::string command = "nvidia-smi";
  if (option)
    command = *option;
  else if (std::optional<std::string> variable = caller_named_variable("NVIDIA_SMI"))
    command = *variable;
  std::vector<std::string> argv;
  try {
    argv = split_command(command);
  } catch (const std::invalid_argument &error) {
    throw AgentError(exit_usage, error.what());
  }
  if (argv.empty())
    throw AgentError(exit_usage, "--nvidia-smi is empty");
  return argv;
}

} // namespace nvsmi
