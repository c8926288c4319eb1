// The run of a long-running command (watch, serve, top, run): one io_context, the stop signals
// caught, the Sampler started in it, and an end in which every run of nvidia-smi is reaped before
// the command's own last step (a flush, a report) and the context runs dry.
#pragma once

#include "sampling/sampler.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>

#include <functional>

namespace nvsmi {

class SamplingLoop {
public:
  // What a stop signal means to the command; by default, stop with exit_code_for_stop(signal).
  using SignalHandler = std::function<void(int signal)>;
  // Given the end of the loop, calls it once the command's own last step is done.
  using Ending = std::function<void(std::function<void()> end)>;

  // `on_fatal` (by default a stop with its code) is called when sampling cannot go on. Reads a
  // fixture at once (throws AgentError when it cannot be used).
  SamplingLoop(const SamplerOptions &options, Sampler::SampleHandler on_sample,
               Sampler::LogHandler log, Sampler::FatalHandler on_fatal = {});
  SamplingLoop(const SamplingLoop &) = delete;
  SamplingLoop &operator=(const SamplingLoop &) = delete;

  boost::asio::io_context &context() { return context_; }
  const Sampler &sampler() const { return sampler_; }
  Sampler &sampler() { return sampler_; }

  // Catches the stop signals from now on, each handed to `on_signal` while the loop lasts: called
  // before what must not be left half done by a signal (top's screen), else by run().
  void catch_signals(SignalHandler on_signal = {});
  // Starts the sampler (throws AgentError(exit_not_found) when nvidia-smi cannot be started),
  // calls `started`, and runs until the loop has ended. Returns the code stop() was given.
  int run(std::function<void()> started = {});

  // Once: stops sampling with `code`, then, when every run of nvidia-smi is reaped, `ending`.
  void stop(int code, Ending ending = {});
  bool stopping() const { return stopping_; }

  // Sampling alone stopped (`run`'s job goes on without samples); `done` once it is.
  void stop_sampling(std::function<void()> done);
  // No more signals waited for: the context runs dry once the command's own waits are over.
  void end();

private:
  void wait_for_signal();

  boost::asio::io_context context_;
  boost::asio::signal_set signals_;
  Sampler sampler_;
  SignalHandler on_signal_;
  bool catching_ = false, stopping_ = false, sampling_stopped_ = false, ended_ = false;
  int exit_code_ = 0;
};

} // namespace nvsmi
