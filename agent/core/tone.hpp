// What a piece of text on a screen means, so that the table and `top` colour a GPU's state alike;
// each screen picks its own colour for a tone (ANSI escapes in the table, ncurses pairs in top).
#pragma once

#include "nvsmi/gpu_state.hpp"

namespace nvsmi {

enum class Tone {
  normal,
  heading, // column names, keys, a GPU's name
  dim,     // old, absent or doing nothing: idle, unknown, a late sample's sparkline
  good,    // free
  busy,    // in use, bars
  warning, // idle but held
  alarm,   // hot, at power limit, lost, failing, late
};

// The one state-to-colour mapping: lost, failing, hot and at power limit alarm; idle but held a
// warning; free good; in use busy; idle and unknown dim.
Tone state_tone(GpuState state);

} // namespace nvsmi
