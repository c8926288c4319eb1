// Where long-running commands (watch, serve) get their samples: one long-lived nvidia-smi, or a
// recording replayed at the interval.
#pragma once

#include "nvidia_smi/nvidia_smi_stream.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace nvsmi {

struct SamplerOptions {
  double interval_seconds = 1;
  SourceKind source = SourceKind::csv;
  std::optional<std::string> nvidia_smi;
  std::optional<std::string> fixture; // replayed at the interval instead of running nvidia-smi
  std::optional<double> stall_timeout_seconds; // default max(3 x interval, 10 s)
  std::vector<std::string> fields; // --fields: csv source only, after the standard query
};

class Sampler {
public:
  using SampleHandler = std::function<void(Snapshot)>;
  using FatalHandler = std::function<void(int exit_code)>;
  using LogHandler = NvidiaSmiStream::LogHandler;

  // Reads a fixture at once (throws AgentError when it cannot be used). `on_fatal` is called
  // when sampling cannot go on (nvidia-smi refuses the query).
  Sampler(boost::asio::io_context &context, const SamplerOptions &options, SampleHandler on_sample,
          FatalHandler on_fatal, LogHandler log);
  ~Sampler();

  // Throws AgentError(exit_not_found) when nvidia-smi cannot be started at all.
  void start();
  // Stops nvidia-smi (or the replay) and calls `done` once it is reaped.
  void stop(std::function<void()> done);
  std::chrono::milliseconds interval() const;
  // Zero while a recording is replayed.
  SamplingCounters counters() const;

private:
  void replay_next();

  SamplerOptions options_;
  boost::asio::io_context &context_;
  SampleHandler on_sample_;
  FatalHandler on_fatal_;
  LogHandler log_;
  boost::asio::steady_timer replay_;
  std::vector<Snapshot> fixture_;
  std::size_t replayed_ = 0;
  bool stopped_ = false;
  std::unique_ptr<NvidiaSmiStream> stream_;
};

} // namespace nvsmi
