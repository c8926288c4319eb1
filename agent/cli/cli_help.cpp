// How --help shows an option: a plain word for its value (SECONDS, N, PATH, xml|csv), named
// where the option is declared, and its default and range in words after its line, not CLI11's
// type names (FLOAT:NUMBER in 0.01 to 86400=1).
#include "cli/cli.hpp"

#include <memory>
#include <sstream>

namespace nvsmi {
namespace {

// CLI11's name for an option's value: its type, then each check's description after a ':'.
struct TypeName {
  std::string type, checks;
};

TypeName type_name(const CLI::Option *option) {
  std::string full = option->get_type_name();
  std::size_t colon = full.find(':');
  if (colon == std::string::npos)
    return {full, ""};
  return {full.substr(0, colon), full.substr(colon + 1)};
}

bool is_cli11_type(const std::string &type) {
  return type.empty() || type == "FLOAT" || type == "INT" || type == "UINT" || type == "TEXT";
}

bool names_a_path(const CLI::Option *option) {
  try {
    const_cast<CLI::Option *>(option)->get_validator("caller's path");
    return true;
  } catch (const CLI::OptionNotFound &) {
    return false;
  }
}

std::string metavar(const CLI::Option *option) {
  TypeName name = type_name(option);
  if (!is_cli11_type(name.type))
    return name.type; // one this agent named (PATH|none)
  const std::string &checks = name.checks;
  if (!checks.empty() && checks.front() == '{') { // one_of: the words themselves
    std::string words = checks.substr(1, checks.find('}') - 1);
    for (char &c : words)
      if (c == ',')
        c = '|';
    return words;
  }
  if (checks == "POSITIVE" || checks == "NONNEGATIVE")
    return "N";
  if (!checks.empty() && checks.find(" in ") == std::string::npos)
    return checks; // FIELD, TIME: a check's own word
  // A whole number is a count unless its declaration says otherwise (BYTES, MIB). Any other value
  // names its word where it is declared (type_name: SECONDS, PERCENT, HOST:PORT): VALUE here is
  // one that does not, which the test of every --help refuses.
  if (name.type == "INT" || name.type == "UINT")
    return "N";
  return names_a_path(option) ? "PATH" : "VALUE";
}

class HelpFormatter : public CLI::Formatter {
public:
  std::string make_option_opts(const CLI::Option *option) const override {
    std::ostringstream out;
    if (!option->get_option_text().empty())
      return " " + option->get_option_text();
    if (option->get_type_size() != 0 && !option->get_type_name().empty()) { // not a flag
      out << " " << metavar(option);
      if (option->get_expected_max() == CLI::detail::expected_max_vector_size)
        out << " ...";
    }
    std::string excluded;
    for (const CLI::Option *other : option->get_excludes())
      if (!other->get_group().empty()) // a hidden alias stays hidden
        excluded += " " + other->get_name();
    if (!excluded.empty())
      out << " (not with" << excluded << ")";
    return out.str();
  }

  std::string make_option_desc(const CLI::Option *option) const override {
    std::string notes;
    if (option->get_type_size() != 0 && !option->get_default_str().empty())
      notes = "default " + option->get_default_str();
    const std::string &checks = type_name(option).checks;
    std::size_t in = checks.find(" in ");
    if (in != std::string::npos)
      notes += (notes.empty() ? "" : "; ") + checks.substr(in + 4);
    return option->get_description() + (notes.empty() ? "" : " (" + notes + ")");
  }
};

} // namespace

std::string value_words(const CLI::Option *option) {
  std::string word = metavar(option);
  const std::string &checks = type_name(option).checks;
  std::size_t in = checks.find(" in ");
  return in == std::string::npos ? word : word + " (" + checks.substr(in + 4) + ")";
}

void use_plain_help(CLI::App &app) { app.formatter(std::make_shared<HelpFormatter>()); }

} // namespace nvsmi
