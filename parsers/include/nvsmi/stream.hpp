// Turning the endless output of nvidia-smi's own loop (`-lms N`) into whole samples: lines and
// XML documents cut from a byte stream with a size cap, and CSV rows gathered into one Snapshot
// per loop iteration.
#pragma once

#include "nvsmi/csv_reader.hpp"
#include "nvsmi/snapshot.hpp"

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace nvsmi {

// What a chunk of stream produced: whole pieces, and errors for what had to be thrown away.
struct StreamPieces {
  std::vector<std::string> pieces;
  std::vector<std::string> errors;
};

// Cuts a byte stream into lines (without "\n" or "\r"). A line longer than the cap is an error and
// is skipped up to its end: memory never grows past the cap.
class LineSplitter {
public:
  explicit LineSplitter(std::size_t max_line_bytes) : max_(max_line_bytes) {}
  void feed(std::string_view bytes, StreamPieces &out);
  // Forgets a partial line (the writer died mid-line); true if there was one.
  bool reset();

private:
  std::size_t max_;
  std::string partial_;
  bool skipping_ = false;
};

// Cuts the stream `nvidia-smi -q -x -lms N` prints into whole documents, each ending with
// </nvidia_smi_log>. A document larger than the cap is an error and is skipped.
class XmlDocumentSplitter {
public:
  explicit XmlDocumentSplitter(std::size_t max_document_bytes) : max_(max_document_bytes) {}
  void feed(std::string_view bytes, StreamPieces &out);
  bool reset();

private:
  std::size_t max_;
  std::string partial_;
  bool skipping_ = false;
};

// Gathers `--query-gpu` rows into one Snapshot per loop iteration: a sample is complete when as
// many rows as the `count` column says are in. A header line (re)sets the columns; a row that
// starts over (an index not after the last one) while a sample is incomplete drops the partial.
class CsvSampleAssembler {
public:
  explicit CsvSampleAssembler(CsvLayout layout) : layout_(std::move(layout)) {}

  struct Outcome {
    std::optional<Snapshot> sample;
    std::optional<std::string> error;
  };
  Outcome add_line(std::string_view line);
  // Drops an incomplete sample (the child died); true if there was one.
  bool reset();

private:
  CsvLayout layout_;
  Snapshot pending_;
  std::int64_t expected_ = 0;
};

} // namespace nvsmi
