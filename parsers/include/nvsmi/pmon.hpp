// `nvidia-smi pmon` (here `-s um`): a scrolling text table, one row per process per GPU each
// interval, `#` header lines naming the columns (which differ between drivers), `-` for unknown.
#pragma once

#include "nvsmi/snapshot.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace nvsmi {

struct PmonRow {
  Reading gpu_index;
  Reading pid; // nullopt: the GPU's row when it has no process
  Text type;   // "C", "G", "C+G", "M", "M+C", "O" (process_type); nullopt for `-` or any other
  Reading sm_percent, memory_percent, encoder_percent, decoder_percent, jpeg_percent, ofa_percent;
  Reading fb_mib; // with -s m: framebuffer memory, MiB
  Text command;   // the rest of the line: may hold spaces; nvidia-smi cuts it to 16 characters
};

// Reads pmon's output line by line. The first header line names the columns; rows are read by
// those names. A sample is complete when the next one begins: when a (gpu, pid) pair repeats.
class PmonReader {
public:
  struct Outcome {
    std::optional<std::vector<PmonRow>> sample; // the sample this line completed
    std::optional<std::string> error;           // the line could not be read (it is skipped)
    // The row was read without what this says: a share out of 0-100 %, a type nvidia-smi does not
    // document (nvsmi/stream_readings.hpp); those are unknown in the row.
    std::optional<std::string> dropped;
  };
  Outcome add_line(std::string_view line);
  // The rows not yet completed as a sample (at the end of a finite output), and forgets them.
  std::optional<std::vector<PmonRow>> finish();
  const std::vector<std::string> &columns() const { return columns_; }

private:
  std::vector<std::string> columns_;
  std::vector<PmonRow> pending_;
};

// Every complete sample of a finite output (`pmon -c N`), the last one included.
std::vector<std::vector<PmonRow>> read_pmon(std::string_view text);

// Gives each process of the snapshot the SM and memory shares of its (gpu index, pid) row, and its
// type where the process's is compute-apps' "C" and pmon's keeps the compute context (C+G, M+C). A
// row whose pid the GPU's list lacks (a graphics process: compute-apps lists compute ones only) is
// added as a process with pmon's type, command as name, and fb as used memory. GPUs whose
// `processes` is nullopt get a list from pmon's rows alone. `age_seconds`: how old the sample is,
// given to each process it gives shares to (Process::utilization_age_seconds).
void attach_pmon(Snapshot &snapshot, const std::vector<PmonRow> &sample,
                 RealReading age_seconds = std::nullopt);

} // namespace nvsmi
