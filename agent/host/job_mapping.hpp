// Which batch job holds which GPU, from the folder a scheduler's prolog and epilog keep
// (deploy/slurm/, docs/SLURM.md): the DCGM exporter's --hpc-job-mapping-dir convention, a file
// per GPU named by its index whose first line is the job id, and ours beside it, `<index>.user`
// holding the job's user (a name the DCGM exporter skips, as it is not a number).
#pragma once

#include "nvsmi/snapshot.hpp"

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace nvsmi {

// Where the shipped prolog writes and the agent reads, unless told otherwise (both the same).
inline constexpr std::string_view default_job_mapping_dir = "/run/nvsmi-agent/slurm-jobs";

struct JobMapping {
  // nullopt where the folder could not be read (`error` says why): allocations unknown.
  std::optional<std::map<int, Allocation>> by_gpu_index;
  std::string error;
};

// Reads the folder once, bounded: at most a few thousand entries looked at, only names of one to
// four digits (and their `.user`), regular files only (never a link followed), the first 4 KiB of
// each. A file whose first line is not a job id (digits) is no allocation; a user that is not a
// plain account name is unknown. `now` is the sample's wall time, to tell how long each is held.
JobMapping read_job_mapping(const std::string &dir, std::chrono::system_clock::time_point now);

// Gives each GPU of `snapshot` its allocation, by index, and marks the allocations as read.
void attach_allocations(Snapshot &snapshot, const std::map<int, Allocation> &by_gpu_index);

// read_job_mapping at this moment, then attach_allocations; where the folder cannot be read the
// allocations stay unknown and the line to say is returned ("job mapping folder DIR: No such file
// or directory: allocations unknown"), else "".
std::string attach_job_mapping(Snapshot &snapshot, const std::string &dir);

} // namespace nvsmi
