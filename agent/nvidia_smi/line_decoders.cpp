// dmon's and pmon's decoders: the one line decoder over each reader.
#include "nvidia_smi/line_decoder.hpp"

namespace nvsmi {

std::unique_ptr<StreamDecoder> pmon_decoder(std::function<void(std::vector<PmonRow>)> on_sample) {
  using Decoder = LineDecoder<PmonReader, &PmonReader::Outcome::sample>;
  return std::make_unique<Decoder>(Decoder::Naming{"pmon", "pmon line skipped: "},
                                   std::make_shared<PmonReader>(),
                                   Decoder::Handlers{std::move(on_sample)});
}

// dmon prints a row per GPU each interval and no mark of an interval's end: each row is handed on
// as it comes, and the sampler keeps the latest per GPU (nvsmi/dmon.hpp). Its reader's errors
// name dmon themselves.
std::unique_ptr<StreamDecoder> dmon_decoder(std::function<void(DmonRow)> on_row) {
  using Decoder = LineDecoder<DmonReader, &DmonReader::Outcome::row>;
  return std::make_unique<Decoder>(Decoder::Naming{"dmon", ""}, std::make_shared<DmonReader>(),
                                   Decoder::Handlers{std::move(on_row)});
}

} // namespace nvsmi
