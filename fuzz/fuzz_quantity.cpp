// One value as nvidia-smi prints it, read as each unit, number kind and timestamp shape. The first
// byte picks the unit and whether it is required; the rest is the value.
#include "nvsmi/quantity.hpp"
#include "nvsmi/timestamp.hpp"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

using namespace nvsmi;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  if (size == 0)
    return 0;
  const Unit units[] = {Unit::none, Unit::mib, Unit::watt, Unit::celsius, Unit::percent, Unit::mhz};
  Unit unit = units[data[0] % 6];
  UnitPolicy policy = (data[0] & 0x80) ? UnitPolicy::required : UnitPolicy::optional;
  std::string_view text(reinterpret_cast<const char *>(data + 1), size - 1);

  try {
    if (std::optional<std::int64_t> value = parse_integer(text, unit, policy, "field"))
      if (*value < 0 && unit != Unit::celsius)
        std::abort();
  } catch (const ParseError &) {
  }
  try {
    if (std::optional<double> value = parse_real(text, unit, policy, "field"))
      if (!(std::fabs(*value) < 9007199254740992.0) || (*value < 0 && unit != Unit::celsius) ||
          std::signbit(*value) != (*value < 0))
        std::abort();
  } catch (const ParseError &) {
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
