#include "nvidia_smi/stream_decoder.hpp"

#include "nvsmi/csv_reader.hpp"
#include "nvsmi/nvidia_smi_output.hpp"
#include "nvsmi/pci_address.hpp"
#include "nvsmi/quantity.hpp"
#include "nvsmi/stream.hpp"
#include "nvsmi/unreadable_gpu.hpp"
#include "nvsmi/xml_reader.hpp"

#include <algorithm>
#include <chrono>

namespace nvsmi {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

constexpr std::size_t max_line_bytes = 1u << 20;
constexpr std::size_t max_document_bytes = 32u << 20;

// The GPUs nvidia-smi said on stderr it cannot read, each with when it last said so. Its stderr
// and stdout are two pipes read apart, so a message is matched to samples by time: within the
// last 3 intervals (at least 3 s), long enough for the message of the sample now printed, short
// enough that a GPU that came back is not called lost for long.
class UnreadableMemory {
public:
  explicit UnreadableMemory(milliseconds interval)
      : window_(std::max(3 * interval, milliseconds(3000))), lines_(64u << 10) {}

  void feed(std::string_view bytes) {
    StreamPieces pieces;
    lines_.feed(bytes, pieces);
    auto now = steady_clock::now();
    for (const std::string &line : pieces.pieces)
      if (auto gpu = parse_unreadable_gpu_line(line)) {
        seen_.erase(std::remove_if(seen_.begin(), seen_.end(),
                                   [&](const Seen &old) {
                                     return same_pci_device(old.gpu.pci_bus_id, gpu->pci_bus_id);
                                   }),
                    seen_.end());
        seen_.push_back({std::move(*gpu), now});
      }
    forget_old(now);
  }

  std::size_t count() {
    forget_old(steady_clock::now());
    return seen_.size();
  }

  // Those the sample does not hold itself, put in lost.
  void add_to(Snapshot &snapshot) {
    forget_old(steady_clock::now());
    std::vector<UnreadableGpu> missing;
    for (const Seen &seen : seen_) {
      bool held = std::any_of(snapshot.gpus.begin(), snapshot.gpus.end(), [&](const Gpu &gpu) {
        return gpu.pci_bus_id && same_pci_device(*gpu.pci_bus_id, seen.gpu.pci_bus_id);
      });
      if (!held)
        missing.push_back(seen.gpu);
    }
    add_unreadable_gpus(snapshot, missing);
  }

  void end_of_run() { lines_.reset(); }

private:
  struct Seen {
    UnreadableGpu gpu;
    steady_clock::time_point at;
  };
  void forget_old(steady_clock::time_point now) {
    seen_.erase(std::remove_if(seen_.begin(), seen_.end(),
                               [&](const Seen &seen) { return now - seen.at > window_; }),
                seen_.end());
  }

  milliseconds window_;
  LineSplitter lines_;
  std::vector<Seen> seen_;
};

class XmlDecoder final : public StreamDecoder {
public:
  XmlDecoder(std::function<void(Snapshot)> on_sample, milliseconds interval)
      : on_sample_(std::move(on_sample)), documents_(max_document_bytes), unreadable_(interval) {}

  void feed_stderr(std::string_view bytes) override { unreadable_.feed(bytes); }

  void feed(std::string_view bytes, const Events &events) override {
    StreamPieces pieces;
    documents_.feed(bytes, pieces);
    for (const std::string &error : pieces.errors)
      events.skipped("sample skipped: " + error, true);
    for (std::string &piece : pieces.pieces) {
      Snapshot sample;
      try {
        // The piece is this decoder's own copy, cut from the stream: read where it lies.
        sample = read_xml_output_in_place(piece);
      } catch (const ParseError &error) {
        events.skipped(std::string("sample skipped: ") + error.what(), true);
        continue;
      }
      unreadable_.add_to(sample);
      on_sample_(std::move(sample));
      events.sample_done();
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
    unreadable_.end_of_run();
    return documents_.reset() && !message_only;
  }

private:
  std::function<void(Snapshot)> on_sample_;
  XmlDocumentSplitter documents_;
  UnreadableMemory unreadable_;
};

class CsvDecoder final : public StreamDecoder {
public:
  CsvDecoder(const GpuQuery &query, std::function<void(Snapshot)> on_sample, milliseconds interval)
      : on_sample_(std::move(on_sample)), lines_(max_line_bytes),
        assembler_(CsvLayout::from_fields(query.standard(), query.extra())), unreadable_(interval) {
  }

  void feed_stderr(std::string_view bytes) override {
    unreadable_.feed(bytes);
    assembler_.set_unreadable_elsewhere(unreadable_.count());
  }

  void feed(std::string_view bytes, const Events &events) override {
    StreamPieces pieces;
    lines_.feed(bytes, pieces);
    for (const std::string &error : pieces.errors)
      events.skipped("sample skipped: " + error, true);
    assembler_.set_unreadable_elsewhere(unreadable_.count());
    for (std::string &piece : pieces.pieces) {
      CsvSampleAssembler::Outcome outcome = assembler_.add_line(piece);
      if (outcome.error) {
        events.message(piece);
        if (refused_query_field(piece))
          continue; // the run's end says it, with what is done about it
        // A line with no comma is nvidia-smi talking (an error, a refusal), not a broken row.
        bool message = piece.find(',') == std::string::npos;
        events.skipped(message ? "nvidia-smi printed: " + piece
                               : "sample skipped: " + *outcome.error,
                       !message);
      }
      if (outcome.sample) {
        unreadable_.add_to(*outcome.sample);
        on_sample_(std::move(*outcome.sample));
        events.sample_done();
      }
    }
  }

  bool finish(const Events &, bool) override {
    unreadable_.end_of_run();
    return lines_.reset() | assembler_.reset();
  }

private:
  std::function<void(Snapshot)> on_sample_;
  LineSplitter lines_;
  CsvSampleAssembler assembler_;
  UnreadableMemory unreadable_;
};

} // namespace

std::unique_ptr<StreamDecoder> snapshot_decoder(Source source, const GpuQuery &query,
                                                std::function<void(Snapshot)> on_sample,
                                                milliseconds interval) {
  if (source == Source::xml)
    return std::make_unique<XmlDecoder>(std::move(on_sample), interval);
  return std::make_unique<CsvDecoder>(query, std::move(on_sample), interval);
}

} // namespace nvsmi
