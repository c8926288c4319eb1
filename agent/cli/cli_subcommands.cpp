#include "cli/cli.hpp"

namespace nvsmi {

Subcommand add_subcommand(CLI::App &app, const std::string &name, const std::string &description,
                          std::function<SubcommandRun(CLI::App *command)> add_options) {
  CLI::App *command = app.add_subcommand(name, description);
  auto chosen = std::make_shared<SubcommandRun>();
  // CLI11 calls this once, as it enters the command and before it reads the command's first
  // argument, so the options are there for everything it parses and for `NAME --help`. A
  // command it never enters keeps only its name and line, all that `nvsmi-agent --help` shows.
  command->preparse_callback(
      [command, chosen, add = std::move(add_options)](std::size_t) { *chosen = add(command); });
  return {command, chosen};
}

std::vector<Subcommand> add_subcommands(CLI::App &app) {
  return {
      add_snapshot_command(app), add_watch_command(app), add_report_command(app),
      add_serve_command(app),    add_top_command(app),   add_pick_command(app),
      add_run_command(app),      add_check_command(app),
  };
}

} // namespace nvsmi
