// The `table` format: one screen for people, in the spirit of gpustat. A pure function of a
// Snapshot: whether stdout is a terminal, how wide it is and whether colour is wanted are the
// caller's to decide (TableStyle).
#pragma once

#include "nvsmi/snapshot.hpp"

#include <cstddef>
#include <string>

namespace nvsmi {

struct TableStyle {
  bool colour = false;    // ANSI colour escapes (SGR)
  std::size_t width = 80; // no line takes more terminal columns than this
};

// The fleet's summary first (fleet_summary_text: "8 GPUs: 3 free · 2 in use · ..."; broken
// between its states where it is wider than the screen), a header line (host, time, driver, CUDA,
// host CPU and memory; `recording` for a recording), a line per GPU (index, name, temperature,
// utilization, memory, power, state, why it is in that state, who holds it), its MIG instances
// under it. Why: a lost GPU's reason, a failing one's (gpu_failure), a hot one's temperature
// against the threshold, one at its power limit its draw against the limit. Who: every holder is
// named while any way fits (`user:program(MiB)` per process, then `user:program`, then each user
// once, `alice×2`); when even that does not fit beside the readings, the holders take a line of
// their own under the row, and only where they do not fit there either are the last counted as
// `+N more` (users). Every line is newline-terminated and at most style.width columns. Colours:
// temperature red from the `hot` state's threshold (85 C), yellow from 70 C; utilization green
// from 50 %, dim under the idle threshold (5 %); memory red from 90 % used, yellow from 75 %; power
// red from the `at power limit` threshold (95 % of the limit), yellow from 80 %; the state and its
// reason in the state's tone (core/tone.hpp, as in `top`): red when lost, failing, hot or at its
// power limit, yellow when idle but held, green when free, dim when idle or unknown.
std::string format_table(const Snapshot &snapshot, const TableStyle &style = {});

} // namespace nvsmi
