#include "nvidia_smi/stream_decoder.hpp"

#include "nvsmi/stream.hpp"

namespace nvsmi {
namespace {

constexpr std::size_t max_line_bytes = 64u << 10;

// dmon prints a row per GPU each interval and no mark of an interval's end: each row is handed on
// as it comes, and the sampler keeps the latest per GPU (nvsmi/dmon.hpp).
class DmonDecoder final : public StreamDecoder {
public:
  explicit DmonDecoder(std::function<void(DmonRow)> on_row)
      : on_row_(std::move(on_row)), lines_(max_line_bytes) {}

  void feed(std::string_view bytes, const Events &events) override {
    StreamPieces pieces;
    lines_.feed(bytes, pieces);
    for (const std::string &error : pieces.errors)
      events.skipped("dmon line skipped: " + error, true);
    for (const std::string &line : pieces.pieces) {
      DmonReader::Outcome outcome = reader_.add_line(line);
      if (outcome.error) {
        events.message(line);
        events.skipped(*outcome.error, true);
      }
      if (outcome.row) {
        on_row_(std::move(*outcome.row));
        events.sample_done();
      }
    }
  }

  bool finish(const Events &, bool) override {
    lines_.reset();
    reader_ = DmonReader();
    return false;
  }

private:
  std::function<void(DmonRow)> on_row_;
  LineSplitter lines_;
  DmonReader reader_;
};

} // namespace

std::unique_ptr<StreamDecoder> dmon_decoder(std::function<void(DmonRow)> on_row) {
  return std::make_unique<DmonDecoder>(std::move(on_row));
}

} // namespace nvsmi
