#include "nvsmi/quantity.hpp"

#include <catch2/catch.hpp>

namespace test_quantity {

using namespace nvsmi;

namespace {
constexpr auto required = UnitPolicy::required;
constexpr auto optional = UnitPolicy::optional;
} // namespace

TEST_CASE("numbers parse in the unit their field must have") {
  CHECK(parse_integer("81920 MiB", Unit::mib, required, "memory.total") == 81920);
  CHECK(parse_real("67.03 W", Unit::watt, required, "power.draw") == Approx(67.03));
  CHECK(parse_integer("27 C", Unit::celsius, required, "temperature") == 27);
  CHECK(parse_integer("65 %", Unit::percent, required, "utilization") == 65);
  CHECK(parse_integer("1410 MHz", Unit::mhz, required, "clock") == 1410);
  CHECK(parse_integer("  42 MiB\r", Unit::mib, required, "memory.used") == 42);
  CHECK(parse_integer("4000 KB/s", Unit::kib_per_s, required, "tx_util") == 4000);
}

TEST_CASE("a PCIe link width carries its x without a space") {
  CHECK(parse_integer("16x", Unit::lanes, required, "max_link_width") == 16);
  CHECK(parse_integer("8", Unit::lanes, optional, "pcie.link.width.current") == 8);
  CHECK_THROWS_WITH(parse_integer("16 lanes", Unit::lanes, required, "max_link_width"),
                    Catch::Contains("max_link_width: expected unit \"x\", got \"lanes\""));
  CHECK_THROWS_WITH(parse_integer("16", Unit::lanes, required, "max_link_width"),
                    Catch::Contains("missing unit \"x\""));
  CHECK_THROWS_AS(parse_integer("x", Unit::lanes, required, "max_link_width"), ParseError);
  CHECK_THROWS_AS(parse_integer("16x", Unit::mib, required, "memory.total"), ParseError);
}

TEST_CASE("a bare number is accepted only where units are optional (csv,nounits)") {
  CHECK(parse_integer("81920", Unit::mib, optional, "memory.total") == 81920);
  CHECK(parse_real("250.00", Unit::watt, optional, "power.limit") == Approx(250.0));
  CHECK_THROWS_WITH(parse_integer("81920", Unit::mib, required, "gpu/fb_memory_usage/total"),
                    Catch::Contains("gpu/fb_memory_usage/total") &&
                        Catch::Contains("missing unit"));
}

TEST_CASE("a surprise unit is an error that names the field") {
  CHECK_THROWS_AS(parse_integer("81920 KiB", Unit::mib, optional, "memory.total"), ParseError);
  CHECK_THROWS_WITH(parse_integer("81920 KiB", Unit::mib, optional, "memory.total"),
                    Catch::Contains("memory.total") && Catch::Contains("KiB") &&
                        Catch::Contains("MiB"));
  CHECK_THROWS_WITH(parse_real("67.03 mW", Unit::watt, required, "power.draw"),
                    Catch::Contains("power.draw"));
  CHECK_THROWS_WITH(parse_integer("27 F", Unit::celsius, required, "temp"),
                    Catch::Contains("temp"));
  CHECK_THROWS_WITH(parse_integer("3 MiB", Unit::none, required, "index"),
                    Catch::Contains("unexpected unit"));
}

TEST_CASE("unknown markers are empty, never zero") {
  for (const char *marker :
       {"N/A", "[N/A]", "[Not Supported]", "Not Supported", "[Unknown Error]", "Unknown Error",
        "[Insufficient Permissions]", "[GPU is lost]", "GPU is lost",
        "[Requested functionality has been deprecated]",
        "Requested functionality has been deprecated", "", "   ", "[Some future message]"}) {
    INFO("marker: \"" << marker << "\"");
    CHECK_FALSE(parse_integer(marker, Unit::mib, required, "memory.used").has_value());
    CHECK_FALSE(parse_real(marker, Unit::watt, required, "power.draw").has_value());
    CHECK_FALSE(parse_text(marker).has_value());
  }
}

TEST_CASE("malformed numbers are errors, not digits picked out of the text") {
  // The Go example stripped non-digits: "1.2.3 MiB" became 123. We refuse it.
  for (const char *text : {"1.2.3 MiB", "12abc MiB", "abc MiB", "0x10 MiB", "inf MiB", "nan MiB",
                           "- MiB", "1 2 MiB"}) {
    INFO(text);
    CHECK_THROWS_AS(parse_integer(text, Unit::mib, required, "memory.used"), ParseError);
  }
  CHECK_THROWS_AS(parse_real("inf W", Unit::watt, required, "power.draw"), ParseError);
  CHECK_THROWS_AS(parse_real("nan W", Unit::watt, required, "power.draw"), ParseError);
  CHECK_THROWS_WITH(parse_integer("12.5 MiB", Unit::mib, required, "memory.used"),
                    Catch::Contains("whole number"));
}

TEST_CASE("out-of-range and negative values are refused except negative temperatures") {
  CHECK_THROWS_WITH(parse_integer("99999999999999999999999 MiB", Unit::mib, required, "m"),
                    Catch::Contains("out of range"));
  CHECK_THROWS_WITH(parse_real("1e999 W", Unit::watt, required, "p"),
                    Catch::Contains("out of range"));
  CHECK_THROWS_WITH(parse_integer("-5 MiB", Unit::mib, required, "m"), Catch::Contains("negative"));
  CHECK(parse_integer("-5 C", Unit::celsius, required, "t") == -5);
}

TEST_CASE("text keeps its content, trimmed") {
  CHECK(parse_text("  NVIDIA H100 80GB HBM3 ") == std::string("NVIDIA H100 80GB HBM3"));
  CHECK(parse_text("P0") == std::string("P0"));
}

} // namespace test_quantity
