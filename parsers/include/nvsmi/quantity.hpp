// Reading one value printed by nvidia-smi: a number with the unit its field must have, a piece of
// text, or one of the markers nvidia-smi prints when it has no reading.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace nvsmi {

// Input that does not have the shape its field must have. The message names the field.
class ParseError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

// `lanes` is a PCIe link width, which the XML prints glued to its number ("16x"); `kib_per_s` is
// the XML's PCIe throughput ("KB/s", which nvidia-smi computes in KiB); `bytes_per_s` is what
// the agent keeps traffic in, worked out from either (nvidia-smi never prints it).
enum class Unit { none, mib, watt, celsius, percent, mhz, lanes, kib_per_s, bytes_per_s };

// The symbol nvidia-smi prints after a number of this unit ("MiB", "W", "C", "%", "MHz", "x",
// "KB/s").
std::string_view unit_symbol(Unit unit);

// Without " \t\r\n" at either end. Inline and by hand: it runs several times on every value, and
// find_first_not_of looks each character up in the set with memchr.
inline std::string_view trim(std::string_view text) {
  auto space = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
  std::size_t begin = 0, end = text.size();
  while (begin < end && space(text[begin]))
    ++begin;
  while (end > begin && space(text[end - 1]))
    --end;
  return text.substr(begin, end - begin);
}

// True for what nvidia-smi prints instead of a reading: "N/A", "[N/A]", "[Not Supported]",
// "[Unknown Error]", "[Insufficient Permissions]", "[GPU is lost]",
// "[Requested functionality has been deprecated]", any other bracketed message, and "".
bool is_unknown(std::string_view text);

// Whether a value must carry its unit ("81920 MiB") or may also be bare ("81920", as
// `--format=csv,nounits` prints it). A unit that is present must always be the right one.
enum class UnitPolicy { required, optional };

// A number in the given unit, or nullopt for an unknown marker. Throws ParseError naming `field`
// for a wrong or missing unit, a malformed number, or one out of range.
std::optional<double> parse_real(std::string_view text, Unit unit, UnitPolicy policy,
                                 std::string_view field);
// As parse_real, for whole numbers. Negative values are accepted only for temperatures.
std::optional<std::int64_t> parse_integer(std::string_view text, Unit unit, UnitPolicy policy,
                                          std::string_view field);
// Trimmed text, or nullopt for an unknown marker.
std::optional<std::string> parse_text(std::string_view text);
// One of the two words nvidia-smi prints for a yes/no reading ("Yes"/"No", "Enabled"/"Disabled",
// "Active"/"Not Active"): true for `yes`, nullopt for an unknown marker. Any other word throws
// ParseError naming `field`: a guess could hide a fault.
std::optional<bool> parse_flag(std::string_view text, std::string_view yes, std::string_view no,
                               std::string_view field);

} // namespace nvsmi
