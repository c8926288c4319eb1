// What `top` puts on a screen of a given size, as lines of styled text: a pure function of the
// model, so that what fits at 80x24 and what a late sample hides are tested without a terminal.
#pragma once

#include "core/tone.hpp"
#include "terminal/top_model.hpp"

#include <string>
#include <vector>

namespace nvsmi {

struct Span {
  std::string text; // printable (core/screen_text.hpp), its columns counted
  Tone style = Tone::normal;
  bool selected = false; // the selected process's row: drawn in reverse video
  bool strong = false;   // bold: the fleet summary, the one bold line on the screen
};
using ScreenLine = std::vector<Span>;

struct ScreenSize {
  int columns = 80, lines = 24;
};

// Exactly `size.lines` lines (the footer with the keys last), none wider than `size.columns`.
// Under compact_below (or with the model's compact view) the GPU rows lose their bars and
// history and the process table its host columns, so that every GPU still fits.
// `unicode`: the terminal's locale is UTF-8, so bars and sparklines may use block characters.
inline constexpr ScreenSize compact_below{80, 20};
// What a click on each line would hit: the index in model.process_rows() of the process row it
// shows, or the index of the GPU whose row it is (nullopt for every other line).
struct ClickTargets {
  std::vector<std::optional<std::size_t>> process_rows;
  std::vector<std::optional<int>> gpus;
};
// `targets`, when given, gets what each line shows, so that a click can act on what it hit.
std::vector<ScreenLine> layout_screen(const TopModel &model, TopClock::time_point now,
                                      ScreenSize size, bool unicode,
                                      ClickTargets *targets = nullptr);

// A fleet summary line (fleet_summary_text, or a line of it broken by dotted_lines), cut to
// `columns`: each state's count in the state's tone (core/tone.hpp), the rest plain, all of it
// bold. `separator` is what stands between its parts (" · ", or " | " without UTF-8).
ScreenLine summary_line(const std::string &text, int columns,
                        const std::string &separator = " \u00b7 ");

// One machine's GPUs as top draws them, in the columns of top --hosts for a screen `columns` wide
// (the same for every host, whatever its readings and names; no history): the heading (empty in
// the compact view, under compact_below's columns), and a row per GPU of `snapshot` with its MIG
// instances under it.
ScreenLine fleet_gpu_heading(int columns);
std::vector<ScreenLine> fleet_gpu_rows(const Snapshot &snapshot, int columns, bool unicode);

// The line's text without its styles.
std::string line_text(const ScreenLine &line);

} // namespace nvsmi
