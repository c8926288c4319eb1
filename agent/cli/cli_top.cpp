#include "cli/cli.hpp"
#include "commands/top_command.hpp"

#include <memory>

namespace nvsmi {

Subcommand add_top_command(CLI::App &app) {
  struct Settings {
    TopOptions options;
    SamplingCli sampling;
  };
  auto settings = std::make_shared<Settings>();
  CLI::App *command = app.add_subcommand(
      "top", "A live full-screen monitor on one long-lived nvidia-smi, as watch samples: each "
             "GPU's state, bars and recent utilization, and who uses it. q quits.");
  add_sampling_options(command, settings->sampling);
  return {command, [settings] {
            settings->sampling.finish();
            settings->options.sampling = settings->sampling.options;
            return run_top(settings->options);
          }};
}

} // namespace nvsmi
