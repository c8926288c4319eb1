// The drain hook (--on-unhealthy COMMAND): a site's program run once for each fault of a GPU that
// a sample shows newly (nvsmi/gpu_state.hpp's gpu_faults: lost, a failing health reading, an Xid
// that needs a reset), told the GPU, the reason and the action in its environment. It runs beside
// sampling, never in its way: under a keeper (sampling/hook_keeper.hpp) that ends it and
// everything it started, `setsid` or not, when it ends or at its deadline, with none of the
// agent's descriptors; at most a few run at once, and how each ended, and what was killed, is
// logged.
#pragma once

#include "nvidia_smi/nvidia_smi_stream.hpp"

#include "nvsmi/gpu_state.hpp"

#include <boost/asio/io_context.hpp>

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace nvsmi {

struct UnhealthyHookOptions {
  std::vector<std::string> command; // split_command's words: no shell runs it
  std::chrono::milliseconds timeout{30000};
  std::size_t max_running = 4;
};

// What the hook's environment says of one fault, besides the agent's own environment: the values
// printable (core/screen_text.hpp), as NVSMI_GPU_INDEX, NVSMI_GPU_UUID, NVSMI_GPU_PCI_BUS_ID,
// NVSMI_GPU_NAME, NVSMI_REASON, NVSMI_ACTION, NVSMI_FAULT, NVSMI_HOSTNAME ("" where not known).
std::vector<std::string> unhealthy_hook_environment(const Snapshot &snapshot, std::size_t position,
                                                    const GpuFault &fault);

class UnhealthyHook {
public:
  UnhealthyHook(boost::asio::io_context &context, UnhealthyHookOptions options,
                NvidiaSmiStream::LogHandler log);
  ~UnhealthyHook();
  UnhealthyHook(const UnhealthyHook &) = delete;
  UnhealthyHook &operator=(const UnhealthyHook &) = delete;

  // Runs the hook for each fault of this sample that the previous samples did not show. A fault
  // that clears (a sample reads the GPU without it) and comes back later is new again. A GPU that
  // is lost or missing from this sample keeps its other faults: unknown is not cleared. A fault
  // found while max_running hooks run is tried again with the next sample.
  void observe(const Snapshot &snapshot);
  // No more runs; `done` once every running one has ended (each by its deadline at the latest).
  void stop(std::function<void()> done);
  std::vector<pid_t> children() const;

private:
  struct Run;
  void start(const Snapshot &snapshot, std::size_t position, const GpuFault &fault);
  void read_report(const std::shared_ptr<Run> &run);
  void ended(const std::shared_ptr<Run> &run);

  boost::asio::io_context &context_;
  UnhealthyHookOptions options_;
  NvidiaSmiStream::LogHandler log_;
  std::set<std::string> fired_;    // "GPU identity\nfault key", for faults still present
  std::set<std::string> deferred_; // said once while waiting for a free slot
  std::vector<std::shared_ptr<Run>> running_;
  std::function<void()> on_stopped_;
  bool stopped_ = false;
};

} // namespace nvsmi
