// The dmon reader on any bytes, whole and line by line as a stream reads it: it refuses what it
// does not know, and what it reads is never negative and always names its GPU.
#include "nvsmi/dmon.hpp"
#include "nvsmi/quantity.hpp"
#include "nvsmi/stream.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace {

[[noreturn]] void broken(const char *what) {
  std::fprintf(stderr, "broken dmon reading: %s\n", what);
  std::abort();
}

void check_row(const nvsmi::DmonRow &row) {
  if (!row.gpu_index)
    broken("a row without its GPU");
  for (const nvsmi::Reading &value :
       {row.gpu_index, row.sm_active_percent, row.sm_occupancy_percent, row.tensor_active_percent,
        row.dram_active_percent, row.fp16_active_percent, row.fp32_active_percent,
        row.fp64_active_percent, row.pcie_rx_bytes_per_second, row.pcie_tx_bytes_per_second,
        row.nvlink_rx_bytes_per_second, row.nvlink_tx_bytes_per_second})
    if (value && *value < 0)
      broken("a negative value was accepted");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  std::string_view input(reinterpret_cast<const char *>(data), size);
  try {
    for (const nvsmi::DmonRow &row : nvsmi::read_dmon(input))
      check_row(row);
  } catch (const nvsmi::ParseError &) {
  }

  // Small caps so that the over-long line path is reached too.
  nvsmi::LineSplitter splitter(256);
  nvsmi::StreamPieces pieces;
  splitter.feed(input.substr(0, size / 2), pieces);
  splitter.feed(input.substr(size / 2), pieces);
  nvsmi::DmonReader reader;
  for (const std::string &line : pieces.pieces) {
    nvsmi::DmonReader::Outcome outcome = reader.add_line(line);
    if (outcome.row)
      check_row(*outcome.row);
    if (outcome.row && outcome.error)
      broken("a row and an error from one line");
  }
  return 0;
}
