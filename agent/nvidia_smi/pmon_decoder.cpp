#include "nvidia_smi/stream_decoder.hpp"

#include "nvsmi/stream.hpp"

namespace nvsmi {
namespace {

constexpr std::size_t max_line_bytes = 64u << 10;

class PmonDecoder final : public StreamDecoder {
public:
  explicit PmonDecoder(std::function<void(std::vector<PmonRow>)> on_sample)
      : on_sample_(std::move(on_sample)), lines_(max_line_bytes) {}

  void feed(std::string_view bytes, const Events &events) override {
    StreamPieces pieces;
    lines_.feed(bytes, pieces);
    for (const std::string &error : pieces.errors)
      events.skipped("pmon line skipped: " + error, true);
    for (const std::string &line : pieces.pieces) {
      PmonReader::Outcome outcome = reader_.add_line(line);
      if (outcome.error) {
        events.message(line);
        events.skipped("pmon line skipped: " + *outcome.error, true);
      }
      if (outcome.sample) {
        on_sample_(std::move(*outcome.sample));
        events.sample_done();
      }
    }
  }

  // pmon's last sample of a run is never known complete: it is dropped with the run.
  bool finish(const Events &, bool) override {
    lines_.reset();
    reader_ = PmonReader();
    return false;
  }

private:
  std::function<void(std::vector<PmonRow>)> on_sample_;
  LineSplitter lines_;
  PmonReader reader_;
};

} // namespace

std::unique_ptr<StreamDecoder> pmon_decoder(std::function<void(std::vector<PmonRow>)> on_sample) {
  return std::make_unique<PmonDecoder>(std::move(on_sample));
}

} // namespace nvsmi
