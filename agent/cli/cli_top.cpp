#include "cli/cli.hpp"
#include "commands/top_command.hpp"

#include <memory>

namespace nvsmi {

namespace {

SubcommandRun top_options(CLI::App *command) {
  struct Settings {
    TopOptions options;
    SamplingCli sampling;
    FleetClientCli fleet;
    SshCli ssh;
  };
  auto settings = std::make_shared<Settings>();
  add_sampling_options(command, settings->sampling);
  add_fleet_client_options(command, settings->fleet, "--");
  add_ssh_options(command, settings->ssh, &settings->fleet);
  // Other hosts' samples or this machine's: a source given beside --hosts would be ignored.
  for (const char *source : {"--fixture", "--nvidia-smi"})
    for (CLI::Option *hosts : {settings->fleet.hosts_option, settings->fleet.hosts_file_option})
      hosts->excludes(command->get_option(source));
  for (const char *source : {"--fixture", "--nvidia-smi"})
    for (CLI::Option *ssh : {settings->ssh.hosts_option, settings->ssh.hosts_file_option})
      ssh->excludes(command->get_option(source));
  return {[settings] {
    if (settings->fleet.given())
      settings->options.fleet = settings->fleet.finish("top");
    if (settings->ssh.given())
      settings->options.ssh = settings->ssh.finish(settings->sampling.options.interval_seconds,
                                                   settings->fleet.timeout_seconds);
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
      "GPU's state, bars and recent utilization, and who uses it; with --hosts, every host's "
      "GPUs from its agent's serve; with --ssh, every machine's over ssh. q quits.",
      top_options);
}

} // namespace nvsmi
