#include "nvidia_smi/stream_decoder.hpp"

#include "nvsmi/csv_reader.hpp"
#include "nvsmi/quantity.hpp"
#include "nvsmi/stream.hpp"
#include "nvsmi/xml_reader.hpp"

namespace nvsmi {
namespace {

constexpr std::size_t max_line_bytes = 1u << 20;
constexpr std::size_t max_document_bytes = 32u << 20;

class XmlDecoder final : public StreamDecoder {
public:
  explicit XmlDecoder(std::function<void(Snapshot)> on_sample)
      : on_sample_(std::move(on_sample)), documents_(max_document_bytes) {}

  void feed(std::string_view bytes, const Events &events) override {
    StreamPieces pieces;
    documents_.feed(bytes, pieces);
    for (const std::string &error : pieces.errors)
      events.skipped("sample skipped: " + error, true);
    for (const std::string &piece : pieces.pieces) {
      try {
        on_sample_(read_xml(piece));
        events.sample_done();
      } catch (const ParseError &error) {
        events.skipped(std::string("sample skipped: ") + error.what(), true);
      }
    }
  }

  bool finish(const Events &events, bool) override {
    // nvidia-smi -q -x explains a failure on stdout, outside any document ("NVIDIA-SMI has
    // failed because it couldn't communicate with the NVIDIA driver"): that is its message, not a
    // partial sample.
    std::string_view rest = trim(documents_.pending());
    bool message_only = !rest.empty() && rest.find('<') == std::string_view::npos;
    if (message_only)
      events.message(rest);
    return documents_.reset() && !message_only;
  }

private:
  std::function<void(Snapshot)> on_sample_;
  XmlDocumentSplitter documents_;
};

class CsvDecoder final : public StreamDecoder {
public:
  CsvDecoder(const std::vector<std::string> &extra_fields, std::function<void(Snapshot)> on_sample)
      : on_sample_(std::move(on_sample)), lines_(max_line_bytes),
        assembler_(CsvLayout::from_fields(query_fields(), extra_fields)) {}

  void feed(std::string_view bytes, const Events &events) override {
    StreamPieces pieces;
    lines_.feed(bytes, pieces);
    for (const std::string &error : pieces.errors)
      events.skipped("sample skipped: " + error, true);
    for (std::string &piece : pieces.pieces) {
      CsvSampleAssembler::Outcome outcome = assembler_.add_line(piece);
      if (outcome.error) {
        events.message(piece);
        // A line with no comma is nvidia-smi talking (an error, a refusal), not a broken row.
        bool message = piece.find(',') == std::string::npos;
        events.skipped(message ? "nvidia-smi printed: " + piece
                               : "sample skipped: " + *outcome.error,
                       !message);
      }
      if (outcome.sample) {
        on_sample_(std::move(*outcome.sample));
        events.sample_done();
      }
    }
  }

  bool finish(const Events &, bool) override { return lines_.reset() | assembler_.reset(); }

private:
  std::function<void(Snapshot)> on_sample_;
  LineSplitter lines_;
  CsvSampleAssembler assembler_;
};

} // namespace

std::unique_ptr<StreamDecoder> snapshot_decoder(SourceKind source,
                                                const std::vector<std::string> &extra_fields,
                                                std::function<void(Snapshot)> on_sample) {
  if (source == SourceKind::xml)
    return std::make_unique<XmlDecoder>(std::move(on_sample));
  return std::make_unique<CsvDecoder>(extra_fields, std::move(on_sample));
}

} // namespace nvsmi
