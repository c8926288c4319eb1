#include "nvidia_smi/sampler.hpp"

#include "core/exit_codes.hpp"
#include "files/file_io.hpp"
#include "nvidia_smi/source.hpp"

#include "nvsmi/csv_reader.hpp"
#include "nvsmi/quantity.hpp"
#include "nvsmi/stream.hpp"
#include "nvsmi/xml_reader.hpp"

#include <cmath>

namespace nvsmi {
namespace {

using std::chrono::milliseconds;

milliseconds to_ms(double seconds) {
  return milliseconds(std::max<long long>(1, std::llround(seconds * 1000)));
}

// Every whole sample in a recording: one document or CSV sample, or several recorded from a loop.
std::vector<Snapshot> fixture_samples(const std::string &path,
                                      const std::vector<std::string> &extra_fields) {
  std::string origin = path == "-" ? "standard input" : path;
  std::string content = read_capped(path, max_input_bytes);
  std::string_view text = trim(content);
  std::vector<Snapshot> samples;
  StreamPieces pieces;
  try {
    if (!text.empty() && text.front() == '<') {
      XmlDocumentSplitter(max_input_bytes).feed(text, pieces);
      for (const std::string &document : pieces.pieces)
        samples.push_back(read_xml(document));
    } else {
      LineSplitter(max_input_bytes).feed(std::string(text) + "\n", pieces);
      CsvSampleAssembler assembler(CsvLayout::from_fields(query_fields(), extra_fields));
      for (const std::string &line : pieces.pieces)
        if (auto sample = assembler.add_line(line).sample)
          samples.push_back(std::move(*sample));
    }
  } catch (const ParseError &error) {
    throw AgentError(exit_bad_output, origin + ": " + error.what());
  }
  // A recording without loop structure (no `count` column, say) is one sample.
  if (samples.empty())
    samples.push_back(parse_output(content, origin));
  return samples;
}

} // namespace

Sampler::Sampler(boost::asio::io_context &context, const SamplerOptions &options,
                 SampleHandler on_sample, FatalHandler on_fatal, LogHandler log)
    : options_(options), context_(context), on_sample_(std::move(on_sample)),
      on_fatal_(std::move(on_fatal)), log_(std::move(log)), replay_(context) {
  if (options.fixture)
    fixture_ = fixture_samples(*options.fixture, options.fields);
}

Sampler::~Sampler() = default;

milliseconds Sampler::interval() const { return to_ms(options_.interval_seconds); }

void Sampler::start() {
  if (!fixture_.empty()) {
    replay_next();
    return;
  }
  StreamSettings settings;
  settings.command = nvidia_smi_argv(options_.nvidia_smi);
  settings.source = options_.source;
  settings.extra_fields = options_.fields;
  settings.interval = interval();
  settings.stall_timeout = options_.stall_timeout_seconds
                               ? to_ms(*options_.stall_timeout_seconds)
                               : std::max(settings.interval * 3, milliseconds(10000));
  stream_ = std::make_unique<NvidiaSmiStream>(
      context_, settings, [this](Snapshot s) { on_sample_(std::move(s)); }, log_,
      [this](const std::string &message) {
        log_(LogKind::problem, message);
        on_fatal_(exit_smi_failed);
      });
  stream_->start();
}

void Sampler::replay_next() {
  on_sample_(fixture_[replayed_++ % fixture_.size()]);
  if (stopped_)
    return;
  replay_.expires_after(interval());
  replay_.async_wait([this](boost::system::error_code error) {
    if (!error && !stopped_)
      replay_next();
  });
}

void Sampler::stop(std::function<void()> done) {
  stopped_ = true;
  replay_.cancel();
  if (stream_)
    stream_->stop(std::move(done));
  else
    done();
}

SamplingCounters Sampler::counters() const {
  return stream_ ? stream_->counters() : SamplingCounters{};
}

} // namespace nvsmi
