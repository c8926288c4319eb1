// What a job did on its GPUs, tallied sample by sample while it runs: how often its own processes
// were there, its peak GPU memory, who else shared each GPU and for how many samples, and the CPU
// its GPU processes used. Pure: the caller says which processes are the job's, which another's,
// and which it cannot tell.
#pragma once

#include "nvsmi/snapshot.hpp"

#include <functional>
#include <string>
#include <vector>

namespace nvsmi {

struct JobGpu {
  int index = 0;
  std::string uuid;
};

// Someone else's program on one of the job's GPUs: "bob's python".
struct StrangerTally {
  std::string label;
  long samples = 0; // samples of this GPU in which it was there
};

// Whose a GPU process is: the job's (in its process tree or its own cgroup), a stranger's (there
// before the job started), or unknown (started while the job ran but outside its tree: a
// container that `docker run` asked a daemon for may be the job's own worker).
enum class Owner { job, stranger, unknown };

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

class JobLedger {
public:
  using OwnerOf = std::function<Owner(const Process &)>;

  explicit JobLedger(std::vector<JobGpu> gpus);

  // Tallies one sample: the job's GPUs (found by UUID) and the processes on them.
  void add(const Snapshot &snapshot, const OwnerOf &owner_of);

  const std::vector<JobGpuTally> &gpus() const { return gpus_; }
  // The job's GPU processes' CPU, summed over its distinct pids in a sample (100 is one core):
  // the mean and the peak over the samples that had a reading; nullopt when none had.
  RealReading mean_cpu_percent() const;
  RealReading peak_cpu_percent() const { return peak_cpu_; }

private:
  std::vector<JobGpuTally> gpus_;
  double cpu_sum_ = 0;
  long cpu_samples_ = 0;
  RealReading peak_cpu_;
};

// "bob's python": the process's user (else "someone") and its program's base name (from
// nvidia-smi's name, else the command line, else "pid N").
std::string stranger_label(const Process &process);

// Whether the job's peak memory on this GPU may miss some of its own processes (some process on
// it could not be told the job's or another's).
bool peak_incomplete(const JobGpuTally &gpu);

// What a GPU's total memory leaves for a batch larger than the job's: total / peak, rounded down
// to one decimal; nullopt when either is unknown, the peak is 0 or it may be incomplete.
RealReading batch_growth_estimate(const JobGpuTally &gpu);

} // namespace nvsmi
