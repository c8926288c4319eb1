// libproc2, loaded the first time the host is read rather than by the dynamic loader at every
// start: it brings libsystemd and the compression and crypto libraries behind it, about a million
// instructions of mapping and relocating that a snapshot of a fixture, a report or a check never
// uses (docs/PERFORMANCE.md, "A snapshot's instructions").
#pragma once

#include <libproc2/meminfo.h>
#include <libproc2/misc.h>
#include <libproc2/pids.h>
#include <libproc2/stat.h>

namespace nvsmi {

// The functions of libproc2 that the host's readers call. Its headers' macros (PIDS_VAL,
// STAT_VAL, MEMINFO_VAL) read the results in place and need nothing loaded.
struct Procps {
  decltype(&procps_hertz_get) hertz_get;
  decltype(&procps_pids_new) pids_new;
  decltype(&procps_pids_select) pids_select;
  decltype(&procps_pids_unref) pids_unref;
  decltype(&procps_stat_new) stat_new;
  decltype(&procps_stat_select) stat_select;
  decltype(&procps_stat_unref) stat_unref;
  decltype(&procps_meminfo_new) meminfo_new;
  decltype(&procps_meminfo_select) meminfo_select;
  decltype(&procps_meminfo_unref) meminfo_unref;
};

// libproc2.so.0's functions, loaded on the first call (from any thread) and kept for the run;
// nullptr where it cannot be loaded or lacks one of them, said once on stderr: the host's readings
// and the processes' owners then stay unknown, as when /proc cannot be read.
const Procps *procps();

} // namespace nvsmi
