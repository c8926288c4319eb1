#include "core/screen_text.hpp"
#include "nvsmi/utf8.hpp"

#include <catch2/catch.hpp>

namespace test_utf8 {

using namespace nvsmi;

TEST_CASE("utf8: valid text passes unchanged") {
  for (std::string text : {std::string(), std::string("plain"), std::string("\xc3\xa9t\xc3\xa9"),
                           std::string("\xe2\x82\xac \xf0\x9f\x98\x80"), std::string("\0x", 2)}) {
    CHECK(is_valid_utf8(text));
    CHECK(valid_utf8(text) == text);
  }
}

TEST_CASE("utf8: every kind of bad byte becomes U+FFFD, one per byte") {
  const std::string r = "\xef\xbf\xbd";
  CHECK(valid_utf8("a\xff"
                   "b") == "a" + r + "b");                // never a lead byte
  CHECK(valid_utf8("\x80") == r);                         // lone continuation
  CHECK(valid_utf8("\xc3") == r);                         // cut short at the end
  CHECK(valid_utf8("\xc0\xaf") == r + r);                 // overlong '/'
  CHECK(valid_utf8("\xe0\x80\xaf") == r + r + r);         // overlong, three bytes
  CHECK(valid_utf8("\xed\xa0\x80") == r + r + r);         // a UTF-16 surrogate
  CHECK(valid_utf8("\xf4\x90\x80\x80") == r + r + r + r); // past U+10FFFF
  CHECK(valid_utf8("\xe2\x82"
                   "x") == r + r + "x"); // cut short in the middle
  for (const char *bad : {"\xff", "\x80", "\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80"})
    CHECK_FALSE(is_valid_utf8(bad));
  CHECK(is_valid_utf8(valid_utf8("\xfe\xc3\x28\xe2\x28\xa1\xf0\x28\x8c\xbc")));
}

TEST_CASE(
    "cut_to_bytes counts bytes, never cuts a character, and ends a cut text with an ellipsis") {
  std::string name;
  for (int i = 0; i < 93; ++i)
    name += "\u00e9\U0001F600"; // 2 and 4 bytes
  std::string cut = nvsmi::cut_to_bytes(name, 256);
  CHECK(cut.size() <= 256);
  CHECK(cut.size() >= 250);
  CHECK(nvsmi::is_valid_utf8(cut));
  CHECK(cut.compare(cut.size() - 3, 3, "\u2026") == 0);
  CHECK(nvsmi::cut_to_bytes("short", 256) == "short");
  CHECK(nvsmi::cut_to_bytes("\U0001F600\U0001F600", 7) == "\U0001F600\u2026");
  CHECK(nvsmi::cut_to_bytes("\U0001F600\U0001F600", 6) == "\u2026"); // no room for a whole one
  CHECK(nvsmi::cut_to_bytes("abc", 2).empty());
}

} // namespace test_utf8
