#include "jobs/job_ledger.hpp"

#include "nvsmi/gpu_state.hpp"

#include "core/command_text.hpp"

#include <algorithm>
#include <cmath>
#include <set>

namespace nvsmi {
namespace {

// The name every screen gives the process (core/command_text), else its pid.
std::string program_of(const Process &process) {
  if (std::optional<std::string> name = process_name(process))
    return *name;
  return process.pid ? "pid " + std::to_string(*process.pid) : "an unknown program";
}

// One more sample for each label, in the order first seen.
void count_labels(const std::set<std::string> &labels, std::vector<StrangerTally> &tallies) {
  for (const std::string &label : labels) {
    auto known = std::find_if(tallies.begin(), tallies.end(),
                              [&](const StrangerTally &s) { return s.label == label; });
    if (known == tallies.end())
      tallies.push_back({label, 1});
    else
      ++known->samples;
  }
}

} // namespace

std::string stranger_label(const Process &process) {
  std::string user = process.user && !process.user->empty() ? *process.user : "someone";
  return user + "'s " + program_of(process);
}

JobLedger::JobLedger(std::vector<JobGpu> gpus) {
  for (JobGpu &gpu : gpus)
    gpus_.push_back(JobGpuTally{std::move(gpu), 0, 0, std::nullopt, std::nullopt, {}, {}});
}

void JobLedger::add(const Snapshot &snapshot, const OwnerOf &owner_of) {
  std::set<std::int64_t> job_pids;
  double cpu = 0;
  bool cpu_known = false;
  for (JobGpuTally &tally : gpus_) {
    auto found = std::find_if(snapshot.gpus.begin(), snapshot.gpus.end(), [&](const Gpu &gpu) {
      return gpu.uuid && *gpu.uuid == tally.gpu.gpu_uuid();
    });
    if (found == snapshot.gpus.end())
      continue;
    // A MIG instance's own memory and processes, found by its UUID (nvidia-smi -L's, in the
    // sample where it was read); a sample that does not name it says nothing of it.
    std::optional<std::vector<const Process *>> processes;
    Reading memory_total = found->memory_total_mib;
    if (tally.gpu.instance_of) {
      const MigDevice *device = nullptr;
      if (found->mig_devices)
        for (const MigDevice &each : *found->mig_devices)
          if (each.uuid == tally.gpu.uuid)
            device = &each;
      if (!device)
        continue;
      memory_total = device->memory_total_mib;
      processes = instance_processes(*found, *device);
    } else if (found->processes) {
      processes.emplace();
      for (const Process &process : *found->processes)
        processes->push_back(&process);
    }
    ++tally.samples;
    if (memory_total)
      tally.memory_total_mib = memory_total;
    if (!processes)
      continue;
    bool job_here = false;
    Reading job_memory;
    // One program with several processes counts once.
    std::set<std::string> strangers_here, unknown_here;
    for (const Process *each : *processes) {
      const Process &process = *each;
      Owner owner = owner_of(process);
      if (owner == Owner::job) {
        job_here = true;
        if (process.used_memory_mib)
          job_memory = job_memory.value_or(0) + *process.used_memory_mib;
        if (process.pid && job_pids.insert(*process.pid).second && process.cpu_percent) {
          cpu += *process.cpu_percent;
          cpu_known = true;
        }
      } else {
        (owner == Owner::stranger ? strangers_here : unknown_here).insert(stranger_label(process));
      }
    }
    if (job_here)
      ++tally.samples_with_job;
    if (job_memory && (!tally.peak_job_memory_mib || *job_memory > *tally.peak_job_memory_mib))
      tally.peak_job_memory_mib = job_memory;
    count_labels(strangers_here, tally.strangers);
    count_labels(unknown_here, tally.unknown);
  }
  if (cpu_known) {
    cpu_sum_ += cpu;
    ++cpu_samples_;
    peak_cpu_ = std::max(peak_cpu_.value_or(cpu), cpu);
  }
}

RealReading JobLedger::mean_cpu_percent() const {
  if (cpu_samples_ == 0)
    return std::nullopt;
  return cpu_sum_ / static_cast<double>(cpu_samples_);
}

} // namespace nvsmi
