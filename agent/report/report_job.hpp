// The words of `run`'s job section that the text, JSON and HTML reports share. Every name from
// outside (the command, a process or user name) goes through the printable filter of `top`
// (core/screen_text.hpp), whatever the format.
#pragma once

#include "core/job_summary.hpp"

#include <string>
#include <vector>

namespace nvsmi {

// A name from outside as one line of printable UTF-8.
std::string job_shown(const std::string &raw);
// The job's command, its words joined by spaces, printable.
std::string job_command_line(const JobSummary &job);
// "exit code 3", "killed by signal 9 (exit code 137)".
std::string job_ending(const JobSummary &job);
// How much of a GPU's samples `part` is, in whole percent; 0 for a GPU without samples.
long job_percent_of(long part, long whole);
// A GPU's lines: its peak memory, the batch advice (only from `covered_seconds` of samples enough
// for advice: enough_for_advice), how often the job was on it (with `details`), who shared it.
std::vector<std::string> job_gpu_lines(const JobGpuTally &gpu, double covered_seconds,
                                       bool details);
// The job's CPU, and its GPU processes'.
std::string job_cpu_line(const JobSummary &job);
// What it left running, printable, joined by ", ".
std::string job_left_running_line(const JobSummary &job);

} // namespace nvsmi
