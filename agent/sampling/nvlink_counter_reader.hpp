// --nvlink-counters SECONDS: NVLink receive and transmit rates for GPUs whose dmon gives none
// (before Hopper: V100, A100), from two readings of `nvidia-smi nvlink -gt d`'s cumulative
// counters (nvsmi/nvlink_counters.hpp). nvidia-smi has no loop of its own for them, so each
// reading is one run of it: opt-in, at most one per interval, never two at once, and only while
// some GPU has an active link (`nvlink -s`, read once at start) and no NVLink figure from dmon.
// Each run is bounded (bounded_command: deadline, output cap, process group killed and reaped)
// and runs on a thread of its own, so that neither the event loop nor any sample waits for it.
#pragma once

#include "nvidia_smi/nvidia_smi_stream.hpp"

#include "nvsmi/nvlink_counters.hpp"
#include "nvsmi/nvlink_status.hpp"

#include <boost/asio/io_context.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace nvsmi {

class NvlinkCounterReader {
public:
  // `command` is nvidia-smi's (source.hpp); `capacity` what `nvlink -s` said at start. Where no GPU
  // has an active link it says so once through `log` and never runs anything.
  NvlinkCounterReader(boost::asio::io_context &context, std::vector<std::string> command,
                      std::chrono::milliseconds interval,
                      const std::vector<NvlinkCapacity> &capacity, NvidiaSmiStream::LogHandler log,
                      std::shared_ptr<RunCost> cost = nullptr);
  ~NvlinkCounterReader();
  NvlinkCounterReader(const NvlinkCounterReader &) = delete;
  NvlinkCounterReader &operator=(const NvlinkCounterReader &) = delete;

  // Called with every live sample once dmon's figures and the capacity are attached: fills the
  // GPUs that want them with the latest rates (carried until the next reading), and starts a
  // reading when one is due and some GPU wants it.
  void observe(Snapshot &snapshot);
  // No more readings; `done` once a reading in flight has ended (by its deadline at the latest).
  void stop(std::function<void()> done);

private:
  struct CounterReading;
  void start_reading();
  // On the worker thread: one bounded run, its reading posted back to the event loop.
  void run_reading(const std::weak_ptr<bool> &alive, const std::vector<std::string> &argv);
  void reading_done(const CounterReading &reading);
  void forget(); // the rates and the earlier reading: the next one starts over

  boost::asio::io_context &context_;
  std::vector<std::string> argv_;
  std::chrono::milliseconds interval_;
  NvidiaSmiStream::LogHandler log_;
  std::shared_ptr<RunCost> cost_; // each run's start and CPU
  bool any_active_link_ = false;
  bool stopped_ = false;
  bool covered_said_ = false;
  std::optional<std::chrono::steady_clock::time_point> first_sample_, last_start_;
  std::thread worker_;
  bool in_flight_ = false;
  std::function<void()> on_stopped_;
  // Whether this object still exists, for what the worker posts back.
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
  std::vector<NvlinkGpuCounters> previous_;
  std::chrono::steady_clock::time_point previous_at_;
  std::vector<NvlinkRates> rates_;
};

} // namespace nvsmi
