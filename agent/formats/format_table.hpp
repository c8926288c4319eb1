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

// The widths of the GPU rows' columns up to the state, in terminal columns.
struct TableColumns {
  std::size_t index = 0, name = 0, temperature = 0, utilization = 0, memory = 0, power = 0,
              state = 0;
};
// What `snapshot`'s rows take at style.width (its names cut as format_table cuts them).
TableColumns table_columns(const Snapshot &snapshot, const TableStyle &style = {});
// format_table with each column at least as wide as in `at_least`: several machines' tables one
// under another (fleet), given the widest of their table_columns, have every column at the same
// place on every row.
std::string format_table(const Snapshot &snapshot, const TableStyle &style,
                         const TableColumns &at_least);

} // namespace nvsmi
