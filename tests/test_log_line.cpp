#include "core/log_line.hpp"

#include "nvsmi/utf8.hpp"

#include <catch2/catch.hpp>

namespace test_log_line {

using namespace nvsmi;
using namespace std::chrono_literals;

TEST_CASE("a flood of log messages is cut to a burst, said once, then counted") {
  LogRateLimit limit(3, 10s);
  LogRateLimit::Clock::time_point start{};
  using Lines = std::vector<std::string>;
  CHECK(limit.admit("one", start) == Lines{"one"});
  CHECK(limit.admit("two", start + 1s) == Lines{"two"});
  CHECK(limit.admit("three", start + 2s) == Lines{"three"});
  CHECK(limit.admit("four", start + 3s) ==
        Lines{"more than 3 messages in 10 s: the rest are counted, not shown"});
  for (int i = 0; i < 1000; ++i)
    CHECK(limit.admit("flood", start + 4s).empty());
  // The interval is over: the count, then the message, and a new burst.
  CHECK(limit.admit("later", start + 10s) == Lines{"1001 messages suppressed", "later"});
  CHECK(limit.admit("again", start + 11s) == Lines{"again"});
  CHECK_FALSE(limit.finish());
  for (const char *message : {"a", "b"})
    limit.admit(message, start + 12s);
  CHECK(limit.finish() == std::string("1 message suppressed"));
  CHECK_FALSE(limit.finish());
}

TEST_CASE("a log message is cut short at a character boundary and made valid UTF-8") {
  CHECK(printable_message("short", 10) == "short");
  CHECK(printable_message("bad \xff byte", 100) == "bad \xEF\xBF\xBD byte");
  std::string accents;
  for (int i = 0; i < 600; ++i)
    accents += "\xC3\xA9"; // é, two bytes
  std::string cut = printable_message(accents, 1001);
  CHECK(is_valid_utf8(cut));
  CHECK(cut == accents.substr(0, 1000) + " ... (200 more bytes)");
  // A megabyte of garbage is a line of about a kilobyte.
  CHECK(printable_message(std::string(1 << 20, 'x'), max_log_message_bytes).size() < 1100);
}

} // namespace test_log_line
