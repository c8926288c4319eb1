#include "report/report_job.hpp"

#include "core/number_text.hpp"
#include "core/screen_text.hpp"
#include "report/report.hpp"

#include <cmath>

namespace nvsmi {
namespace {

const char *const estimate_caveat =
    "an estimate: it assumes memory grows in proportion to the batch";

} // namespace

std::string job_shown(const std::string &raw) { return printable_text(raw, true); }

std::string job_command_line(const JobSummary &job) {
  std::string out;
  for (const std::string &word : job.command)
    out += (out.empty() ? "" : " ") + word;
  return job_shown(out);
}

std::string job_ending(const JobSummary &job) {
  if (job.signal)
    return "killed by signal " + std::to_string(*job.signal) + " (exit code " +
           std::to_string(job.exit_code) + ")";
  return "exit code " + std::to_string(job.exit_code);
}

long job_percent_of(long part, long whole) {
  return whole > 0 ? std::lround(100.0 * static_cast<double>(part) / static_cast<double>(whole))
                   : 0;
}

std::vector<std::string> job_gpu_lines(const JobGpuTally &gpu, double covered_seconds,
                                       bool details) {
  std::vector<std::string> lines;
  std::string memory = "peak memory ";
  if (gpu.peak_job_memory_mib) {
    memory += std::to_string(*gpu.peak_job_memory_mib) + " MiB";
    if (gpu.memory_total_mib && *gpu.memory_total_mib > 0)
      memory += " of " + std::to_string(*gpu.memory_total_mib) + " MiB (" +
                fixed_text(100.0 * static_cast<double>(*gpu.peak_job_memory_mib) /
                               static_cast<double>(*gpu.memory_total_mib),
                           1) +
                "%)";
  } else {
    memory += "unknown (no sample showed the job's processes with their memory)";
  }
  if (peak_incomplete(gpu))
    memory += ", perhaps incomplete: it counts only the processes known to be the job's";
  lines.push_back(memory);
  // A peak that may miss the job's own processes is no ground for advice however long the job ran.
  if (!peak_incomplete(gpu) && !enough_for_advice(covered_seconds))
    lines.push_back("how much larger a batch might fit: " + short_window_finding(covered_seconds));
  else if (RealReading growth = batch_growth_estimate(gpu))
    lines.push_back("a batch about " + fixed_text(*growth, 1) + " times as large might fit (" +
                    estimate_caveat + ")");
  else if (peak_incomplete(gpu))
    lines.push_back("how much larger a batch might fit: unknown (the peak may miss the job's own "
                    "processes)");
  else
    lines.push_back("how much larger a batch might fit: unknown");
  if (details)
    lines.push_back("the job's processes were on it in " + std::to_string(gpu.samples_with_job) +
                    " of " + std::to_string(gpu.samples) + " samples");
  for (const StrangerTally &stranger : gpu.strangers)
    lines.push_back(job_gpu_name(gpu.gpu) + " was shared with " + job_shown(stranger.label) +
                    " for " + std::to_string(job_percent_of(stranger.samples, gpu.samples)) +
                    "% of the run");
  for (const StrangerTally &unknown : gpu.unknown)
    lines.push_back(job_gpu_name(gpu.gpu) + " also had " + job_shown(unknown.label) + " for " +
                    std::to_string(job_percent_of(unknown.samples, gpu.samples)) +
                    "% of the run, started while the job ran but outside its processes: the "
                    "job's (a container it asked for?) or another's, it cannot be told");
  return lines;
}

std::string job_cpu_line(const JobSummary &job) {
  std::string out;
  if (job.cpu_seconds) {
    out = fixed_text(*job.cpu_seconds, 1) + " s of CPU in " + fixed_text(job.seconds, 1) + " s";
    if (job.seconds > 0)
      out += " (" + fixed_text(100.0 * *job.cpu_seconds / job.seconds, 0) + "% of one core)";
    out += ", the job and the children it waited for";
  } else {
    out = "unknown";
  }
  if (job.gpu_process_cpu_mean && job.gpu_process_cpu_peak)
    out += "; its GPU processes: mean " + fixed_text(*job.gpu_process_cpu_mean, 0) + "%, peak " +
           fixed_text(*job.gpu_process_cpu_peak, 0) + "% of one core";
  return out;
}

std::string job_left_running_line(const JobSummary &job) {
  std::string out;
  for (const std::string &process : job.left_running)
    out += (out.empty() ? "" : ", ") + job_shown(process);
  return out;
}

} // namespace nvsmi
