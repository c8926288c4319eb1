// Text from outside (process names, commands, user names) may hold any bytes, escape sequences
// among them: on a terminal those would move the cursor or clear the screen. What the screen
// shows goes through here: valid UTF-8, no control characters, cut to a number of columns.
#pragma once

#include <string>
#include <string_view>

namespace nvsmi {

// `raw` as valid UTF-8 without control characters (core/screen_control.hpp: C0, DEL, C1, the
// bidirectional ones); tabs and newlines become
// spaces. Without `unicode` (a terminal whose locale is not UTF-8) every non-ASCII character
// becomes '?', one column each.
std::string printable_text(std::string_view raw, bool unicode);

// How many terminal columns `text` (already printable) takes.
int text_columns(std::string_view text);

enum class Align { left, right };
// `text` (already printable) padded or cut to exactly `columns` columns, never splitting a
// character: a wide character that would not fit whole is left out and its column padded.
std::string fit_text(std::string_view text, int columns, Align align = Align::left);

} // namespace nvsmi
