#include "terminal/screen_text.hpp"

#include "nvsmi/utf8.hpp"

#include <cwchar>

namespace nvsmi {
namespace {

// The code point that starts at `text[at]` (valid UTF-8) and its length in bytes.
char32_t decode(std::string_view text, std::size_t at, std::size_t &length) {
  auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[at + i]); };
  unsigned char lead = byte(0);
  if (lead < 0x80) {
    length = 1;
    return lead;
  }
  length = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2;
  char32_t point = lead & (0x7F >> length);
  for (std::size_t i = 1; i < length; ++i)
    point = (point << 6) | (byte(i) & 0x3F);
  return point;
}

int point_columns(char32_t point) {
  if (point < 0x7F)
    return 1;
  // The locale's width (glibc's tables under a UTF-8 locale); one column where it has none, which
  // is what most terminals do with a character they do not know.
  int width = ::wcwidth(static_cast<wchar_t>(point));
  return width < 0 ? 1 : width;
}

bool is_control(char32_t point) { return point < 0x20 || (point >= 0x7F && point < 0xA0); }

} // namespace

std::string printable_text(std::string_view raw, bool unicode) {
  std::string valid = valid_utf8(raw);
  std::string out;
  out.reserve(valid.size());
  for (std::size_t at = 0, length = 0; at < valid.size(); at += length) {
    char32_t point = decode(valid, at, length);
    if (point == '\t' || point == '\n' || point == '\r')
      out += ' ';
    else if (is_control(point))
      continue;
    else if (point >= 0x80 && !unicode)
      out += '?';
    else
      out.append(valid, at, length);
  }
  return out;
}

int text_columns(std::string_view text) {
  int columns = 0;
  for (std::size_t at = 0, length = 0; at < text.size(); at += length)
    columns += point_columns(decode(text, at, length));
  return columns;
}

std::string fit_text(std::string_view text, int columns, Align align) {
  if (columns <= 0)
    return {};
  std::string cut;
  int used = 0;
  for (std::size_t at = 0, length = 0; at < text.size(); at += length) {
    char32_t point = decode(text, at, length);
    int width = point_columns(point);
    if (used + width > columns)
      break;
    cut.append(text.substr(at, length));
    used += width;
  }
  std::string padding(static_cast<std::size_t>(columns - used), ' ');
  return align == Align::left ? cut + padding : padding + cut;
}

} // namespace nvsmi
