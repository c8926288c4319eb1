#include "nvidia_smi/stream_decoder.hpp"

#include "nvsmi/quantity.hpp"

namespace nvsmi {
namespace {

// Far more than any real list (a row is under 200 bytes): past it the answer is not one.
constexpr std::size_t max_answer_bytes = 8u << 20;

class ComputeAppsDecoder final : public StreamDecoder {
public:
  explicit ComputeAppsDecoder(std::function<void(std::vector<ComputeApp>)> on_sample)
      : on_sample_(std::move(on_sample)) {}

  void feed(std::string_view bytes, const Events &) override {
    if (answer_.size() + bytes.size() > max_answer_bytes) {
      overflowed_ = true;
      return;
    }
    answer_.append(bytes);
  }

  bool finish(const Events &events, bool clean) override {
    std::string answer = std::move(answer_);
    answer_.clear();
    bool overflowed = overflowed_;
    overflowed_ = false;
    if (overflowed) {
      events.skipped("compute-apps answer skipped: larger than " +
                         std::to_string(max_answer_bytes >> 20) + " MiB",
                     true);
      return false;
    }
    // A run that failed or was cut short said why, not which processes there are.
    if (!clean) {
      events.message(answer);
      return false;
    }
    try {
      on_sample_(read_compute_apps(answer));
      events.sample_done();
    } catch (const ParseError &error) {
      events.message(answer);
      events.skipped(std::string("compute-apps answer skipped: ") + error.what(), true);
    }
    return false;
  }

private:
  std::function<void(std::vector<ComputeApp>)> on_sample_;
  std::string answer_;
  bool overflowed_ = false;
};

} // namespace

std::unique_ptr<StreamDecoder>
compute_apps_decoder(std::function<void(std::vector<ComputeApp>)> on_sample) {
  return std::make_unique<ComputeAppsDecoder>(std::move(on_sample));
}

} // namespace nvsmi
