#include "sampling/sampling_loop.hpp"

#include "core/exit_codes.hpp"
#include "nvidia_smi/stop_signals.hpp"

namespace nvsmi {

SamplingLoop::SamplingLoop(const SamplerOptions &options, Sampler::SampleHandler on_sample,
                           Sampler::LogHandler log, Sampler::FatalHandler on_fatal)
    : signals_(context_),
      sampler_(context_, options, std::move(on_sample),
               on_fatal ? std::move(on_fatal)
                        : Sampler::FatalHandler([this](int code) { stop(code); }),
               std::move(log)) {}

void SamplingLoop::catch_signals(SignalHandler on_signal) {
  on_signal_ = std::move(on_signal);
  if (catching_)
    return;
  catching_ = true;
  add_stop_signals(signals_);
  wait_for_signal();
}

int SamplingLoop::run(std::function<void()> started) {
  if (!catching_)
    catch_signals();
  sampler_.start();
  if (started)
    started();
  context_.run();
  return exit_code_;
}

void SamplingLoop::wait_for_signal() {
  signals_.async_wait([this](boost::system::error_code error, int signal) {
    if (error)
      return;
    if (on_signal_)
      on_signal_(signal);
    else
      stop(exit_code_for_stop(signal));
    // Still caught while the loop ends: a second Ctrl-C must not leave nvidia-smi behind.
    if (!ended_)
      wait_for_signal();
  });
}

void SamplingLoop::stop(int code, Ending ending) {
  if (stopping_)
    return;
  stopping_ = true;
  exit_code_ = code;
  stop_sampling([this, ending = std::move(ending)] {
    if (ending)
      ending([this] { end(); });
    else
      end();
  });
}

void SamplingLoop::stop_sampling(std::function<void()> done) {
  if (sampling_stopped_) {
    done();
    return;
  }
  sampling_stopped_ = true;
  sampler_.stop(std::move(done));
}

void SamplingLoop::end() {
  ended_ = true;
  signals_.cancel();
}

} // namespace nvsmi
