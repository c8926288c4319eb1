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

// A header line (host, time, driver, CUDA, host CPU and memory; `recording` for a recording), a
// line per GPU (index, name, temperature, utilization, memory, power, state, `user:program(MiB)`
// per process), its MIG instances under it. Every line is newline-terminated and at most
// style.width columns. Colours: temperature red from the `hot` state's threshold (85 C), yellow
// from 70 C; utilization green from 50 %, dim under the idle threshold (5 %); memory red from
// 90 % used, yellow from 75 %; power red from the `at power limit` threshold (95 % of the limit),
// yellow from 80 %; the state in its tone (core/tone.hpp, as in `top`): red when lost, failing,
// hot or at its power limit, yellow when idle but held, green when free, dim when idle or
// unknown. A lost GPU shows why and a failing one what fails (gpu_failure), in
// red where its first process would be.
std::string format_table(const Snapshot &snapshot, const TableStyle &style = {});

} // namespace nvsmi
