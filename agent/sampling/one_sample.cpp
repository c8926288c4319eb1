#include "sampling/one_sample.hpp"

#include "core/exit_codes.hpp"
#include "core/local_time.hpp"
#include "core/log_line.hpp"
#include "files/file_io.hpp"
#include "host/host_observer.hpp"
#include "host/job_mapping.hpp"
#include "kernel_log/xid_log.hpp"
#include "nvidia_smi/bounded_command.hpp"
#include "nvidia_smi/gpu_query.hpp"
#include "nvidia_smi/said_line.hpp"

#include "nvsmi/compute_apps.hpp"
#include "nvsmi/gpu_listing.hpp"
#include "nvsmi/nvidia_smi_output.hpp"
#include "nvsmi/quantity.hpp"
#include "nvsmi/unreadable_gpu.hpp"

#include <algorithm>
#include <cmath>

namespace nvsmi {
namespace {

std::vector<std::string> nvidia_smi_command(const OneSampleOptions &options,
                                            const GpuQuery &query) {
  std::vector<std::string> argv = nvidia_smi_argv(options.nvidia_smi);
  if (options.source == Source::xml) {
    argv.insert(argv.end(), {"-q", "-x"});
  } else {
    argv.push_back(query.argument());
    argv.push_back("--format=csv,nounits");
  }
  return argv;
}

// Runs it to its end, bounded; a signal is a failure whatever it printed.
CommandResult run_to_end(const std::vector<std::string> &argv, const OneSampleOptions &options) {
  CommandLimits limits;
  limits.timeout = std::chrono::milliseconds(std::llround(options.timeout_seconds * 1000));
  limits.max_output_bytes = max_input_bytes;
  CommandResult result;
  try {
    result = run_bounded(argv, limits);
  } catch (const AgentError &error) {
    // Not found, cannot run: the message names the program already.
    if (error.code() == exit_not_found)
      throw;
    throw AgentError(error.code(), argv[0] + ": " + error.what());
  }
  if (result.term_signal != 0)
    throw AgentError(exit_smi_failed, argv[0] + " was killed by signal " +
                                          std::to_string(result.term_signal) + ": " +
                                          first_message_line(result));
  return result;
}

AgentError exited_with(const std::vector<std::string> &argv, const CommandResult &result) {
  return AgentError(exit_smi_failed, argv[0] + " exited with code " +
                                         std::to_string(result.exit_code) + ": " +
                                         first_message_line(result));
}

std::string run_nvidia_smi(const std::vector<std::string> &argv, const OneSampleOptions &options) {
  CommandResult result = run_to_end(argv, options);
  if (result.exit_code != 0)
    throw exited_with(argv, result);
  return std::move(result.out);
}

// nvidia-smi exits non-zero when it cannot read one of its GPUs, yet prints the others: that
// sample is used, with the GPUs it named marked lost, since one GPU that cannot be read must not
// take the others with it. A non-zero exit that names no GPU, or leaves none read, stays a
// failure.
Snapshot read_gpu_query(const OneSampleOptions &options) {
  GpuQuery query;
  std::vector<std::string> argv = nvidia_smi_command(options, query);
  CommandResult result = run_to_end(argv, options);
  // An older driver refuses a field it does not know, one at a time: asked again without it, the
  // reading stays unknown (null), as it would in the XML of that driver. Bounded by the fields.
  while (options.source == Source::csv && result.exit_code != 0 &&
         query.drop_refused(first_message_line(result))) {
    argv = nvidia_smi_command(options, query);
    result = run_to_end(argv, options);
  }
  std::vector<UnreadableGpu> unreadable = find_unreadable_gpus(result.err);
  for (UnreadableGpu &gpu : find_unreadable_gpus(result.out))
    unreadable.push_back(std::move(gpu)); // add_unreadable_gpus marks a bus id once
  Snapshot snapshot;
  if (result.exit_code == 0) {
    try {
      snapshot = read_nvidia_smi_output(result.out);
    } catch (const ParseError &error) {
      // Nothing on stdout is all a wrapper or a broken install leaves there; what it said on
      // stderr is the way on, and the only place it said anything.
      if (trim(result.out).empty() && !trim(result.err).empty())
        throw AgentError(exit_bad_output, argv[0] + " printed nothing on stdout; on stderr: " +
                                              first_message_line(result));
      throw bad_output("nvidia-smi output", error);
    }
  } else {
    if (unreadable.empty())
      throw exited_with(argv, result);
    try {
      snapshot = read_nvidia_smi_output(result.out);
    } catch (const ParseError &) {
      throw exited_with(argv, result);
    }
    if (std::none_of(snapshot.gpus.begin(), snapshot.gpus.end(),
                     [](const Gpu &gpu) { return !gpu.lost_reason; }))
      throw exited_with(argv, result);
  }
  add_unreadable_gpus(snapshot, unreadable);
  for (const Gpu &gpu : snapshot.gpus)
    if (gpu.lost_reason)
      log_line("GPU " + gpu.pci_bus_id.value_or(std::to_string(gpu.index)) +
               " cannot be read: " + *gpu.lost_reason);
  return snapshot;
}

// The CSV query has no processes: a second, cheap run asks for them. Its failure leaves them
// unknown (said on stderr), not the snapshot unprinted.
void attach_processes(Snapshot &snapshot, const OneSampleOptions &options) {
  std::vector<std::string> argv = nvidia_smi_argv(options.nvidia_smi);
  for (std::string &argument : compute_apps_arguments())
    argv.push_back(std::move(argument));
  try {
    attach_compute_apps(snapshot, read_compute_apps(run_nvidia_smi(argv, options)));
  } catch (const AgentError &error) {
    if (!nvidia_smi_failure(error))
      throw; // a signal stops the command, not only this run
    log_line(std::string("processes unknown: ") + error.what());
  } catch (const ParseError &error) {
    log_line(std::string("processes unknown: --query-compute-apps: ") + error.what());
  }
}

// A MIG device's UUID and profile are only in `nvidia-smi -L`: run once where a GPU has MIG
// devices. Its failure leaves them unknown (said on stderr), not the snapshot unprinted.
void attach_listing(Snapshot &snapshot, const OneSampleOptions &options) {
  if (std::none_of(snapshot.gpus.begin(), snapshot.gpus.end(),
                   [](const Gpu &gpu) { return gpu.mig_devices && !gpu.mig_devices->empty(); }))
    return;
  std::vector<std::string> argv = nvidia_smi_argv(options.nvidia_smi);
  argv.push_back("-L");
  try {
    attach_gpu_listing(snapshot, read_gpu_listing(run_nvidia_smi(argv, options)));
  } catch (const AgentError &error) {
    if (!nvidia_smi_failure(error))
      throw; // a signal stops the command, not only this run
    log_line(std::string("MIG devices' UUIDs and profiles unknown: ") + error.what());
  } catch (const ParseError &error) {
    log_line(std::string("MIG devices' UUIDs and profiles unknown: ") + error.what());
  }
}

// The kernel log read to its end once (bounded: a syslog of years is not read whole for one
// sample). Its problems are said on stderr; the snapshot is printed all the same.
void attach_kernel_log(Snapshot &snapshot, const std::string &path, bool say_problems) {
  constexpr int max_polls = 64; // 64 x XidLog::max_bytes_per_poll: 256 MiB
  XidLog log(path, [say_problems](const std::string &line) {
    if (say_problems)
      log_line(line);
  });
  for (int polls = 0; polls < max_polls && log.readable(); ++polls) {
    log.poll();
    if (log.caught_up())
      break;
  }
  if (log.readable() && !log.caught_up())
    log_line("kernel log " + path + ": read only its first " +
             std::to_string(max_polls * (XidLog::max_bytes_per_poll >> 20)) +
             " MiB: Xid counts are of that part");
  log.attach(snapshot);
}

} // namespace

Snapshot read_one_sample(const OneSampleOptions &options) {
  Snapshot snapshot;
  if (options.fixture) {
    std::string origin = *options.fixture == "-" ? "standard input" : *options.fixture;
    FileBytes bytes = read_capped(*options.fixture, max_input_bytes);
    try {
      snapshot = read_nvidia_smi_output_in_place(bytes.data.get(), bytes.size);
    } catch (const ParseError &error) {
      throw bad_output(origin, error);
    }
  } else {
    snapshot = read_gpu_query(options);
    if (options.source == Source::csv && options.processes)
      attach_processes(snapshot, options);
    attach_listing(snapshot, options);
    // One look: CPU shares need two, so they stay unknown here.
    if (options.host)
      HostObserver().observe(snapshot);
  }
  if (options.kernel_log)
    attach_kernel_log(snapshot, *options.kernel_log, options.say_kernel_log_problems);
  if (options.job_mapping_dir) {
    std::string problem = attach_job_mapping(snapshot, *options.job_mapping_dir);
    if (!problem.empty() && options.say_job_mapping_problems)
      log_line(problem);
  }
  attach_local_offset(snapshot);
  return snapshot;
}

} // namespace nvsmi
