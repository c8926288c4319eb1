// What a long-lived nvidia-smi's stdout is made into. The stream supervises the child (start,
// stall, exit, restart); a decoder turns the child's bytes into samples and says what in them
// could not be used.
#pragma once

#include "nvidia_smi/gpu_query.hpp"
#include "nvidia_smi/source.hpp"

#include "nvsmi/compute_apps.hpp"
#include "nvsmi/dmon.hpp"
#include "nvsmi/pmon.hpp"

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace nvsmi {

class StreamDecoder {
public:
  struct Events {
    std::function<void()> sample_done; // a complete sample was handed on
    // A piece that could not be used, said in `text`; `counted` when it was a broken sample
    // rather than nvidia-smi talking.
    std::function<void(const std::string &text, bool counted)> skipped;
    std::function<void(std::string_view)> message; // nvidia-smi's own words, for its exit line
  };

  virtual ~StreamDecoder() = default;
  virtual void feed(std::string_view bytes, const Events &events) = 0;
  // What the child printed on stderr, where nvidia-smi names the GPUs it cannot read.
  virtual void feed_stderr(std::string_view) {}
  // At the end of a run (`clean`: it exited with code 0 by itself): forgets what was pending, and
  // says whether a partial sample was dropped.
  virtual bool finish(const Events &events, bool clean) = 0;
};

// `nvidia-smi -q -x` documents or `--query-gpu` CSV rows, as Snapshots. A GPU nvidia-smi named on
// stderr as one it cannot read ("Unable to determine the device handle for GPU ...") within the
// last 3 intervals (at least 3 s) is put into each sample that does not hold it, lost.
std::unique_ptr<StreamDecoder>
snapshot_decoder(Source source, const GpuQuery &query, std::function<void(Snapshot)> on_sample,
                 std::chrono::milliseconds interval = std::chrono::milliseconds(1000));

// The compute processes from nvidia-smi's own loop of `--query-compute-apps`
// (compute_apps_loop_arguments), which marks no iteration's end and prints nothing for one with
// no process (nvsmi/compute_apps.hpp, ComputeAppsLoopReader). Its decoder feeds this; the sampler
// asks it, at each GPU sample, what the processes are as of then.
class ComputeAppsLoop {
public:
  using Clock = std::chrono::steady_clock;
  explicit ComputeAppsLoop(std::chrono::milliseconds interval) : interval_(interval) {}

  // Reads the loop's output into `loop`, which it keeps alive: the stream's state may outlive
  // whoever made it by a pending handler.
  static std::unique_ptr<StreamDecoder> decoder(std::shared_ptr<ComputeAppsLoop> loop);

  // The processes as of `now`: the last whole iteration; the one whose rows came last once
  // nvidia-smi has been quiet for a tenth of the interval (it writes an iteration at once); none
  // once the run printed its header alone and was then quiet for that long, and at least 500 ms
  // (its first iteration, written at once, listed no process); and none once it has printed no
  // row for two intervals and a second (an iteration with no process prints nothing). nullopt while
  // no run has printed its header, and after a run ended, until the next one's header: then the
  // processes are unknown.
  std::optional<std::vector<ComputeApp>> settle(Clock::time_point now);

private:
  std::chrono::milliseconds interval_;
  // Shared with the decoder, which feeds it; settle flushes it.
  std::shared_ptr<ComputeAppsLoopReader> reader_ = std::make_shared<ComputeAppsLoopReader>();
  bool running_ = false; // a run printed its header and has not ended
  Clock::time_point last_output_{};
  std::optional<std::vector<ComputeApp>> latest_;
};

// `nvidia-smi pmon`'s scrolling table, one sample per interval.
std::unique_ptr<StreamDecoder> pmon_decoder(std::function<void(std::vector<PmonRow>)> on_sample);
// `nvidia-smi dmon`'s scrolling table: each GPU's row handed on as it comes.
std::unique_ptr<StreamDecoder> dmon_decoder(std::function<void(DmonRow)> on_row);

} // namespace nvsmi
