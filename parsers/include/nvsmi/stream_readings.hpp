// The one rule for what nvidia-smi's line streams print per GPU and per process: dmon's GPM shares
// (smutil, smocc, mmaact, dram, fp16/32/64) and its PCIe and NVLink rates, pmon's per-process
// shares (sm, mem, enc, dec, jpg, ofa) and its process type. A share is 0-100 %, a rate at least
// 0, a type one of the letters nvidia-smi documents: anything else is no reading (a driver's fault
// or a hostile nvidia-smi), dropped, never clamped, kept or guessed at, and named so that the
// stream's reader says so in one line, which the stream rate-limits as it does every line.
#pragma once

#include "nvsmi/snapshot.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace nvsmi {

// What a cell of a stream holds: a share of an interval (0-100 %) or a rate (at least 0).
enum class StreamRange { share, rate };

// A column of a stream, as its header names it.
struct StreamColumn {
  std::string_view stream;     // "dmon", "pmon": its errors say "dmon column smutil: ..."
  std::string_view name, unit; // "smutil", "%"
  StreamRange range = StreamRange::share;
  std::int64_t scale = 1; // to the unit the agent keeps (MiB/s to bytes per second)
};

// A cell of the stream as printed ("42"; "-", N/A or another marker: unknown; "-5": a number below
// 0), its whole number times the column's scale. A number outside the column's range is nullopt,
// and `dropped` gains what was dropped and why ("smutil 250 % (a share is 0-100 %)"). Throws
// ParseError naming the column for what is not a whole number, or one past 64 bits once scaled.
Reading stream_reading(std::string_view cell, const StreamColumn &column,
                       std::vector<std::string> &dropped);

// A process's type as nvidia-smi's manual documents it: "C" (compute), "G" (graphics), "M" (an MPS
// compute process), "O" (other), and their combinations joined by '+' ("C+G", "M+C"), each letter
// at most once. Anything else (`X`, `C+G+Z`, a kilobyte) is nullopt, never kept as text; where
// `dropped` is given, it gains a note of it, the text cut and made printable.
Text process_type(std::string_view text, std::vector<std::string> *dropped = nullptr);

// Whether a known type includes a compute context ("C", "M", "C+G", "M+C").
bool has_compute_context(const std::string &type);

// The one line a row's drops are said in: "dmon GPU 3: dropped, never read: smutil 250 % (a share
// is 0-100 %), rxpci -5 MB/s (a rate is at least 0)".
std::string dropped_line(std::string_view row, const std::vector<std::string> &dropped);

} // namespace nvsmi
