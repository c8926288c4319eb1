// Which batch job holds which GPU, from the folder a scheduler's prolog and epilog keep
// (deploy/slurm/, docs/SLURM.md): the DCGM exporter's --hpc-job-mapping-dir convention, a file
// per GPU named by its index whose first line is the job id, or per MIG instance named
// `<GPU index>.<GPU instance id>` (the exporter's form since its #602), and ours beside each,
// `<name>.user` holding the job's user and `<name>.account` its account (names the DCGM exporter
// skips).
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
  // The MIG instances' records, by GPU index and GPU instance id (empty where unread).
  std::map<std::pair<int, int>, Allocation> by_instance;
  std::string error;
};

// Reads the folder once, bounded: at most a few thousand entries looked at, only names of one to
// four digits or two such joined by a dot (and their `.user` and `.account`), regular files only
// (never a link followed), the first 4 KiB of each. A file whose first line is not a job id
// (digits) is no allocation; a user that is not a plain account name is unknown. `now` is the
// sample's wall time, to tell how long each is held.
JobMapping read_job_mapping(const std::string &dir, std::chrono::system_clock::time_point now);

// Gives each GPU of `snapshot` its allocation, by index, and each of its MIG instances its own,
// by GPU index and GPU instance id (none where the instance's id is unknown), and marks the
// allocations as read.
void attach_allocations(Snapshot &snapshot, const std::map<int, Allocation> &by_gpu_index,
                        const std::map<std::pair<int, int>, Allocation> &by_instance = {});

// read_job_mapping at this moment, then attach_allocations; where the folder cannot be read the
// allocations stay unknown and the line to say is returned ("job mapping folder DIR: No such file
// or directory: allocations unknown"), else "".
std::string attach_job_mapping(Snapshot &snapshot, const std::string &dir);

} // namespace nvsmi
