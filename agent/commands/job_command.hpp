// `job JOBID`: what one batch job did with the GPUs it held, from the JSON logs named with --log,
// or without them from this machine's own records: the local `serve`'s history, else the default
// JSON log that the shipped watch unit writes.
#pragma once

#include "report/report.hpp"

#include <optional>
#include <string>

namespace nvsmi {

// Where `job` looks without --log: the shipped unit's serve, on loopback, and the JSON log the
// shipped nvsmi-agent-log unit writes ($NVSMI_JOB_LOG names another).
inline constexpr const char *default_job_serve = "127.0.0.1:9437";
inline constexpr const char *default_job_log = "/var/log/nvsmi-agent/gpu-log.jsonl";

struct JobOptions {
  std::string job_id;                    // checked by the command line: 1 to 20 digits
  ReportOptions logs;                    // logs.files empty: the serve, then the default log
  std::string serve = default_job_serve; // HOST:PORT, a loopback address
  bool json = false;                     // the job as one JSON line, else text
};

// Prints the job and returns exit_ok. Throws AgentError: exit_bad_output (6) when what it read
// has no sample of the job, exit_io (7) when without --log neither the serve nor the default log
// could be read, exit_usage (2) for a --serve that is not a loopback address.
int run_job(const JobOptions &options);

} // namespace nvsmi
