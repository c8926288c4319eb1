// What a refused command line says: one printable line in plain words, with the name the user most
// likely meant, or the names there are, instead of CLI11's own ("A subcommand is required" for a
// misspelt command, a far guess for an option the command lacks).
#include "cli/cli.hpp"
#include "core/closest_name.hpp"
#include "core/screen_text.hpp"

#include <algorithm>
#include <limits>

namespace nvsmi {
namespace {

// The longest line a refusal may be: every value in it is cut already (shown_value), this keeps a
// message of CLI11's own that repeats a long one to a line.
constexpr std::size_t max_message_columns = 1000;

// Spellings that choose GPUs on this or another tool (nvidia-smi -i, --id; CUDA's devices): on a
// command without them, the answer is the command's own way to choose GPUs, never a near name
// (`top --gpu` is not `--gpm`).
const std::vector<std::string> gpu_spellings = {"gpu", "gpus", "gpu-id", "gpu-ids", "gpuid",
                                                "id",  "i",    "device", "devices"};

std::string joined(const std::vector<std::string> &names) {
  std::string list;
  for (const std::string &name : names)
    list += (list.empty() ? "" : ", ") + name;
  return list;
}

// What --help lists of `command`: its options' names, hidden aliases and --help left out.
std::vector<std::string> option_names(const CLI::App *command) {
  std::vector<std::string> names;
  for (const CLI::Option *option : command->get_options()) {
    if (option == command->get_help_ptr() || option->get_group().empty() ||
        !option->nonpositional())
      continue;
    for (const std::string &name : option->get_lnames())
      names.push_back("--" + name);
    for (const std::string &name : option->get_snames())
      names.push_back("-" + name);
  }
  return names;
}

std::vector<std::string> command_names(const Subcommands &subcommands) {
  std::vector<std::string> names;
  for (const Subcommand &subcommand : subcommands.all())
    names.push_back(subcommand.command->get_name());
  return names;
}

// The first word of the command line that is not an option: the command meant.
std::optional<std::string> command_word(const std::vector<std::string> &arguments) {
  auto word = std::find_if(arguments.begin(), arguments.end(),
                           [](const std::string &argument) { return argument.rfind('-', 0) != 0; });
  if (word == arguments.end())
    return std::nullopt;
  return *word;
}

// `name`, an option `command` does not have: the one meant, or what it has.
std::string unknown_option(const CLI::App *command, const std::string &name) {
  std::string label = command->get_name().empty() ? "nvsmi-agent" : command->get_name();
  std::vector<std::string> names = option_names(command);
  std::string said = "unknown option " + shown_value(name);
  if (std::find(gpu_spellings.begin(), gpu_spellings.end(), without_dashes(name)) !=
      gpu_spellings.end()) {
    std::vector<std::string> choosers;
    for (const std::string &option : names)
      if (std::find(gpu_spellings.begin(), gpu_spellings.end(), without_dashes(option)) !=
          gpu_spellings.end())
        choosers.push_back(option);
    if (choosers.empty())
      return said + ": " + label + " has no option that chooses GPUs; " + label +
             "'s options: " + joined(names);
    // --gpu chooses which GPUs; --gpus (run) how many, meant only where that was typed.
    std::string wanted = without_dashes(name) == "gpus" ? "--gpus" : "--gpu";
    std::string meant = std::find(choosers.begin(), choosers.end(), wanted) != choosers.end()
                            ? wanted
                            : choosers.front();
    return said + "; did you mean '" + meant + "'?";
  }
  std::string meant = closest_name(name, names);
  if (!meant.empty())
    return said + "; did you mean '" + meant + "'?";
  return said + "; " + label + "'s options: " + joined(names);
}

// The name an option is typed by: its first long name, else its short one.
std::string typed_name(const CLI::Option *option) {
  if (!option->get_lnames().empty())
    return "--" + option->get_lnames().front();
  if (!option->get_snames().empty())
    return "-" + option->get_snames().front();
  return option->get_name();
}

// Two options given that exclude each other, named as typed (CLI11 names a hidden alias, run's
// --gpu-ids, as nothing).
std::optional<std::string> excluded_pair(const CLI::App *command) {
  for (const CLI::Option *option : command->get_options())
    if (option->count() > 0)
      for (const CLI::Option *other : option->get_excludes())
        if (other->count() > 0)
          return typed_name(option) + " cannot go with " + typed_name(other);
  return std::nullopt;
}

// An option given no value (`check --timeout` at the end): what the value is, as --help says.
std::optional<std::string> missing_value(const CLI::App *command, const std::string &what) {
  for (const CLI::Option *option : command->get_options()) {
    std::string name = option->get_name();
    if (!name.empty() && what.rfind(name + ": ", 0) == 0 &&
        what.find(" required ") != std::string::npos && what.size() >= 8 &&
        what.compare(what.size() - 8, 8, " missing") == 0)
      return typed_name(option) + ": a value is missing: " + value_words(option);
  }
  return std::nullopt;
}

// A line of CLI11's that may repeat a value as typed: each long or unprintable argument in it
// as shown_value shows it, then the line printable and at most max_message_columns.
std::string printable_line(std::string message, const std::vector<std::string> &arguments) {
  std::vector<std::string> typed;
  for (const std::string &argument : arguments) {
    typed.push_back(argument);
    if (std::size_t equals = argument.find('=');
        argument.rfind("--", 0) == 0 && equals != std::string::npos)
      typed.push_back(argument.substr(equals + 1));
  }
  std::sort(typed.begin(), typed.end(),
            [](const std::string &a, const std::string &b) { return a.size() > b.size(); });
  for (const std::string &text : typed) {
    if (text.empty() || (text.size() <= 24 && marked_text(text) == text))
      continue;
    std::string shown = shown_value(text);
    shown = shown.substr(1); // without its opening quote: CLI11 quotes nothing
    shown.erase(shown.find('\''), 1);
    for (std::size_t at = message.find(text); at != std::string::npos;
         at = message.find(text, at + shown.size()))
      message.replace(at, text.size(), shown);
  }
  return cut_to_columns(marked_text(message), max_message_columns);
}

} // namespace

const Subcommand *meant_subcommand(const Subcommands &subcommands,
                                   const std::vector<std::string> &arguments) {
  std::optional<std::string> word = command_word(arguments);
  if (!word)
    return nullptr;
  std::string meant = closest_name(*word, command_names(subcommands));
  for (const Subcommand &subcommand : subcommands.all())
    if (subcommand.command->get_name() == meant)
      return &subcommand;
  return nullptr;
}

std::string usage_error(const CLI::App &app, const Subcommands &subcommands,
                        const CLI::ParseError &error, const std::vector<std::string> &arguments) {
  const CLI::App *chosen = subcommands.chosen() ? subcommands.chosen()->command : nullptr;

  std::vector<std::string> commands = command_names(subcommands);
  std::optional<std::string> word = command_word(arguments);
  std::string list = joined(commands);
  if (!chosen && word && std::find(commands.begin(), commands.end(), *word) == commands.end()) {
    std::string said = "unknown command " + shown_value(*word);
    if (const Subcommand *meant = meant_subcommand(subcommands, arguments))
      said += "; did you mean '" + meant->command->get_name() + "'? The commands: " + list;
    else
      said += "; the commands: " + list;
    return printable_line(said + " (see nvsmi-agent --help)", arguments);
  }
  if (!chosen && !word && dynamic_cast<const CLI::RequiredError *>(&error))
    return "a command is required: " + list + " (see nvsmi-agent --help)";

  std::string help =
      chosen ? "nvsmi-agent " + chosen->get_name() + " --help" : "nvsmi-agent --help";
  std::string prefix = chosen ? chosen->get_name() + ": " : "";
  if (dynamic_cast<const CLI::ExtrasError *>(&error)) {
    for (const std::string &extra : app.remaining(true)) {
      if (extra.rfind('-', 0) != 0 || extra == "-")
        return printable_line(prefix + "unexpected argument " + shown_value(extra) + " (see " +
                                  help + ")",
                              arguments);
      std::string name = extra.substr(0, extra.find('='));
      return printable_line(
          prefix + unknown_option(chosen ? chosen : &app, name) + " (see " + help + ")", arguments);
    }
  }
  if (chosen && dynamic_cast<const CLI::ExcludesError *>(&error))
    if (std::optional<std::string> pair = excluded_pair(chosen))
      return printable_line(prefix + *pair + " (see " + help + ")", arguments);
  if (chosen && dynamic_cast<const CLI::ArgumentMismatch *>(&error))
    if (std::optional<std::string> missing = missing_value(chosen, error.what()))
      return printable_line(*missing + " (see " + help + ")", arguments);
  // The option is named already (CLI11's "--interval: ..."), and the --help to read names the
  // command.
  return printable_line(error.what() + (" (see " + help + ")"), arguments);
}

} // namespace nvsmi
