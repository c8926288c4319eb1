// What must never reach a screen from outside text (a process name, a command line, a GPU name):
// controls move the cursor, ring, clear or start an escape sequence; the bidirectional controls
// reverse what follows them on the line, so a name could show as another. The table and `top`
// both leave these out.
#pragma once

namespace nvsmi {

inline bool is_screen_control(char32_t c) {
  return c < 0x20 || (c >= 0x7F && c <= 0x9F) || c == 0x200E || c == 0x200F ||
         (c >= 0x202A && c <= 0x202E) || (c >= 0x2066 && c <= 0x2069);
}

} // namespace nvsmi
