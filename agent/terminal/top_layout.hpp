// What `top` puts on a screen of a given size, as lines of styled text: a pure function of the
// model, so that what fits at 80x24 and what a late sample hides are tested without a terminal.
#pragma once

#include "terminal/top_model.hpp"

#include <string>
#include <vector>

namespace nvsmi {

// What a span means; the view picks the colour.
enum class Style {
  normal,
  heading, // column names, keys in the footer
  dim,     // old or absent: a sparkline of a late sample
  good,    // free
  warning, // idle but held
  alarm,   // hot, at power limit, lost, late
  busy,    // in use, bars
};

struct Span {
  std::string text; // printable (screen_text.hpp), its columns counted
  Style style = Style::normal;
};
using ScreenLine = std::vector<Span>;

struct ScreenSize {
  int columns = 80, lines = 24;
};

// Exactly `size.lines` lines (the footer with the keys last), none wider than `size.columns`.
// `unicode`: the terminal's locale is UTF-8, so bars and sparklines may use block characters.
std::vector<ScreenLine> layout_screen(const TopModel &model, TopClock::time_point now,
                                      ScreenSize size, bool unicode);

// The line's text without its styles.
std::string line_text(const ScreenLine &line);

} // namespace nvsmi
