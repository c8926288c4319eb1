#include "nvsmi/utf8.hpp"

#include <algorithm>
#include <cstdint>

namespace nvsmi {
namespace {

// The length of the well-formed sequence at the start of `text`, or 0 when its first byte does
// not begin one (RFC 3629's table of valid second bytes).
std::size_t sequence_length(std::string_view text) {
  auto byte = [&](std::size_t i) { return static_cast<std::uint8_t>(text[i]); };
  std::uint8_t lead = byte(0);
  if (lead < 0x80)
    return 1;
  std::size_t length = 0;
  std::uint8_t low = 0x80, high = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0)
      low = 0xA0; // overlong
    else if (lead == 0xED)
      high = 0x9F; // surrogates
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0)
      low = 0x90; // overlong
    else if (lead == 0xF4)
      high = 0x8F; // past U+10FFFF
  } else {
    return 0;
  }
  if (text.size() < length || byte(1) < low || byte(1) > high)
    return 0;
  for (std::size_t i = 2; i < length; ++i)
    if (byte(i) < 0x80 || byte(i) > 0xBF)
      return 0;
  return length;
}

} // namespace

bool is_valid_utf8(std::string_view text) {
  while (!text.empty()) {
    std::size_t length = sequence_length(text);
    if (length == 0)
      return false;
    text.remove_prefix(length);
  }
  return true;
}

std::string valid_utf8(std::string_view text) {
  if (is_valid_utf8(text))
    return std::string(text);
  std::string out;
  out.reserve(text.size() + 8);
  while (!text.empty()) {
    std::size_t length = sequence_length(text);
    if (length == 0) {
      out += "\xEF\xBF\xBD";
      length = 1;
    } else {
      out.append(text.data(), length);
    }
    text.remove_prefix(length);
  }
  return out;
}

CodePoint code_point_at(std::string_view text, std::size_t at) {
  auto lead = static_cast<unsigned char>(text[at]);
  if (lead < 0x80)
    return {lead, 1};
  std::size_t bytes = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2;
  bytes = std::min(bytes, text.size() - at);
  char32_t value = lead & (0x7Fu >> bytes);
  for (std::size_t i = 1; i < bytes; ++i)
    value = (value << 6) | (static_cast<unsigned char>(text[at + i]) & 0x3Fu);
  return {value, bytes};
}

std::string printable_line(std::string_view text, std::size_t max_bytes, char replacement) {
  // A few bytes past the limit, so that the character the limit cuts is read whole, and dropped.
  std::string valid = valid_utf8(text.substr(0, max_bytes + 4));
  std::string out;
  std::size_t at = 0;
  while (at < valid.size()) {
    CodePoint point = code_point_at(valid, at);
    if (out.size() + point.bytes > max_bytes)
      break;
    if (point.value < 0x20 || (point.value >= 0x7f && point.value < 0xa0))
      out += replacement;
    else
      out.append(valid, at, point.bytes);
    at += point.bytes;
  }
  return out;
}

} // namespace nvsmi
