#include "nvidia_smi/stream_decoder.hpp"

#include "nvsmi/quantity.hpp"
#include "nvsmi/stream.hpp"

namespace nvsmi {

namespace {
// The reader refuses longer lines itself; this keeps the splitter from holding more.
constexpr std::size_t max_line_bytes = 64u << 10;
} // namespace

class ComputeAppsLoopDecoder final : public StreamDecoder {
public:
  explicit ComputeAppsLoopDecoder(std::shared_ptr<ComputeAppsLoop> loop)
      : loop_(std::move(loop)), lines_(max_line_bytes) {}

  void feed(std::string_view bytes, const Events &events) override {
    StreamPieces pieces;
    lines_.feed(bytes, pieces);
    for (const std::string &error : pieces.errors)
      events.skipped("compute-apps line skipped: " + error, true);
    for (const std::string &line : pieces.pieces) {
      // Any line, the header included, says the run is alive and when it last spoke.
      loop_->running_ = true;
      loop_->last_output_ = ComputeAppsLoop::Clock::now();
      ComputeAppsLoopReader::Outcome outcome = loop_->reader_.add_line(line);
      if (outcome.error) {
        events.message(line);
        events.skipped("compute-apps line skipped: " + *outcome.error, true);
      }
      if (outcome.sample) {
        loop_->latest_ = std::move(outcome.sample->apps);
        events.sample_done();
      }
    }
  }

  // The run ended: what it said last is no longer known to hold.
  bool finish(const Events &, bool) override {
    lines_.reset();
    loop_->reader_ = ComputeAppsLoopReader();
    loop_->running_ = false;
    loop_->latest_.reset();
    return false;
  }

private:
  std::shared_ptr<ComputeAppsLoop> loop_;
  LineSplitter lines_;
};

std::unique_ptr<StreamDecoder> ComputeAppsLoop::decoder(std::shared_ptr<ComputeAppsLoop> loop) {
  return std::make_unique<ComputeAppsLoopDecoder>(std::move(loop));
}

std::optional<std::vector<ComputeApp>> ComputeAppsLoop::settle(Clock::time_point now) {
  if (!running_)
    return std::nullopt;
  Clock::duration quiet = now - last_output_;
  if (quiet >= interval_ / 10)
    if (std::optional<ComputeAppsLoopReader::Sample> last = reader_.flush())
      latest_ = std::move(last->apps);
  if (quiet >= 2 * interval_ + std::chrono::seconds(1))
    latest_.emplace(); // no row for two iterations: none is running
  return latest_;
}

} // namespace nvsmi
