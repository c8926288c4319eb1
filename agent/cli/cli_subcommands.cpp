#include "cli/cli.hpp"

#include <algorithm>
#include <array>

namespace nvsmi {
namespace {

struct SubcommandEntry {
  const char *name;
  Subcommand (*add)(CLI::App &app);
};

// Every subcommand, in the order --help lists them. Each `add` registers the name beside it
// (the cli_subcommands tests check that they agree).
constexpr std::array<SubcommandEntry, 10> subcommand_table = {{
    {"snapshot", add_snapshot_command},
    {"watch", add_watch_command},
    {"report", add_report_command},
    {"job", add_job_command},
    {"serve", add_serve_command},
    {"top", add_top_command},
    {"pick", add_pick_command},
    {"run", add_run_command},
    {"check", add_check_command},
    {"fleet", add_fleet_command},
}};

bool names_a_subcommand(const std::string &word) {
  return std::any_of(subcommand_table.begin(), subcommand_table.end(),
                     [&word](const SubcommandEntry &entry) { return word == entry.name; });
}

} // namespace

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
      read_numbers_as_checked(subcommand.command);
      *chosen = &subcommand;
    });
}

Subcommands add_subcommands(CLI::App &app, const std::string &only) {
  std::vector<Subcommand> all;
  for (const SubcommandEntry &entry : subcommand_table)
    if (only.empty() || only == entry.name)
      all.push_back(entry.add(app));
  return Subcommands(std::move(all));
}

std::optional<std::string> lone_subcommand(const std::vector<std::string> &arguments) {
  if (arguments.empty() || !names_a_subcommand(arguments.front()))
    return std::nullopt;
  // CLI11 ends an option's list of values at any subcommand's name, the parent's included: a
  // command line with a second one is parsed with all of them, where it reads as it always has.
  if (std::any_of(arguments.begin() + 1, arguments.end(), names_a_subcommand))
    return std::nullopt;
  return arguments.front();
}

} // namespace nvsmi
