#include "terminal/screen_text.hpp"

#include "core/screen_control.hpp"

#include "nvsmi/utf8.hpp"

#include <cwchar>

namespace nvsmi {
namespace {

int point_columns(char32_t point) {
  if (point < 0x7F)
    return 1;
  // The locale's width (glibc's tables under a UTF-8 locale); one column where it has none, which
  // is what most terminals do with a character they do not know.
  int width = ::wcwidth(static_cast<wchar_t>(point));
  return width < 0 ? 1 : width;
}

} // namespace

std::string printable_text(std::string_view raw, bool unicode) {
  std::string valid = valid_utf8(raw);
  std::string out;
  out.reserve(valid.size());
  for (std::size_t at = 0; at < valid.size();) {
    auto [point, bytes] = code_point_at(valid, at);
    if (point == '\t' || point == '\n' || point == '\r')
      out += ' ';
    else if (point >= 0x80 && !unicode && !is_screen_control(point))
      out += '?';
    else if (!is_screen_control(point))
      out.append(valid, at, bytes);
    at += bytes;
  }
  return out;
}

int text_columns(std::string_view text) {
  int columns = 0;
  for (std::size_t at = 0; at < text.size();) {
    CodePoint point = code_point_at(text, at);
    columns += point_columns(point.value);
    at += point.bytes;
  }
  return columns;
}

std::string fit_text(std::string_view text, int columns, Align align) {
  if (columns <= 0)
    return {};
  std::string cut;
  int used = 0;
  for (std::size_t at = 0; at < text.size();) {
    auto [point, bytes] = code_point_at(text, at);
    int width = point_columns(point);
    if (used + width > columns)
      break;
    cut.append(text.substr(at, bytes));
    used += width;
    at += bytes;
  }
  std::string padding(static_cast<std::size_t>(columns - used), ' ');
  return align == Align::left ? cut + padding : padding + cut;
}

} // namespace nvsmi
