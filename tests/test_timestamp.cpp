#include "nvsmi/timestamp.hpp"

#include <catch2/catch.hpp>

namespace test_timestamp {

using namespace nvsmi;

TEST_CASE("XML timestamps, with the double space before a one-digit day") {
  auto t = parse_xml_timestamp("Fri Aug  4 11:44:30 2023");
  REQUIRE(t);
  CHECK(to_iso8601(*t) == "2023-08-04T11:44:30");
  t->utc_offset_minutes = 120;
  CHECK(to_iso8601(*t) == "2023-08-04T11:44:30+02:00");
  t->utc_offset_minutes = -330;
  CHECK(to_iso8601(*t) == "2023-08-04T11:44:30-05:30");
}

TEST_CASE("CSV timestamps keep their milliseconds") {
  auto t = parse_csv_timestamp("2026/06/24 10:26:34.977");
  REQUIRE(t);
  CHECK(to_iso8601(*t) == "2026-06-24T10:26:34.977");
  auto whole = parse_csv_timestamp("2026/06/24 10:26:34");
  REQUIRE(whole);
  CHECK(to_iso8601(*whole) == "2026-06-24T10:26:34");
}

TEST_CASE("unknown or unfamiliar timestamps are empty, not guessed") {
  CHECK_FALSE(parse_xml_timestamp("N/A"));
  CHECK_FALSE(parse_xml_timestamp(""));
  CHECK_FALSE(parse_xml_timestamp("Fri Foo  4 11:44:30 2023"));
  CHECK_FALSE(parse_xml_timestamp("2023-08-04 11:44:30"));
  CHECK_FALSE(parse_csv_timestamp("[N/A]"));
  CHECK_FALSE(parse_csv_timestamp("2026/13/24 10:26:34.977"));
  CHECK_FALSE(parse_csv_timestamp("24.06.2026 10:26:34"));
}

TEST_CASE("ISO 8601 timestamps, as the agent's CSV log writes them") {
  auto t = parse_iso8601_timestamp("2024-03-12T14:03:27.512+01:00");
  REQUIRE(t);
  CHECK(to_iso8601(*t) == "2024-03-12T14:03:27.512+01:00");
  CHECK(*t->utc_offset_minutes == 60);
  CHECK(parse_iso8601_timestamp("2024-03-12T14:03:27-05:30")->utc_offset_minutes == -330);
  CHECK(parse_iso8601_timestamp("2024-03-12 14:03:27Z")->utc_offset_minutes == 0);
  auto local = parse_iso8601_timestamp("2024-03-12T14:03:27");
  REQUIRE(local);
  CHECK_FALSE(local->utc_offset_minutes);
  CHECK_FALSE(local->millisecond);
  CHECK_FALSE(parse_iso8601_timestamp(""));
  CHECK_FALSE(parse_iso8601_timestamp("2024/03/12 14:03:27"));
  CHECK_FALSE(parse_iso8601_timestamp("2024-03-12T14:03:27.5"));
  CHECK_FALSE(parse_iso8601_timestamp("2024-03-12T14:03:27+0100"));
  CHECK_FALSE(parse_iso8601_timestamp("2024-13-12T14:03:27"));
}

} // namespace test_timestamp
