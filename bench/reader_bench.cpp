// Reader throughput on the files bench/run writes: XML of 1, 8 and 64 GPUs and an 8-GPU CSV
// sample, read alone and read then formatted in each output format; and each XML document as
// `watch --source xml` takes it from nvidia-smi's pipe (stream/).
// Usage: reader_bench DATA_DIR [--benchmark_... options]
#include "files/file_io.hpp"
#include "formats/formats.hpp"
#include "nvidia_smi/source.hpp"

#include "nvsmi/csv_reader.hpp"
#include "nvsmi/nvidia_smi_output.hpp"
#include "nvsmi/stream.hpp"
#include "nvsmi/xml_reader.hpp"

#include <benchmark/benchmark.h>

#include <iostream>
#include <sstream>
#include <string>
#include <vector>

namespace {

std::string read_file(const std::string &path) {
  return std::string(nvsmi::read_capped(path, nvsmi::max_input_bytes).view());
}

struct Input {
  std::string name; // "xml-8gpu"
  std::string bytes;
  bool xml;
  std::int64_t gpus;
};

nvsmi::Snapshot read(const Input &input) {
  return input.xml ? nvsmi::read_xml(input.bytes) : nvsmi::read_csv(input.bytes);
}

void count(benchmark::State &state, const Input &input) {
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(input.bytes.size()));
  state.SetItemsProcessed(state.iterations() * input.gpus);
}

void read_only(benchmark::State &state, const Input *input) {
  for (auto _ : state)
    benchmark::DoNotOptimize(read(*input));
  count(state, *input);
}

void read_and_format(benchmark::State &state, const Input *input, nvsmi::Format format) {
  for (auto _ : state) {
    std::string text = nvsmi::format_snapshot(read(*input), format);
    benchmark::DoNotOptimize(text);
  }
  count(state, *input);
}

// `watch --source csv`: the header is known once, then each line is one GPU's row.
void csv_stream_rows(benchmark::State &state, const Input *input) {
  std::vector<std::string> lines;
  std::istringstream stream(input->bytes);
  for (std::string line; std::getline(stream, line);)
    lines.push_back(line);
  nvsmi::CsvSampleAssembler assembler(nvsmi::CsvLayout::from_fields(nvsmi::query_fields()));
  for (auto _ : state)
    for (const std::string &line : lines)
      benchmark::DoNotOptimize(assembler.add_line(line));
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(input->bytes.size()));
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(lines.size()));
}

// `watch --source xml`: the document fed to the splitter in the pipe's reads (64 KiB), cut from
// the stream, and read as the stream's decoder reads it, in the piece it was cut into.
void xml_stream(benchmark::State &state, const Input *input) {
  constexpr std::size_t pipe_read = 64u << 10;
  nvsmi::XmlDocumentSplitter splitter(32u << 20);
  std::string_view bytes = input->bytes;
  for (auto _ : state) {
    nvsmi::StreamPieces pieces;
    for (std::size_t at = 0; at < bytes.size(); at += pipe_read)
      splitter.feed(bytes.substr(at, pipe_read), pieces);
    for (std::string &piece : pieces.pieces)
      benchmark::DoNotOptimize(nvsmi::read_xml_output_in_place(piece));
  }
  count(state, *input);
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 2 || argv[1][0] == '-') {
    std::cerr << "usage: reader_bench DATA_DIR [--benchmark_... options]\n";
    return 2;
  }
  std::string dir = argv[1];
  static std::vector<Input> inputs;
  for (int gpus : {1, 8, 64}) {
    std::string name = "xml-" + std::to_string(gpus) + "gpu";
    inputs.push_back({name, read_file(dir + "/" + name + ".xml"), true, gpus});
  }
  inputs.push_back({"csv-8gpu", read_file(dir + "/csv-8gpu.csv"), false, 8});
  static Input stream{"csv-8gpu-stream", read_file(dir + "/csv-8gpu-noheader.csv"), false, 8};

  const std::pair<const char *, nvsmi::Format> formats[] = {{"legacy", nvsmi::Format::legacy},
                                                            {"json", nvsmi::Format::json},
                                                            {"csv", nvsmi::Format::csv}};
  for (const Input &input : inputs) {
    benchmark::RegisterBenchmark(("read/" + input.name).c_str(), read_only, &input);
    for (auto [format_name, format] : formats)
      benchmark::RegisterBenchmark(("read+" + std::string(format_name) + "/" + input.name).c_str(),
                                   read_and_format, &input, format);
  }
  for (const Input &input : inputs)
    if (input.xml)
      benchmark::RegisterBenchmark(("stream/" + input.name).c_str(), xml_stream, &input);
  benchmark::RegisterBenchmark("rows/csv-8gpu-stream", csv_stream_rows, &stream);

  argv[1] = argv[0];
  --argc;
  ++argv;
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
