#include "core/screen_text.hpp"

#include "nvsmi/utf8.hpp"

#include <clocale>
#include <cwchar>
#include <locale.h>

namespace nvsmi {
namespace {

// The widths of C.UTF-8 (built into glibc since 2.35) rather than of the process's locale, so that
// a format stays a pure function of its input: `snapshot --format table` under LANG=C measures as
// `top` under a UTF-8 locale does. Null where the C library has no such locale.
locale_t utf8_locale() {
  static const locale_t locale = ::newlocale(LC_CTYPE_MASK, "C.UTF-8", static_cast<locale_t>(0));
  return locale;
}

// For the span of one measurement, this thread's wcwidth answers for C.UTF-8.
class Utf8Widths {
public:
  Utf8Widths() : previous_(utf8_locale() ? ::uselocale(utf8_locale()) : static_cast<locale_t>(0)) {}
  ~Utf8Widths() {
    if (previous_)
      ::uselocale(previous_);
  }
  Utf8Widths(const Utf8Widths &) = delete;
  Utf8Widths &operator=(const Utf8Widths &) = delete;

private:
  locale_t previous_;
};

// Call inside a Utf8Widths.
std::size_t point_columns(char32_t point) {
  if (point < 0x7F)
    return 1;
  int width = ::wcwidth(static_cast<wchar_t>(point));
  return width < 0 ? 1 : static_cast<std::size_t>(width);
}

} // namespace

bool is_screen_control(char32_t point) {
  return point < 0x20 || (point >= 0x7F && point <= 0x9F) || point == 0x200E || point == 0x200F ||
         (point >= 0x202A && point <= 0x202E) || (point >= 0x2066 && point <= 0x2069);
}

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

std::string marked_text(std::string_view raw) {
  std::string valid = valid_utf8(raw);
  std::string out;
  out.reserve(valid.size());
  for (std::size_t at = 0; at < valid.size();) {
    auto [point, bytes] = code_point_at(valid, at);
    if (is_screen_control(point))
      out += "\uFFFD";
    else
      out.append(valid, at, bytes);
    at += bytes;
  }
  return out;
}

std::size_t text_columns(std::string_view text) {
  Utf8Widths widths;
  std::size_t columns = 0;
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
  Utf8Widths widths;
  std::string cut;
  std::size_t used = 0, room = static_cast<std::size_t>(columns);
  for (std::size_t at = 0; at < text.size();) {
    auto [point, bytes] = code_point_at(text, at);
    std::size_t width = point_columns(point);
    if (used + width > room)
      break;
    cut.append(text.substr(at, bytes));
    used += width;
    at += bytes;
  }
  std::string padding(room - used, ' ');
  return align == Align::left ? cut + padding : padding + cut;
}

std::string cut_to_columns(std::string_view text, std::size_t columns) {
  if (text_columns(text) <= columns)
    return std::string(text);
  if (columns == 0)
    return {};
  Utf8Widths widths;
  std::size_t used = 0, at = 0;
  while (at < text.size()) {
    CodePoint point = code_point_at(text, at);
    if (used + point_columns(point.value) > columns - 1)
      break;
    used += point_columns(point.value);
    at += point.bytes;
  }
  return std::string(text.substr(0, at)) + "\u2026";
}

std::string cut_to_bytes(std::string_view text, std::size_t max_bytes) {
  if (text.size() <= max_bytes)
    return std::string(text);
  const std::string_view ellipsis = "\u2026";
  if (max_bytes < ellipsis.size())
    return {};
  std::size_t at = 0;
  while (at < text.size()) {
    CodePoint point = code_point_at(text, at);
    if (at + point.bytes > max_bytes - ellipsis.size())
      break;
    at += point.bytes;
  }
  return std::string(text.substr(0, at)) + std::string(ellipsis);
}

} // namespace nvsmi
