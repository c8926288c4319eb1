// Text from outside (process names, nvidia-smi's messages, request targets) may hold any bytes;
// JSON, Prometheus labels and log lines must be valid UTF-8. Every writer passes text through
// here rather than deciding on its own what to do with a bad byte.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace nvsmi {

// True when `text` is well-formed UTF-8 (no overlong forms, surrogates or code points past
// U+10FFFF).
bool is_valid_utf8(std::string_view text);

// `text` with each byte that does not begin a well-formed sequence replaced by U+FFFD, the way
// browsers and nlohmann_json's `replace` handler do it; valid text comes back unchanged.
std::string valid_utf8(std::string_view text);

// `text` as one printable line: valid UTF-8 (as valid_utf8), each control character (C0, DEL and
// C1: an escape sequence on a terminal, a line break in a log) `replacement`, at most `max_bytes`
// and never cut inside a character.
std::string printable_line(std::string_view text, std::size_t max_bytes, char replacement);

// One code point of text that is already valid UTF-8 (valid_utf8's output), and its length.
struct CodePoint {
  char32_t value;
  std::size_t bytes;
};
// The code point that starts at byte `at` of valid UTF-8 `text`; a sequence cut short by the end
// of `text` counts only the bytes there.
CodePoint code_point_at(std::string_view text, std::size_t at);

} // namespace nvsmi
