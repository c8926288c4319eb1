#pragma once

#include "nvsmi/snapshot.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace nvsmi {

// XML's "Fri Aug  4 11:44:30 2023". nullopt for an unknown marker or a shape we do not know:
// a timestamp that drifted is not worth losing the readings over.
std::optional<Timestamp> parse_xml_timestamp(std::string_view text);
// CSV's "2026/06/24 10:26:34.977"; nullopt as above.
std::optional<Timestamp> parse_csv_timestamp(std::string_view text);
// ISO 8601 as to_iso8601 writes it, "2024-03-12T14:03:27.512+01:00": milliseconds and offset
// (or "Z") optional, a space allowed for the "T". nullopt as above.
std::optional<Timestamp> parse_iso8601_timestamp(std::string_view text);
// ISO 8601: "2024-03-12T14:03:27.512+01:00"; the offset only where it is known.
std::string to_iso8601(const Timestamp &timestamp);

} // namespace nvsmi
