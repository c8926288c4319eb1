#include "core/command_text.hpp"

#include <algorithm>
#include <cctype>
#include <vector>

namespace nvsmi {
namespace {

std::vector<std::string_view> words(std::string_view text) {
  std::vector<std::string_view> out;
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

// An interpreter: the options that take the next word as their value, those after which comes
// code rather than a script, and the one that names a module to run (python's -m).
struct Interpreter {
  std::string_view name;
  std::vector<std::string_view> valued, code;
  std::string_view module;
};

const Interpreter *interpreter(std::string_view program) {
  static const std::vector<Interpreter> known = {
      {"python", {"-W", "-X", "--check-hash-based-pycs"}, {"-c"}, "-m"},
      {"pypy", {"-W", "-X"}, {"-c"}, "-m"},
      {"perl", {"-I", "-M", "-m"}, {"-e", "-E"}, ""},
      {"ruby", {"-I", "-r", "-C"}, {"-e"}, ""},
      {"node", {"-r", "--require", "--import", "--loader"}, {"-e", "--eval", "-p", "--print"}, ""},
      {"nodejs",
       {"-r", "--require", "--import", "--loader"},
       {"-e", "--eval", "-p", "--print"},
       ""},
      {"bash", {"-O", "-o", "--rcfile", "--init-file"}, {"-c"}, ""},
      {"sh", {"-o"}, {"-c"}, ""},
      {"dash", {"-o"}, {"-c"}, ""},
      {"zsh", {"-o"}, {"-c"}, ""},
      {"Rscript", {}, {"-e"}, ""},
      {"julia", {"-J", "--project", "-t", "--threads"}, {"-e", "-E"}, ""},
      {"java", {"-cp", "-classpath", "--class-path", "-p", "--module-path"}, {}, ""},
  };
  std::string_view name = without_version(program);
  for (const Interpreter &candidate : known)
    if (candidate.name == name)
      return &candidate;
  return nullptr;
}

bool contains(const std::vector<std::string_view> &list, std::string_view word) {
  return std::find(list.begin(), list.end(), word) != list.end();
}

std::string joined(std::string_view first, const std::vector<std::string_view> &rest,
                   std::size_t from) {
  std::string out(first);
  for (std::size_t i = from; i < rest.size(); ++i)
    out.append(" ").append(rest[i]);
  return out;
}

} // namespace

std::string shown_command(std::string_view command_line) {
  std::vector<std::string_view> argv = words(command_line);
  std::size_t at = 0;
  // `env [-i] [NAME=value]... program`: the program is what runs.
  if (at < argv.size() && base_name(argv[at]) == "env") {
    ++at;
    while (at < argv.size() &&
           (argv[at].front() == '-' || argv[at].find('=') != std::string_view::npos))
      ++at;
  }
  if (at >= argv.size())
    return std::string(command_line);
  std::string_view program = base_name(argv[at]);
  const Interpreter *language = interpreter(program);
  if (!language)
    return joined(program, argv, at + 1);
  for (std::size_t i = at + 1; i < argv.size(); ++i) {
    std::string_view word = argv[i];
    if (contains(language->code, word))
      return joined(program, argv, at + 1);
    if (word == language->module || (program == "java" && word == "-jar")) {
      if (i + 1 < argv.size())
        return joined(base_name(argv[i + 1]), argv, i + 2);
      break;
    }
    if (contains(language->valued, word)) {
      ++i;
      continue;
    }
    if (word == "--") // the script follows
      continue;
    if (word.front() == '-')
      continue;
    return joined(base_name(word), argv, i + 1);
  }
  return joined(program, argv, at + 1);
}

} // namespace nvsmi
