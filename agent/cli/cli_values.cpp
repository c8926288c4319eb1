// The one check of every number on the command line, and how a refused value is repeated back.
// A number is written in decimal digits as a person writes it: CLI11's own conversion reads
// "010" as octal 8, "0x10" as 16, " 5" as 5 and "-1" as 18446744073709551615 for an unsigned
// option, and its range checks say a type's limits in 309 digits.
#include "cli/cli.hpp"
#include "core/screen_text.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iomanip>
#include <sstream>
#include <string_view>

namespace nvsmi {
namespace {

// Columns of a refused value repeated in a message; longer ones are cut and their length said.
constexpr std::size_t shown_value_columns = 24;

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// [+-]digits: the sign, and the digits without leading zeros ("" for zero).
bool whole_syntax(std::string_view text, bool &negative, std::string_view &digits) {
  negative = false;
  if (!text.empty() && (text.front() == '+' || text.front() == '-')) {
    negative = text.front() == '-';
    text.remove_prefix(1);
  }
  if (text.empty())
    return false;
  for (char c : text)
    if (!is_digit(c))
      return false;
  std::size_t first = text.find_first_not_of('0');
  digits = first == std::string_view::npos ? std::string_view() : text.substr(first);
  return true;
}

// [+-](digits[.digits]|.digits)[(e|E)[+-]digits]: no hex, no inf or nan, no spaces.
bool real_syntax(std::string_view text) {
  std::size_t at = 0;
  if (at < text.size() && (text[at] == '+' || text[at] == '-'))
    ++at;
  std::size_t mantissa_digits = 0;
  while (at < text.size() && is_digit(text[at]))
    ++at, ++mantissa_digits;
  if (at < text.size() && text[at] == '.') {
    ++at;
    while (at < text.size() && is_digit(text[at]))
      ++at, ++mantissa_digits;
  }
  if (mantissa_digits == 0)
    return false;
  if (at < text.size() && (text[at] == 'e' || text[at] == 'E')) {
    ++at;
    if (at < text.size() && (text[at] == '+' || text[at] == '-'))
      ++at;
    std::size_t exponent_digits = 0;
    while (at < text.size() && is_digit(text[at]))
      ++at, ++exponent_digits;
    if (exponent_digits == 0)
      return false;
  }
  return at == text.size();
}

} // namespace

std::string range_number(double value) {
  std::string plain;
  if (value == std::floor(value) && std::fabs(value) < 1e18) {
    plain = std::to_string(static_cast<long long>(value));
  } else {
    std::ostringstream text;
    text << std::setprecision(15) << value;
    plain = text.str();
    if (plain.find('e') != std::string::npos)
      return plain;
  }
  // 86,400 and 1,000,000,000: groups of three from 10,000 up, where digits are hard to count.
  std::size_t end = plain.find('.');
  if (end == std::string::npos)
    end = plain.size();
  std::size_t start = plain.front() == '-' ? 1 : 0;
  if (end - start < 5)
    return plain;
  for (std::size_t at = end; at > start + 3; at -= 3)
    plain.insert(at - 3, ",");
  return plain;
}

std::string NumberRule::range() const {
  std::string text = range_number(min) + " to " + range_number(max);
  if (!unit.empty())
    text += (unit == "%" ? "" : " ") + unit;
  for (std::size_t i = 0; i < words.size(); ++i)
    text += (i + 1 == words.size() ? " or " : ", ") + words[i];
  return text;
}

std::optional<std::string> NumberRule::accept(const std::string &text) const {
  for (const std::string &word : words)
    if (text == word)
      return text;
  if (whole) {
    bool negative = false;
    std::string_view digits;
    if (!whole_syntax(text, negative, digits) || digits.size() > 18) // every bound is below 10^18
      return std::nullopt;
    long long value = digits.empty() ? 0 : std::stoll(std::string(digits));
    if (negative)
      value = -value;
    if (static_cast<double>(value) < min || static_cast<double>(value) > max)
      return std::nullopt;
    return std::to_string(value); // "010" is ten, and "-0" zero
  }
  if (!real_syntax(text))
    return std::nullopt;
  double value = std::strtod(text.c_str(), nullptr);
  if (!std::isfinite(value) || value < min || value > max)
    return std::nullopt;
  return value == 0 ? std::string("0") : text; // never a zero with a sign
}

std::string NumberRule::refusal(const std::string &text) const {
  return shown_value(text) + " is not " + (whole ? "a whole number" : "a number") + " from " +
         range();
}

// How a number check's description begins: read_numbers_as_checked finds the checks by it in an
// option's type name.
constexpr std::string_view number_description = "NUMBER in ";

CLI::Validator number_check(NumberRule rule) {
  std::string description = std::string(number_description) + rule.range();
  return CLI::Validator(
      [rule = std::move(rule)](std::string &text) -> std::string {
        std::optional<std::string> canonical = rule.accept(text);
        if (!canonical)
          return rule.refusal(text);
        text = *canonical; // what CLI11 then converts
        return {};
      },
      description, "number");
}

void read_numbers_as_checked(CLI::App *command) {
  for (CLI::Option *option : command->get_options()) {
    // Its type name lists its validators' descriptions ("FLOAT:NUMBER in 0.05 to 86400 s"): as
    // many number checks as it names are looked for, so no lookup runs past the last validator
    // (which CLI11 says with an exception, thousands of instructions each, an option a start).
    std::string type = option->get_type_name();
    const std::string mark = ":" + std::string(number_description);
    std::size_t numbers = 0;
    for (std::size_t at = type.find(mark); at != std::string::npos; at = type.find(mark, at + 1))
      ++numbers;
    for (int i = 0; numbers > 0; ++i) {
      CLI::Validator *validator = option->get_validator(i);
      if (validator->get_name() == "number") {
        validator->non_modifying(false);
        --numbers;
      }
    }
  }
}

CLI::Validator finite_range(double min, double max, std::string unit) {
  return number_check(NumberRule{false, min, max, std::move(unit), {}});
}

CLI::Validator whole_range(long long min, long long max, std::string unit) {
  return number_check(
      NumberRule{true, static_cast<double>(min), static_cast<double>(max), std::move(unit), {}});
}

bool is_finite_in(const std::string &text, double min, double max) {
  return NumberRule{false, min, max, "", {}}.accept(text).has_value();
}

CLI::Validator one_of(std::vector<std::string> words) {
  std::string braces, listed;
  for (std::size_t i = 0; i < words.size(); ++i) {
    braces += (i == 0 ? "" : ",") + words[i];
    listed += (i == 0 ? "" : i + 1 == words.size() ? " or " : ", ") + words[i];
  }
  return CLI::Validator(
      [words = std::move(words), listed](std::string &text) -> std::string {
        if (std::find(words.begin(), words.end(), text) != words.end())
          return {};
        return shown_value(text) + " is not " + listed;
      },
      "{" + braces + "}", "one of");
}

CLI::Validator mig_profile_check() {
  return CLI::Validator(
      [](std::string &text) -> std::string {
        bool plain =
            !text.empty() && text.size() <= 32 && std::all_of(text.begin(), text.end(), [](char c) {
              return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '+';
            });
        if (plain && text.find('.') != std::string::npos)
          return {};
        if (!text.empty() &&
            std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; }))
          return shown_value(text) + " is not a MIG profile such as 3g.40gb (a count goes " +
                 "before --mig: pick " + text + " --mig)";
        return shown_value(text) + " is not a MIG profile such as 3g.40gb";
      },
      "PROFILE", "MIG profile");
}

std::string shown_value(std::string_view text) {
  std::string marked = marked_text(text);
  std::string cut = cut_to_columns(marked, shown_value_columns);
  std::string shown = "'" + cut + "'";
  if (cut != marked)
    shown += " (" + range_number(static_cast<double>(text.size())) + " bytes)";
  return shown;
}

} // namespace nvsmi
