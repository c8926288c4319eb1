#pragma once

#include "nvidia_smi/source.hpp"

#include "nvsmi/snapshot.hpp"

#include <optional>
#include <string>
#include <vector>

namespace nvsmi {

// Where one sample comes from: what `snapshot` prints, what `check` judges, what `pick` decides
// on.
struct OneSampleOptions {
  Source source = Source::xml;
  std::optional<std::string> fixture;    // a recorded output to read instead; "-" is stdin
  std::optional<std::string> nvidia_smi; // command (with arguments) to run instead of nvidia-smi
  double timeout_seconds = 10;
  bool processes = true; // csv source: ask --query-compute-apps too
  bool host = true;      // read this machine's /proc: not when nvidia-smi is remote
  // The kernel log to count Xid errors in (read to its end once); nullopt: none (--kernel-log
  // none, or a recording without --kernel-log).
  std::optional<std::string> kernel_log;
  // Whether a kernel log that cannot be read is said on stderr. The CLI says it for a log named
  // with --kernel-log only: the default /dev/kmsg is forbidden to most users, and a snapshot
  // that cron runs every minute should not mail that every minute (its output still says so).
  bool say_kernel_log_problems = true;
  // The scheduler's job mapping folder (host/job_mapping.hpp), read for each GPU's allocation;
  // nullopt: not read. A folder that cannot be read is said only where it was named.
  std::optional<std::string> job_mapping_dir;
  bool say_job_mapping_problems = true;
};

// One sample: the fixture, or nvidia-smi run once (and, for the csv source, once more for the
// processes, whose failure only leaves them unknown), with its Xid counts and its UTC offset.
// Throws AgentError with the snapshot command's codes (3 to 7) when there is none.
Snapshot read_one_sample(const OneSampleOptions &options);

} // namespace nvsmi
