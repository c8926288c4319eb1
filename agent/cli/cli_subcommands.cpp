#include "cli/cli.hpp"

namespace nvsmi {

Subcommand add_subcommand(CLI::App &app, const std::string &name, const std::string &description,
                          std::function<SubcommandRun(CLI::App *command)> add_options) {
  return {app.add_subcommand(name, description), std::make_shared<SubcommandRun>(),
          std::move(add_options)};
}

Subcommands::Subcommands(std::vector<Subcommand> all) : all_(std::move(all)) {
  // CLI11 calls this once, as it enters the command and before it reads the command's first
  // argument, so the options are there for everything it parses and for `NAME --help`. A
  // command it never enters keeps only its name and line, all that `nvsmi-agent --help` shows.
  for (const Subcommand &subcommand : all_)
    subcommand.command->preparse_callback([&subcommand, chosen = chosen_](std::size_t) {
      *subcommand.chosen = subcommand.add_options(subcommand.command);
      *chosen = &subcommand;
    });
}

Subcommands add_subcommands(CLI::App &app) {
  return Subcommands({
      add_snapshot_command(app),
      add_watch_command(app),
      add_report_command(app),
      add_job_command(app),
      add_serve_command(app),
      add_top_command(app),
      add_pick_command(app),
      add_run_command(app),
      add_check_command(app),
      add_fleet_command(app),
  });
}

} // namespace nvsmi
