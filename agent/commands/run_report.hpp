// The part of `run`'s end-of-run report that only `run` knows: the job itself (its command, how
// it ended, its GPUs, what it held on each, who shared them, its CPU, what it left running), added
// to the report that `report` makes of the samples, in each of its formats. Every name from
// outside goes through the printable filter of `top`, whatever the format.
#pragma once

#include "jobs/job_ledger.hpp"

#include <optional>
#include <string>
#include <vector>

namespace nvsmi {

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

// Text from outside (a command, a process or user name) made fit for a terminal, as `top` shows
// it: valid UTF-8 without controls (core/screen_text.hpp), each line on its own.
std::string printable_lines(const std::string &text);

std::string job_text(const JobSummary &job);
// `report_json` (format_report_json's one line) with a "job" member added.
std::string add_job_to_json(const std::string &report_json, const JobSummary &job);
// `report_html` (format_report_html's page) with the job's section before the end of its body.
std::string add_job_to_html(const std::string &report_html, const JobSummary &job);

} // namespace nvsmi
