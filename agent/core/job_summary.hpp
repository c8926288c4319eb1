// What `run` found of its job, as plain figures: its command, how it ended, and per GPU how often
// its processes were there, the most memory they held and who shared the GPU. `jobs/`' ledger
// tallies the GPUs while the job runs, `run` fills in the rest, and `report/` renders it as a
// section of the report in each of its formats: here, below both, so that neither copies it.
#pragma once

#include "nvsmi/snapshot.hpp"

#include <optional>
#include <string>
#include <vector>

namespace nvsmi {

struct JobGpu {
  int index = 0;
  std::string uuid; // the GPU's, or a MIG instance's "MIG-..."
  // For a MIG instance: its GPU's UUID, its device index and profile; nullopt for a whole GPU.
  std::optional<std::string> instance_of;
  std::optional<std::int64_t> mig_device;
  std::optional<std::string> profile;
  // The GPU whose samples are this one's: the GPU itself, or the instance's GPU.
  const std::string &gpu_uuid() const { return instance_of ? *instance_of : uuid; }
};
// "GPU 0", or "GPU 0 MIG 1" for an instance: how a report names what the job got.
std::string job_gpu_name(const JobGpu &gpu);

// Someone else's program on one of the job's GPUs: "bob's python".
struct StrangerTally {
  std::string label;
  long samples = 0; // samples of this GPU in which it was there
};

struct JobGpuTally {
  JobGpu gpu;
  long samples = 0;          // samples that listed this GPU
  long samples_with_job = 0; // ... in which a process of the job was on it
  Reading memory_total_mib;  // the latest known
  // The most GPU memory the job's processes held on it at once (their used memory summed in one
  // sample); nullopt while no sample gave one.
  Reading peak_job_memory_mib;
  std::vector<StrangerTally> strangers; // in the order first seen
  // Processes that could not be told the job's or another's: while there were any, the peak may
  // miss the job's own memory.
  std::vector<StrangerTally> unknown; // in the order first seen
};

// Whether the job's peak memory on this GPU may miss some of its own processes (some process on
// it could not be told the job's or another's).
bool peak_incomplete(const JobGpuTally &gpu);

// What a GPU's total memory leaves for a batch larger than the job's: total / peak, rounded down
// to one decimal; nullopt when either is unknown, the peak is 0 or it may be incomplete.
RealReading batch_growth_estimate(const JobGpuTally &gpu);

struct JobSummary {
  std::vector<std::string> command;
  int exit_code = 0;                 // as `run` exits: the job's code, or 128 + N
  std::optional<int> signal;         // the signal that ended the job
  double seconds = 0;                // from its start to its end
  std::optional<double> cpu_seconds; // user + system of the job and the children it waited for
  std::vector<JobGpuTally> gpus;
  RealReading gpu_process_cpu_mean, gpu_process_cpu_peak; // percent of one core
  std::vector<std::string> notes;                         // what went wrong with sampling meanwhile
  // The job's processes still running when it ended ("pid 4242 (python)"): not waited for.
  std::vector<std::string> left_running;
};

} // namespace nvsmi
