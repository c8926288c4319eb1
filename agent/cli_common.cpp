#include "cli.hpp"

namespace nvsmi {

void add_nvidia_smi_option(CLI::App *command, std::optional<std::string> &target,
                           CLI::Option *fixture) {
  command
      ->add_option("--nvidia-smi", target,
                   "nvidia-smi command to run, with arguments (default: $NVIDIA_SMI, else "
                   "nvidia-smi on PATH)")
      ->excludes(fixture);
}

void add_source_option(CLI::App *command, std::string &target, const std::string &help) {
  command->add_option("--source", target, help)
      ->check(CLI::IsMember({"xml", "csv"}))
      ->capture_default_str();
}

} // namespace nvsmi
