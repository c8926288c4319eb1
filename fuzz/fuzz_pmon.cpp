// The pmon reader on any bytes, whole and line by line as a stream reads it, each sample attached
// to a sample of GPUs and formatted.
#include "check_output.hpp"

#include "nvsmi/pmon.hpp"
#include "nvsmi/stream.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace {

[[noreturn]] void broken(const char *what) {
  std::fprintf(stderr, "broken pmon reading: %s\n", what);
  std::abort();
}

void check_sample(const std::vector<nvsmi::PmonRow> &sample) {
  if (sample.empty() || sample.size() > 4096)
    broken("a sample is empty or past its bound");
  for (const nvsmi::PmonRow &row : sample)
    for (const nvsmi::Reading &value :
         {row.gpu_index, row.pid, row.sm_percent, row.memory_percent, row.encoder_percent,
          row.decoder_percent, row.jpeg_percent, row.ofa_percent, row.fb_mib})
      if (value && *value < 0)
        broken("a negative value was accepted");
  // GPU 0 with a list (as compute-apps would leave it), GPU 1 without.
  nvsmi::Snapshot snapshot;
  snapshot.gpus.resize(2);
  snapshot.gpus[0].processes.emplace();
  snapshot.gpus[1].index = 1;
  nvsmi::attach_pmon(snapshot, sample);
  fuzz::check_formats(snapshot);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  std::string_view input(reinterpret_cast<const char *>(data), size);
  for (const std::vector<nvsmi::PmonRow> &sample : nvsmi::read_pmon(input))
    check_sample(sample);

  // Small caps so that the over-long line path is reached too.
  nvsmi::LineSplitter splitter(256);
  nvsmi::StreamPieces pieces;
  splitter.feed(input.substr(0, size / 2), pieces);
  splitter.feed(input.substr(size / 2), pieces);
  nvsmi::PmonReader reader;
  for (const std::string &line : pieces.pieces) {
    nvsmi::PmonReader::Outcome outcome = reader.add_line(line);
    if (outcome.sample)
      check_sample(*outcome.sample);
  }
  if (auto last = reader.finish())
    check_sample(*last);
  return 0;
}
