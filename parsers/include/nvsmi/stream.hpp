// Turning the endless output of nvidia-smi's own loop (`-lms N`) into whole samples: lines and
// XML documents cut from a byte stream with a size cap, and CSV rows gathered into one Snapshot
// per loop iteration.
#pragma once

#include "nvsmi/csv_reader.hpp"
#include "nvsmi/snapshot.hpp"
#include "nvsmi/unreadable_gpu.hpp"

#include <cstddef>
#include <cstdint>
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
// </nvidia_smi_log>. A document larger than the cap is an error and is skipped: what is held
// never passes the cap by more than the chunk fed last. Text before a document is skipped as
// garbage, but for lines that name a GPU nvidia-smi cannot read (nvsmi/unreadable_gpu.hpp), which
// stay at the start of the document's piece.
class XmlDocumentSplitter {
public:
  explicit XmlDocumentSplitter(std::size_t max_document_bytes) : max_(max_document_bytes) {}
  void feed(std::string_view bytes, StreamPieces &out);
  // What came after the last whole document (empty while an oversized one is skipped): when the
  // writer has died, a partial document or its last words.
  std::string_view pending() const { return skipping_ ? std::string_view() : partial_; }
  bool reset();

private:
  std::size_t max_;
  std::string partial_;
  bool skipping_ = false;
};

// How much one CSV sample may hold while it is gathered. A server has a few dozen GPUs at most,
// and a row is some hundred bytes: far more than this is a stream that went wrong (a `count` of
// 999999999, rows that never complete a sample), not a sample to wait for.
struct CsvSampleLimits {
  std::int64_t max_gpus = 256;      // the largest `count` accepted
  std::size_t max_bytes = 8u << 20; // rows' text in one sample
};

// Gathers `--query-gpu` rows into one Snapshot per loop iteration: a sample is complete when as
// many rows as the `count` column says are in. A header line (re)sets the columns; a row that
// starts over (an index not after the last one) while a sample is incomplete drops the partial.
// A row whose `count` is past the limit, or one that takes the sample past its byte limit, is an
// error and drops the sample: memory never grows past the limits.
class CsvSampleAssembler {
public:
  explicit CsvSampleAssembler(CsvLayout layout, CsvSampleLimits limits = {})
      : layout_(std::move(layout)), limits_(limits) {}

  struct Outcome {
    std::optional<Snapshot> sample;
    std::optional<std::string> error;
  };
  // A device-handle line (nvsmi/unreadable_gpu.hpp) among the rows stands for its GPU's row: the
  // GPU is in the sample, lost, and counts towards `count`.
  Outcome add_line(std::string_view line);
  // How many GPUs nvidia-smi said elsewhere (on stderr) it cannot read, which print no row: a
  // sample short of `count` by at most this many is whole at its last row, or, when the message
  // came late, at the next sample's first. Their GPUs are the caller's to add.
  void set_unreadable_elsewhere(std::size_t count) { unreadable_elsewhere_ = count; }
  // Drops an incomplete sample (the child died); true if there was one.
  bool reset();

private:
  bool whole() const;

  CsvLayout layout_;
  CsvSampleLimits limits_;
  Snapshot pending_;
  std::vector<UnreadableGpu> pending_unreadable_;
  std::size_t unreadable_elsewhere_ = 0;
  std::int64_t expected_ = 0;
  std::size_t pending_bytes_ = 0;
};

} // namespace nvsmi
