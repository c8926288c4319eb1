// `nvidia-smi --query-compute-apps=... --format=csv`: the compute processes on each GPU, and how
// they are attached to the GPUs of a sample. Same rules as the GPU query: units checked, unknown
// (`[N/A]`, `[Not Supported]`) is nullopt.
#pragma once

#include "nvsmi/snapshot.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace nvsmi {

struct ComputeApp {
  Text gpu_uuid;
  Reading pid;
  Text process_name;
  Reading used_memory_mib;
};

// The fields the agent asks for, in this order. process_name is last because nvidia-smi does not
// quote it: a name holding ", " is the rest of the line.
const std::vector<std::string> &compute_apps_fields();

// A whole output with its header ("gpu_uuid, pid, used_gpu_memory [MiB], process_name"), in any
// column order and with other columns (timestamp, gpu_name, ...) beside; a header alone is no
// process. Without a header the columns are compute_apps_fields(). Throws ParseError naming the
// field for a wrong unit or a bad number, and for a line that is not a row (nvidia-smi's message).
std::vector<ComputeApp> read_compute_apps(std::string_view text);

// nvidia-smi's own loop of the query (`-lms N`) prints one header, then each iteration's rows with
// nothing between iterations, and no row at all for an iteration with no process
// (fixtures/recorded/nvidia-h200__580.159.04/compute-apps-loop.csv and idle-compute-apps-loop.csv).
// Asked for with `timestamp` first (compute_apps_loop_fields()), the rows of one iteration share
// their timestamp, so a row with another one completes the iteration before it. The last
// iteration's rows are complete once nvidia-smi is quiet (it writes them at once): the caller,
// which has the clock, takes them with flush(); and an iteration with no process is seen only as
// silence, which is the caller's to judge.
class ComputeAppsLoopReader {
public:
  struct Sample {
    std::string timestamp; // as nvidia-smi printed it: "2026/11/26 02:31:30.512"
    std::vector<ComputeApp> apps;
  };
  struct Outcome {
    std::optional<Sample> sample;     // the iteration this line completed
    std::optional<std::string> error; // the line could not be read (it is skipped)
  };
  Outcome add_line(std::string_view line);
  // The iteration whose rows came last, if any, which it forgets.
  std::optional<Sample> flush();
  // Whether the run has printed its header and nothing else (blank lines aside): nvidia-smi writes
  // its first iteration at once after the header, so once it is quiet, that iteration listed no
  // process. A line that is not a row (garbage) ends this as a row does: it says nothing.
  bool header_alone() const { return header_seen_ && !other_seen_; }

private:
  std::optional<Sample> pending_;
  // The iteration last completed or dropped: a row of it that comes after is skipped rather than
  // made a second, partial sample of that moment.
  std::string done_;
  bool header_seen_ = false, other_seen_ = false;
};

// timestamp, then compute_apps_fields(): what the loop asks for, in the order the reader expects
// when the output has no header (`--format=csv,noheader`).
const std::vector<std::string> &compute_apps_loop_fields();

// Sets every GPU's `processes` to the apps whose gpu_uuid is its uuid (type "C"), in output order;
// a GPU with none gets an empty list. A GPU without a uuid keeps nullopt (cannot be matched).
void attach_compute_apps(Snapshot &snapshot, const std::vector<ComputeApp> &apps);

} // namespace nvsmi
