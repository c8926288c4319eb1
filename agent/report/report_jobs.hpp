// The per-job ledger, beside the per-user one (report_users.hpp): from the allocations a
// `watch --json-log` carries (the prolog's records, read with every sample), what each batch job
// held and what it did with it: its GPUs, for how long, their utilization, idle and
// allocated-but-unused time, peak memory against total, energy, and a finding with advice.
// Gathered in one pass over the same stretches as the GPUs' own figures; its memory grows with the
// number of jobs (at most report_max_jobs), never with the log.
#pragma once

#include "report/report_severity.hpp"
#include "report/report_stats.hpp"

#include "nvsmi/snapshot.hpp"
#include "nvsmi/timestamp.hpp"

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace nvsmi {

constexpr std::size_t report_max_jobs = 4096;

// One stretch of a GPU's covered time that a job held it (GpuStats::take).
struct BatchJobStretch {
  std::size_t gpu_slot = 0;
  int gpu_index = 0;
  double seconds = 0;
  Timestamp end; // the sample that closes the stretch
  const Allocation *allocation = nullptr;
  Reading utilization, memory_used, memory_total;
  std::optional<double> joules;
  std::optional<bool> compute_process; // nullopt: the sample has no process list
  const Sample *sample = nullptr;      // its units' activity (dmon), where the log has it
  // Where the job held one MIG instance of the GPU, not the GPU: the instance's index and profile
  // (its memory and process above are the instance's; utilization, energy and activity unknown).
  Reading mig_index;
  Text mig_profile;
};

// One GPU, or one MIG instance of a GPU, as a job held it.
struct BatchJobGpu {
  int index = 0;
  double seconds = 0;
  Reading peak_memory_mib, memory_total_mib;
  Reading mig_index; // the instance's, where the job held an instance
  Text mig_profile;
};

// "GPU 0", "GPU 0 MIG 1 (3g.40gb)": a held GPU or instance as every format names it.
std::string held_name(const BatchJobGpu &held);

// "0, 1", "GPU 0 MIG 1 (3g.40gb)": the list after held_count_text, a GPU by its index alone.
std::string held_list_text(const std::vector<BatchJobGpu> &held);

// "2 GPUs", "1 MIG instance", "1 GPU and 2 MIG instances": what a job held.
std::string held_count_text(const std::vector<BatchJobGpu> &held);

struct BatchJob {
  std::string job_id;
  std::string scheduler;
  Text user;    // nullopt: the record names nobody
  Text account; // the scheduler's account charged; nullopt: the record names none
  std::optional<Timestamp> first, last;
  std::vector<BatchJobGpu> gpus;                             // by index
  double held_seconds = 0;                                   // GPU-seconds held, covered by samples
  double utilization_sum = 0, utilization_known_seconds = 0; // utilization x seconds; known
  TimeShare idle;   // utilization under the idle threshold, of the known seconds
  TimeShare unused; // no compute process, of the seconds with a process list
  double energy_joules = 0, energy_known_seconds = 0;
  ActivityMeans activity; // over its GPUs' time not idle with SM activity known, as a GPU's
  Finding finding;
  std::string advice;
  // What its GPUs' units did (the GPUs' activity rules on the job's figures); nullopt where no
  // rule applies or the log has no SM activity.
  std::optional<Finding> activity_finding;

  std::optional<double> utilization_percent() const;
  std::optional<double> energy_wh() const;
  // The longest any one GPU was held: the job's time as the samples saw it.
  double wall_seconds() const;
};

// The jobs of one account together (the accounting roll-up): GPU-hours held, used (a compute
// process on the GPU), idle (utilization under the idle threshold) and unused (no process), each
// over the jobs whose samples knew it; nullopt where none did.
struct BatchAccount {
  Text account; // nullopt: the jobs whose records name no account
  std::size_t jobs = 0;
  double held_seconds = 0;
  std::optional<double> used_seconds, idle_seconds, unused_seconds;
};

// The accounts of `jobs`, by name (the jobs with no account last).
std::vector<BatchAccount> roll_up_accounts(const std::vector<BatchJob> &jobs);

struct BatchJobLedgerSummary {
  std::vector<BatchJob> jobs; // by first seen, then job id
  std::size_t left_out = 0;   // stretches of jobs past the first report_max_jobs
};

class BatchJobLedger {
public:
  void add(const BatchJobStretch &stretch);
  BatchJobLedgerSummary finish() const;

private:
  std::map<std::string, BatchJob> jobs_;     // by scheduler + job id
  std::map<std::string, std::size_t> order_; // first seen
  std::size_t left_out_ = 0;                 // stretches of jobs past report_max_jobs
};

// The finding and the advice for a job (README "report": the rules), on the report's scale.
void judge_job(BatchJob &job);

} // namespace nvsmi
