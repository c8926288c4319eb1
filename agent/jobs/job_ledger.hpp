// What a job did on its GPUs, tallied sample by sample while it runs: how often its own processes
// were there, its peak GPU memory, who else shared each GPU and for how many samples, and the CPU
// its GPU processes used. Pure: the caller says which processes are the job's, which another's,
// and which it cannot tell.
#pragma once

#include "core/job_summary.hpp"
#include "nvsmi/snapshot.hpp"

#include <functional>
#include <string>
#include <vector>

namespace nvsmi {

// Whose a GPU process is: the job's (in its process tree or its own cgroup), a stranger's (there
// before the job started), or unknown (started while the job ran but outside its tree: a
// container that `docker run` asked a daemon for may be the job's own worker).
enum class Owner { job, stranger, unknown };

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

// "bob's train.py": the process's user (else "someone") and the name every screen gives it
// (core/command_text's process_name), else "pid N".
std::string stranger_label(const Process &process);

} // namespace nvsmi
