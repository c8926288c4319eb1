// One value as nvidia-smi prints it, read as each unit, number kind and timestamp shape. The first
// byte picks the unit (its low 7 bits, modulo the number of units) and whether it is required (its
// high bit); the rest is the value.
#include "nvsmi/quantity.hpp"
#include "nvsmi/timestamp.hpp"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string_view>

using namespace nvsmi;

namespace {

// Whether a reading in `unit` may be below zero (a temperature's only); nullopt for a value of the
// enum's type that names no unit. No default case: a unit added to the enum is a -Wswitch error
// here (scripts/fuzz builds with -Werror) until it is listed, and once listed the first byte
// reaches it, so a new unit cannot be left unfuzzed.
constexpr std::optional<bool> may_be_negative(Unit unit) {
  switch (unit) {
  case Unit::none:
  case Unit::mib:
  case Unit::watt:
  case Unit::percent:
  case Unit::mhz:
  case Unit::lanes:
  case Unit::kib_per_s:
  case Unit::bytes_per_s:
    return false;
  case Unit::celsius:
    return true;
  }
  return std::nullopt;
}

// The units are the enum's values from 0 up, as the enum gives none a value of its own.
constexpr int unit_count = [] {
  int count = 0;
  while (may_be_negative(static_cast<Unit>(count)))
    ++count;
  return count;
}();
static_assert(unit_count > 0 && unit_count <= 0x80, "the first byte's low 7 bits pick the unit");

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  if (size == 0)
    return 0;
  // The high bit is left out of the pick, so that a seed's byte names the same unit with the unit
  // required or not, whatever the number of units.
  Unit unit = static_cast<Unit>((data[0] & 0x7f) % unit_count);
  bool negative_allowed = *may_be_negative(unit);
  UnitPolicy policy = (data[0] & 0x80) ? UnitPolicy::required : UnitPolicy::optional;
  std::string_view text(reinterpret_cast<const char *>(data + 1), size - 1);

  std::optional<std::int64_t> integer;
  constexpr std::int64_t exact_limit = std::int64_t{1} << 53; // a double holds every whole below
  auto exact = [&] { return integer && *integer > -exact_limit && *integer < exact_limit; };
  try {
    integer = parse_integer(text, unit, policy, "field");
    if (integer && *integer < 0 && !negative_allowed)
      std::abort();
  } catch (const ParseError &) {
  }
  try {
    std::optional<double> value = parse_real(text, unit, policy, "field");
    if (value && (!(std::fabs(*value) < 9007199254740992.0) || (*value < 0 && !negative_allowed) ||
                  std::signbit(*value) != (*value < 0)))
      std::abort();
    // "As parse_real, for whole numbers": a whole number read as one is the same read as a real
    // (where a double holds it exactly).
    if (exact() && !(value && *value == static_cast<double>(*integer)))
      std::abort();
  } catch (const ParseError &) {
    if (exact())
      std::abort();
  }
  if (std::optional<std::string> value = parse_text(text))
    if (value->empty() || is_unknown(*value))
      std::abort();

  for (auto parse : {parse_xml_timestamp, parse_csv_timestamp, parse_iso8601_timestamp})
    if (std::optional<Timestamp> timestamp = parse(text))
      if (!(parse_iso8601_timestamp(to_iso8601(*timestamp)) == timestamp))
        std::abort();
  return 0;
}
