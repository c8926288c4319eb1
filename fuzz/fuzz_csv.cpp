// The CSV reader on any bytes, whole (`snapshot`) and line by line as `watch` reads a stream.
#include "check_output.hpp"

#include "nvsmi/csv_reader.hpp"
#include "nvsmi/quantity.hpp"
#include "nvsmi/stream.hpp"

#include <cstddef>
#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  std::string_view input(reinterpret_cast<const char *>(data), size);
  try {
    fuzz::check_formats(nvsmi::read_csv(input));
  } catch (const nvsmi::ParseError &) {
  }

  // Small caps so that the over-long line path is reached too.
  nvsmi::LineSplitter splitter(256);
  nvsmi::StreamPieces pieces;
  splitter.feed(input.substr(0, size / 2), pieces);
  splitter.feed(input.substr(size / 2), pieces);
  nvsmi::CsvSampleAssembler assembler(nvsmi::CsvLayout::from_fields(nvsmi::query_fields()));
  for (const std::string &line : pieces.pieces) {
    try {
      nvsmi::CsvSampleAssembler::Outcome outcome = assembler.add_line(line);
      if (outcome.sample)
        fuzz::check_formats(*outcome.sample);
    } catch (const nvsmi::ParseError &) {
    }
  }
  return 0;
}
