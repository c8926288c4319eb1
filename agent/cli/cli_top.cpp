#include "cli/cli.hpp"
#include "commands/top_command.hpp"

#include <memory>

namespace nvsmi {

namespace {

SubcommandRun top_options(CLI::App *command) {
  struct Settings {
    TopOptions options;
    SamplingCli sampling;
  };
  auto settings = std::make_shared<Settings>();
  add_sampling_options(command, settings->sampling);
  return {[settings] {
    settings->sampling.finish();
    settings->options.sampling = settings->sampling.options;
    return run_top(settings->options);
  }};
}

} // namespace

Subcommand add_top_command(CLI::App &app) {
  return add_subcommand(
      app, "top",
      "A live full-screen monitor on one long-lived nvidia-smi, as watch samples: each "
      "GPU's state, bars and recent utilization, and who uses it. q quits.",
      top_options);
}

} // namespace nvsmi
