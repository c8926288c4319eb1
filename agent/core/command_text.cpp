#include "core/command_text.hpp"

#include "core/screen_text.hpp"

#include <algorithm>
#include <cctype>
#include <vector>

namespace nvsmi {
namespace {

using Words = std::vector<std::string_view>;

Words words(std::string_view text) {
  Words out;
  std::size_t at = 0;
  while (at < text.size()) {
    std::size_t start = text.find_first_not_of(' ', at);
    if (start == std::string_view::npos)
      break;
    std::size_t end = std::min(text.find(' ', start), text.size());
    out.push_back(text.substr(start, end - start));
    at = end;
  }
  return out;
}

std::string_view base_name(std::string_view path) {
  std::size_t slash = path.rfind('/');
  return slash == std::string_view::npos || slash + 1 == path.size() ? path
                                                                     : path.substr(slash + 1);
}

// "python3.11" is python: the name less a version suffix of digits and dots.
std::string_view without_version(std::string_view name) {
  std::size_t end = name.size();
  while (end > 0 &&
         (std::isdigit(static_cast<unsigned char>(name[end - 1])) || name[end - 1] == '.'))
    --end;
  return end == 0 ? name : name.substr(0, end);
}

bool contains(const Words &list, std::string_view word) {
  return std::find(list.begin(), list.end(), word) != list.end();
}

bool ends_with(std::string_view text, std::string_view end) {
  return text.size() >= end.size() && text.substr(text.size() - end.size()) == end;
}

// An interpreter's options: those that take the next word as their value (`valued`), those after
// which comes code rather than a script (`code`), the one that names a module to run (python's
// -m) or a file to run (java's -jar). Where `clusters`, a word of one dash (or, for a shell, a
// plus: `+o history`) holds several one-letter options (`-uc`, `-lane`), and one of
// `valued_letters` takes the rest of the word or, where nothing is left, the next word.
enum class Clusters { none, dash, dash_or_plus };
struct Interpreter {
  std::string_view name;
  Words valued, code;
  std::string_view module, file;
  Clusters clusters;
  std::string_view valued_letters, code_letters;
};

const Interpreter *interpreter(std::string_view program) {
  static const std::vector<Interpreter> known = {
      {"python", {"--check-hash-based-pycs"}, {}, "-m", "", Clusters::dash, "WX", "c"},
      {"pypy", {}, {}, "-m", "", Clusters::dash, "WX", "c"},
      {"perl", {}, {}, "", "", Clusters::dash, "IMm", "eE"},
      {"ruby", {}, {}, "", "", Clusters::dash, "IrC", "e"},
      {"bash", {"--rcfile", "--init-file"}, {}, "", "", Clusters::dash_or_plus, "oO", "c"},
      {"sh", {}, {}, "", "", Clusters::dash_or_plus, "oO", "c"},
      {"dash", {}, {}, "", "", Clusters::dash_or_plus, "oO", "c"},
      {"zsh", {}, {}, "", "", Clusters::dash_or_plus, "oO", "c"},
      {"node",
       {"-r", "--require", "--import", "--loader"},
       {"-e", "--eval", "-p", "--print"},
       "",
       "",
       Clusters::none,
       "",
       ""},
      {"nodejs",
       {"-r", "--require", "--import", "--loader"},
       {"-e", "--eval", "-p", "--print"},
       "",
       "",
       Clusters::none,
       "",
       ""},
      {"Rscript", {}, {"-e"}, "", "", Clusters::none, "", ""},
      {"julia",
       {"-J", "--project", "-t", "--threads"},
       {"-e", "-E"},
       "",
       "",
       Clusters::none,
       "",
       ""},
      {"java",
       {"-cp", "-classpath", "--class-path", "-p", "--module-path"},
       {},
       "",
       "-jar",
       Clusters::none,
       "",
       ""},
  };
  std::string_view name = without_version(program);
  for (const Interpreter &candidate : known)
    if (candidate.name == name)
      return &candidate;
  return nullptr;
}

// Programs that start a script of their own arguments, named by that script; and the python
// modules that are those programs (`python3 -m torch.distributed.run`).
bool is_launcher(std::string_view name) {
  static const Words launchers = {"torchrun",
                                  "accelerate",
                                  "deepspeed",
                                  "torch.distributed.run",
                                  "torch.distributed.launch",
                                  "accelerate.commands.launch",
                                  "deepspeed.launcher.runner",
                                  "deepspeed.launcher.launch"};
  return contains(launchers, name);
}

// What was launched: its name (not yet printable) and where its own arguments begin in argv.
struct Found {
  std::string_view name;
  std::size_t rest = 0;
};

Found in_launcher(const Words &argv, std::string_view launcher, std::size_t from);

// `python -m MODULE`: a launcher module by the script it starts, any other by its package
// ("vllm.entrypoints.api_server" is vllm).
Found module_at(const Words &argv, std::string_view module, std::size_t rest) {
  if (is_launcher(module))
    return in_launcher(argv, module, rest);
  std::string_view package = module.substr(0, module.find('.'));
  return {package.empty() ? module : package, rest};
}

// A launcher's arguments: the first that is a python script is what it starts (its options'
// values are numbers, addresses and configuration files); `-m MODULE` a module; where neither
// comes, the launcher itself.
Found in_launcher(const Words &argv, std::string_view launcher, std::size_t from) {
  for (std::size_t i = from; i < argv.size(); ++i) {
    std::string_view word = argv[i];
    if ((word == "-m" || word == "--module") && i + 1 < argv.size()) {
      std::string_view module = argv[i + 1];
      std::string_view package = module.substr(0, module.find('.'));
      return {package.empty() ? module : package, i + 2};
    }
    if (word.front() != '-' && ends_with(word, ".py"))
      return {base_name(word), i + 1};
  }
  return {base_name(launcher), from};
}

// The script `word` names, or the launcher it is (`python3 /usr/bin/torchrun ... train.py`).
Found script_at(const Words &argv, std::size_t at) {
  std::string_view script = base_name(argv[at]);
  if (is_launcher(script))
    return in_launcher(argv, script, at + 1);
  return {script, at + 1};
}

// After the interpreter at argv[at]: its options, then the script, module or code.
Found in_interpreter(const Words &argv, std::size_t at, const Interpreter &language) {
  std::string_view program = base_name(argv[at]);
  Found itself{program, at + 1};
  for (std::size_t i = at + 1; i < argv.size(); ++i) {
    std::string_view word = argv[i];
    if (word == "--") // the script follows, whatever its name
      return i + 1 < argv.size() ? script_at(argv, i + 1) : itself;
    std::string_view option = word.substr(0, word.find('='));
    if (contains(language.code, option))
      return itself;
    if (!language.module.empty() && word == language.module)
      return i + 1 < argv.size() ? module_at(argv, argv[i + 1], i + 2) : itself;
    if (!language.file.empty() && word == language.file)
      return i + 1 < argv.size() ? Found{base_name(argv[i + 1]), i + 2} : itself;
    if (contains(language.valued, word)) {
      ++i;
      continue;
    }
    bool cluster = word.size() > 1 && word[1] != '-' &&
                   ((word.front() == '-' && language.clusters != Clusters::none) ||
                    (word.front() == '+' && language.clusters == Clusters::dash_or_plus));
    if (cluster) {
      for (std::size_t letter = 1; letter < word.size(); ++letter) {
        char c = word[letter];
        if (language.code_letters.find(c) != std::string_view::npos)
          return itself;
        std::string_view attached = word.substr(letter + 1);
        if (!language.module.empty() && c == language.module[1]) {
          if (!attached.empty())
            return module_at(argv, attached, i + 1);
          return i + 1 < argv.size() ? module_at(argv, argv[i + 1], i + 2) : itself;
        }
        if (language.valued_letters.find(c) != std::string_view::npos) {
          if (attached.empty())
            ++i;
          break;
        }
      }
      continue;
    }
    if (word.front() == '-') // a flag; a lone `-` reads the script from stdin
      continue;
    return script_at(argv, i);
  }
  return itself;
}

Found launched(const Words &argv) {
  std::size_t at = 0;
  // `env [-i] [NAME=value]... program`: the program is what runs.
  if (!argv.empty() && base_name(argv[0]) == "env") {
    ++at;
    static const Words valued = {"-u", "--unset", "-C", "--chdir"};
    while (at < argv.size() &&
           (argv[at].front() == '-' || argv[at].find('=') != std::string_view::npos))
      at += contains(valued, argv[at]) ? 2 : 1;
    if (at >= argv.size())
      return {base_name(argv[0]), argv.size()};
  }
  if (at >= argv.size())
    return {};
  std::string_view program = base_name(argv[at]);
  if (const Interpreter *language = interpreter(program))
    return in_interpreter(argv, at, *language);
  if (is_launcher(program))
    return in_launcher(argv, program, at + 1);
  return {program, at + 1};
}

std::string shown_name(std::string_view raw) {
  return cut_to_columns(marked_text(raw), launched_name_columns);
}

} // namespace

std::optional<std::string> launched_name(std::string_view command_line) {
  Found found = launched(words(command_line));
  if (found.name.empty())
    return std::nullopt;
  return shown_name(found.name);
}

std::string shown_command(std::string_view command_line) {
  Words argv = words(command_line);
  Found found = launched(argv);
  if (found.name.empty())
    return {};
  std::string out = shown_name(found.name);
  for (std::size_t i = found.rest; i < argv.size(); ++i)
    out.append(" ").append(argv[i]);
  return out;
}

std::optional<std::string> process_name(const Process &process) {
  if (process.command)
    return launched_name(*process.command);
  if (!process.name)
    return std::nullopt;
  std::string_view name = *process.name;
  std::size_t backslash = name.rfind('\\');
  if (backslash != std::string_view::npos) {
    name.remove_prefix(backslash + 1);
    return name.empty() ? std::nullopt : std::optional<std::string>(shown_name(name));
  }
  return launched_name(name);
}

} // namespace nvsmi
