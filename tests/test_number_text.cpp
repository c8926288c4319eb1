// The one set of number and duration helpers (core/number_text.hpp) that the formats, check,
// report, top, the stream and run share.
#include "core/number_text.hpp"

#include <catch2/catch.hpp>

namespace test_number_text {

using namespace nvsmi;
using std::chrono::milliseconds;

// run's --wait once cut seconds to milliseconds (1.001 s waited 1000 ms, since 1.001 * 1000 is
// 1000.9999999999999) where the sampler rounded them (1001 ms): both now round to the nearest.
TEST_CASE("number text: seconds become milliseconds rounded to the nearest", "[number_text]") {
  CHECK(to_ms(1.001) == milliseconds(1001));
  CHECK(to_ms(2.006) == milliseconds(2006));
  CHECK(to_ms(0.29) == milliseconds(290));
  CHECK(to_ms(0.57) == milliseconds(570));
  CHECK(to_ms(1.0015) == milliseconds(1002));
  CHECK(to_ms(0.0004) == milliseconds(0));
  CHECK(to_ms(2) == milliseconds(2000));
}

// The stream said "%g" (1234.57), the bounded run every millisecond (1234.567): now every one.
TEST_CASE("number text: a duration is written exact to the millisecond", "[number_text]") {
  CHECK(seconds_text(milliseconds(1234567)) == "1234.567");
  CHECK(seconds_text(milliseconds(1500)) == "1.5");
  CHECK(seconds_text(milliseconds(30000)) == "30");
  CHECK(seconds_text(milliseconds(250)) == "0.25");
  CHECK(seconds_text(milliseconds(0)) == "0");
}

TEST_CASE("number text: perfdata numbers lose trailing zeros and the sign of zero",
          "[number_text]") {
  CHECK(trimmed_text(85, 2) == "85");
  CHECK(trimmed_text(97.5, 2) == "97.5");
  CHECK(trimmed_text(0.01, 2) == "0.01");
  CHECK(trimmed_text(100, 2) == "100");
  CHECK(trimmed_text(-0.001, 2) == "0");
  CHECK(fixed_text(97.456, 1) == "97.5");
  CHECK(number(1.5, "%g%%") == "1.5%");
}

} // namespace test_number_text
