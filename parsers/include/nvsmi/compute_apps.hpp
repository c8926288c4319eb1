// `nvidia-smi --query-compute-apps=... --format=csv`: the compute processes on each GPU, and how
// they are attached to the GPUs of a sample. Same rules as the GPU query: units checked, unknown
// (`[N/A]`, `[Not Supported]`) is nullopt.
#pragma once

#include "nvsmi/snapshot.hpp"

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

// Sets every GPU's `processes` to the apps whose gpu_uuid is its uuid (type "C"), in output order;
// a GPU with none gets an empty list. A GPU without a uuid keeps nullopt (cannot be matched).
void attach_compute_apps(Snapshot &snapshot, const std::vector<ComputeApp> &apps);

} // namespace nvsmi
