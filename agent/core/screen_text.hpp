// Text from outside (process names, commands, user, host and GPU names) may hold any bytes,
// escape sequences among them: on a terminal those would move the cursor or clear the screen.
// Everything the table, `top` and run's report put on a screen goes through here, so that they
// agree on what is shown and on how many columns it takes: valid UTF-8, no control characters,
// measured and cut by the C library's character widths.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace nvsmi {

// What must never reach a screen from outside text: controls (C0, DEL, C1) move the cursor, ring,
// clear or start an escape sequence; the bidirectional controls (direction marks, overrides,
// isolates) reverse what follows them on the line, so a name could show as another.
bool is_screen_control(char32_t point);

// `raw` as valid UTF-8 without screen controls; tabs and line breaks become spaces, so that words
// stay apart. Without `unicode` (a terminal whose locale is not UTF-8) every other non-ASCII
// character becomes '?', one column each.
std::string printable_text(std::string_view raw, bool unicode = true);

// `raw` as valid UTF-8 with each screen control, tabs and line breaks among them, replaced by
// U+FFFD: for `report`, whose reader should see that something was there, and where a name must
// never start a line of its own.
std::string marked_text(std::string_view raw);

// How many terminal columns `text` (valid UTF-8) takes: glibc's wcwidth under C.UTF-8 whatever
// the process's locale (two for wide and emoji, none for combining marks), and one for a
// character it has no width for, as most terminals do.
std::size_t text_columns(std::string_view text);

enum class Align { left, right };
// `text` (printable) padded or cut to exactly `columns` columns, never splitting a character: a
// wide character that would not fit whole is left out and its column padded.
std::string fit_text(std::string_view text, int columns, Align align = Align::left);

// `text` (printable) cut to at most `columns`, ending in `…` where it was cut; never in the
// middle of a character.
std::string cut_to_columns(std::string_view text, std::size_t columns);

// `text` (valid UTF-8) cut to at most `max_bytes` bytes, the `…` (3 bytes) included where it was
// cut; never in the middle of a character. For limits counted in bytes, not on a screen (a
// variable of the drain hook's environment).
std::string cut_to_bytes(std::string_view text, std::size_t max_bytes);

} // namespace nvsmi
