#include "nvidia_smi/line_decoder.hpp"

#include <algorithm>

namespace nvsmi {

std::unique_ptr<StreamDecoder> ComputeAppsLoop::decoder(std::shared_ptr<ComputeAppsLoop> loop) {
  using Decoder = LineDecoder<ComputeAppsLoopReader, &ComputeAppsLoopReader::Outcome::sample>;
  Decoder::Handlers handlers{
      [loop](ComputeAppsLoopReader::Sample sample) { loop->latest_ = std::move(sample.apps); },
      // Any line, the header included, says the run is alive and when it last spoke.
      [loop] {
        loop->running_ = true;
        loop->last_output_ = Clock::now();
      },
      // The run ended: what it said last is no longer known to hold.
      [loop] {
        loop->running_ = false;
        loop->latest_.reset();
      }};
  return std::make_unique<Decoder>(Decoder::Naming{"compute-apps", "compute-apps line skipped: "},
                                   loop->reader_, std::move(handlers));
}

std::optional<std::vector<ComputeApp>> ComputeAppsLoop::settle(Clock::time_point now) {
  if (!running_)
    return std::nullopt;
  Clock::duration quiet = now - last_output_;
  if (quiet >= interval_ / 10)
    if (std::optional<ComputeAppsLoopReader::Sample> last = reader_->flush())
      latest_ = std::move(last->apps);
  // The header alone, then quiet: the first iteration, written at once with it, listed no
  // process. Judged after half a second at least, whatever the interval, far more than nvidia-smi
  // takes to list them: a GPU wrongly said to have none would be free.
  if (!latest_ && reader_->header_alone() &&
      quiet >= std::max<Clock::duration>(interval_ / 10, std::chrono::milliseconds(500)))
    latest_.emplace();
  if (quiet >= 2 * interval_ + std::chrono::seconds(1))
    latest_.emplace(); // no row for two iterations: none is running
  return latest_;
}

} // namespace nvsmi
