// One long-lived nvidia-smi running its own loop (-lms, or pmon's), read asynchronously by a
// decoder into samples. When it exits it is restarted with backoff; when it stalls it is killed,
// with anything it started.
#pragma once

#include "core/sampling_counters.hpp"
#include "nvidia_smi/gpu_query.hpp"
#include "nvidia_smi/run_cost.hpp"
#include "nvidia_smi/source.hpp"
#include "nvidia_smi/stream_decoder.hpp"

#include <boost/asio/io_context.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <sys/types.h>
#include <vector>

namespace nvsmi {

struct StreamSettings {
  std::vector<std::string> command;   // nvidia-smi and its own arguments, without the query
  std::vector<std::string> arguments; // the query and its loop (loop_arguments, pmon's)
  std::string label = "nvidia-smi";   // what log lines call it
  // Whether what a run printed before it ended without a sample says the query itself was
  // refused (an unknown --fields name): running it again cannot help.
  std::function<bool(const std::string &message)> refused;
  std::chrono::milliseconds interval{1000};
  std::chrono::milliseconds stall_timeout{10000};
  // For a loop that prints nothing when it has nothing to say (compute-apps with no process):
  // silence is an answer there, not a stall, so it is never killed for it.
  bool silence_is_an_answer = false;
  std::chrono::milliseconds first_backoff{1000}, max_backoff{30000};
  std::chrono::milliseconds good_run{60000};  // a run this long with samples resets the backoff
  std::chrono::milliseconds term_grace{1000}; // SIGTERM to SIGKILL
  // Whether a first start that fails (nvidia-smi missing, not executable) ends the agent: for the
  // GPU query, a configuration error not worth a retry. A secondary stream (processes) retries it
  // like any later failure: nvidia-smi can vanish between two starts (a driver upgrade), and
  // losing that race must not take the GPU samples down with it.
  bool first_start_fatal = true;
  // The child's stdin a pipe the stream holds open for the run (else /dev/null): for a command
  // that ends when its stdin does, as `fleet --ssh`'s remote wrapper ends nvidia-smi once its
  // session is gone (fleet/ssh_fleet.cpp).
  bool hold_stdin = false;
  // Where each run's start and CPU are counted (serve's nvsmi_agent_cpu_seconds_total); none:
  // not counted.
  std::shared_ptr<RunCost> cost;
};

// What a log message is. Problems are what serve shows as the last one while its data is stale
// (the cause); a notice is what the agent does about them ("restarting nvidia-smi in 2 s").
enum class LogKind {
  problem,    // the run failed: it exited, stalled, could not start
  bad_output, // a line or sample that could not be used, or a message nvidia-smi printed: one
              // per line of output, so it can come by the thousand
  notice,
};

// A stream's message on stderr: bad output can come once per line of it and is rate-limited;
// problems and notices are few and always written.
void log_stream_message(LogKind kind, const std::string &message);

// The arguments that make nvidia-smi loop on its own.
std::vector<std::string> loop_arguments(Source source, std::chrono::milliseconds interval,
                                        const GpuQuery &query = GpuQuery());

class NvidiaSmiStream {
public:
  using LogHandler = std::function<void(LogKind, const std::string &)>;
  using RejectHandler = std::function<void(const std::string &)>;

  // `on_rejected` is called, instead of a restart, when settings.refused says the query was.
  NvidiaSmiStream(boost::asio::io_context &context, StreamSettings settings,
                  std::unique_ptr<StreamDecoder> decoder, LogHandler log,
                  RejectHandler on_rejected);
  ~NvidiaSmiStream();

  // Starts nvidia-smi. Throws AgentError(exit_not_found) when it cannot be started at all (missing,
  // not executable) and settings.first_start_fatal: a configuration error, not worth a retry.
  // Otherwise, and once it has started, a failure to start it is logged and retried with backoff
  // like any other failure.
  void start();
  // After `on_rejected`: runs nvidia-smi again at once with other arguments, read by another
  // decoder (a query without the field the driver refused). Nothing once stop() was called.
  void restart_with(std::vector<std::string> arguments, std::unique_ptr<StreamDecoder> decoder);
  // Stops the child (SIGTERM, then SIGKILL) and calls `done` once it is reaped.
  void stop(std::function<void()> done);
  const SamplingCounters &counters() const;
  // The nvidia-smi it started and has yet to reap, if any. Whoever reaps children it adopted (a
  // subreaper) must leave this one alone: reaped elsewhere, its exit would be lost to the stream.
  std::optional<pid_t> child_pid() const;

private:
  struct State;
  std::shared_ptr<State> state_;
};

} // namespace nvsmi
