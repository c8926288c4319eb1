// What a refused command line says: one line in plain words, with the name the user most likely
// meant, instead of CLI11's own ("A subcommand is required" for a misspelt command).
#include "cli/cli.hpp"

#include <algorithm>
#include <limits>

namespace nvsmi {
namespace {

std::size_t edit_distance(const std::string &a, const std::string &b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j)
    row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// The candidate closest to `typed`: one it begins (snap, snapshot) or one a slip or two away
// (--formt, --format). Empty when none is that close, since a far guess misleads.
std::string closest(const std::string &typed, const std::vector<std::string> &candidates) {
  std::string best;
  std::size_t best_distance = std::numeric_limits<std::size_t>::max();
  std::size_t bare = typed.find_first_not_of('-');
  for (const std::string &candidate : candidates) {
    std::size_t distance = edit_distance(typed, candidate);
    bool begins = bare != std::string::npos && typed.size() - bare >= 2 &&
                  candidate.compare(0, typed.size(), typed) == 0;
    if ((begins ||
         distance <= std::max<std::size_t>(1, std::min<std::size_t>(2, typed.size() / 3))) &&
        distance < best_distance) {
      best = candidate;
      best_distance = distance;
    }
  }
  return best;
}

std::string suggestion(const std::string &typed, const std::vector<std::string> &candidates) {
  std::string best = closest(typed, candidates);
  return best.empty() ? "" : "; did you mean '" + best + "'?";
}

std::vector<std::string> option_names(const CLI::App *command) {
  std::vector<std::string> names;
  for (const CLI::Option *option : command->get_options()) {
    for (const std::string &name : option->get_lnames())
      names.push_back("--" + name);
    for (const std::string &name : option->get_snames())
      names.push_back("-" + name);
  }
  return names;
}

} // namespace

std::string usage_error(const CLI::App &app, const Subcommands &subcommands,
                        const CLI::ParseError &error, const std::vector<std::string> &arguments) {
  const CLI::App *chosen = subcommands.chosen() ? subcommands.chosen()->command : nullptr;

  if (!chosen) {
    std::vector<std::string> commands;
    for (const Subcommand &subcommand : subcommands.all())
      commands.push_back(subcommand.command->get_name());
    auto word = std::find_if(arguments.begin(), arguments.end(), [](const std::string &argument) {
      return argument.rfind('-', 0) != 0;
    });
    if (word != arguments.end())
      return "unknown command '" + *word + "'" + suggestion(*word, commands) +
             " (see nvsmi-agent --help)";
    if (dynamic_cast<const CLI::RequiredError *>(&error)) {
      std::string list;
      for (const std::string &command : commands)
        list += (list.empty() ? "" : ", ") + command;
      return "a command is required: " + list + " (see nvsmi-agent --help)";
    }
  }

  std::string help =
      chosen ? "nvsmi-agent " + chosen->get_name() + " --help" : "nvsmi-agent --help";
  std::string prefix = chosen ? chosen->get_name() + ": " : "";
  if (dynamic_cast<const CLI::ExtrasError *>(&error)) {
    for (const std::string &extra : app.remaining(true)) {
      if (extra.rfind('-', 0) != 0 || extra == "-")
        continue;
      std::string name = extra.substr(0, extra.find('='));
      const CLI::App *owner = chosen ? chosen : &app;
      return prefix + "unknown option '" + name + "'" + suggestion(name, option_names(owner)) +
             " (see " + help + ")";
    }
  }
  // The option is named already (CLI11's "--interval: ..."), and the --help to read names the
  // command.
  return error.what() + (" (see " + help + ")");
}

} // namespace nvsmi
