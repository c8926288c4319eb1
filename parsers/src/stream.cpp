#include "nvsmi/stream.hpp"

#include "csv_cells.hpp"

#include "nvsmi/quantity.hpp"
#include "nvsmi/unreadable_gpu.hpp"

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>

namespace nvsmi {
namespace {

constexpr std::size_t npos = std::string_view::npos;

// Where `needle` is in `text`, from `from`. glibc's memmem skips through the text; string's find
// stops at every occurrence of the needle's first byte to compare, and every '<' of an XML
// document is one: that search was a fifth of what reading a sample cost.
std::size_t find_in(std::string_view text, std::string_view needle, std::size_t from = 0) {
  if (from > text.size())
    return npos;
  const void *at = memmem(text.data() + from, text.size() - from, needle.data(), needle.size());
  return at ? static_cast<std::size_t>(static_cast<const char *>(at) - text.data()) : npos;
}

// The last `needle` in `text`. Forward, since it is rare: rfind compares at every byte from the
// end, through a whole document to find the declaration at its start.
std::size_t find_last_in(std::string_view text, std::string_view needle) {
  std::size_t last = npos;
  for (std::size_t at = find_in(text, needle); at != npos; at = find_in(text, needle, at + 1))
    last = at;
  return last;
}

// The last "<?xml" in `text`. From the end by its '?', a byte that nvidia-smi's XML has only in its
// declaration: memrchr passes over the document many times faster than memmem can look for a
// needle this short, and this is a search through each whole document.
std::size_t find_last_declaration(std::string_view text) {
  static constexpr std::string_view declaration = "<?xml";
  for (std::size_t end = text.size(); end > 0;) {
    const void *mark = memrchr(text.data(), '?', end);
    if (!mark)
      return npos;
    std::size_t at = static_cast<std::size_t>(static_cast<const char *>(mark) - text.data());
    if (at > 0 && text.substr(at - 1, declaration.size()) == declaration)
      return at - 1;
    end = at;
  }
  return npos;
}

std::string too_long(const char *what, std::size_t cap) {
  return std::string(what) + " longer than " + std::to_string(cap) + " bytes, skipped";
}

// The row, built in place: assigned inside a try, a row was built empty, moved into and
// destroyed again, and a Gpu is most of a kilobyte. A ParseError's message goes to `error`.
CsvRow read_row(const detail::CsvCells &cells, const CsvLayout &layout, int position,
                std::optional<std::string> &error) {
  try {
    return detail::read_csv_row(cells, layout, position);
  } catch (const ParseError &parse_error) {
    error = std::string(parse_error.what());
    return {};
  }
}

} // namespace

void LineSplitter::feed(std::string_view bytes, StreamPieces &out) {
  while (!bytes.empty()) {
    std::size_t newline = bytes.find('\n');
    std::string_view part = bytes.substr(0, newline);
    if (!skipping_) {
      if (partial_.size() + part.size() > max_) {
        out.errors.push_back(too_long("line", max_));
        partial_.clear();
        skipping_ = true;
      } else {
        partial_.append(part.data(), part.size());
      }
    }
    if (newline == std::string_view::npos)
      return;
    if (!skipping_) {
      if (!partial_.empty() && partial_.back() == '\r')
        partial_.pop_back();
      out.pieces.push_back(std::move(partial_));
    }
    partial_.clear();
    skipping_ = false;
    bytes.remove_prefix(newline + 1);
  }
}

bool LineSplitter::reset() {
  bool had_partial = !partial_.empty() || skipping_;
  partial_.clear();
  skipping_ = false;
  return had_partial;
}

void XmlDocumentSplitter::feed(std::string_view bytes, StreamPieces &out) {
  static constexpr std::string_view end_tag = "</nvidia_smi_log>";
  // Only the tail of what came before can hold the start of an end tag split across chunks.
  std::size_t search_from =
      partial_.size() >= end_tag.size() ? partial_.size() - (end_tag.size() - 1) : 0;
  partial_.append(bytes.data(), bytes.size());
  std::size_t start = 0;
  for (std::size_t end; (end = find_in(partial_, end_tag, search_from)) != npos;) {
    std::size_t document_end = end + end_tag.size();
    if (skipping_ || document_end - start > max_) {
      if (!skipping_)
        out.errors.push_back(too_long("XML document", max_));
      skipping_ = false;
    } else {
      std::string_view document =
          trim(std::string_view(partial_).substr(start, document_end - start));
      // Anything before the document's own start is garbage, not part of it, but for the lines
      // in which nvidia-smi names the GPUs it cannot read: those stay, for the reader to add.
      std::size_t begin = find_last_declaration(document);
      if (begin == npos)
        begin = find_last_in(document, "<nvidia_smi_log");
      if (begin != npos && begin > 0 &&
          !after_unreadable_gpu_lines(document.substr(0, begin)).empty()) {
        out.errors.push_back(std::to_string(begin) + " bytes of garbage before a document skipped");
        document.remove_prefix(begin);
      }
      if (document.data() == partial_.data() &&
          trim(std::string_view(partial_).substr(document_end)).empty()) {
        // The usual case: what is held is this document and space. It becomes the piece rather
        // than being copied into one, and what is held starts again with as much room (the room
        // the caller frees with the last piece, likely).
        std::size_t room = partial_.capacity();
        partial_.resize(document_end);
        out.pieces.push_back(std::move(partial_));
        partial_ = std::string();
        partial_.reserve(room);
        return;
      }
      out.pieces.emplace_back(document);
    }
    start = search_from = document_end;
  }
  // Space after a document is no part of the next: dropped, so that the next starts what is held.
  if (start > 0) {
    std::string_view next = trim(std::string_view(partial_).substr(start));
    start =
        next.empty() ? partial_.size() : static_cast<std::size_t>(next.data() - partial_.data());
  }
  partial_.erase(0, start);
  if (partial_.size() > max_) {
    if (!skipping_)
      out.errors.push_back(too_long("XML document", max_));
    skipping_ = true;
    partial_.erase(0, partial_.size() - (end_tag.size() - 1));
  }
}

bool XmlDocumentSplitter::reset() {
  bool had_partial = trim(partial_).size() > 0 || skipping_;
  partial_.clear();
  skipping_ = false;
  return had_partial;
}

CsvSampleAssembler::Outcome CsvSampleAssembler::add_line(std::string_view line) {
  Outcome outcome;
  if (trim(line).empty())
    return outcome;
  // Split once: telling a header from a row split every row a second time.
  detail::CsvCells cells(line);
  if (detail::names_a_field(cells)) {
    try {
      layout_ = CsvLayout::from_header(line);
    } catch (const ParseError &error) {
      outcome.error = error.what();
    }
    if (reset())
      outcome.error = "incomplete sample dropped at a new header";
    return outcome;
  }
  if (auto unreadable = parse_unreadable_gpu_line(line)) {
    // nvidia-smi talking about a GPU, not a broken row: it is counted where its row would be.
    bool known = std::any_of(
        pending_unreadable_.begin(), pending_unreadable_.end(),
        [&](const UnreadableGpu &gpu) { return gpu.pci_bus_id == unreadable->pci_bus_id; });
    if (!known)
      pending_unreadable_.push_back(std::move(*unreadable));
    if (!pending_.gpus.empty() && whole()) {
      add_unreadable_gpus(pending_, pending_unreadable_);
      outcome.sample = std::move(pending_);
      reset();
    }
    return outcome;
  }
  std::optional<std::string> error;
  CsvRow row = read_row(cells, layout_, static_cast<int>(pending_.gpus.size()), error);
  if (error) {
    reset();
    outcome.error = *error + "; sample dropped";
    return outcome;
  }
  if (!row.gpu_count || *row.gpu_count < 1) {
    reset();
    outcome.error = "row without a GPU count; the `count` field must be queried";
    return outcome;
  }
  if (*row.gpu_count > limits_.max_gpus) {
    reset();
    outcome.error = "`count` " + std::to_string(*row.gpu_count) + " is past the " +
                    std::to_string(limits_.max_gpus) + " GPUs a sample may have; sample dropped";
    return outcome;
  }
  if (!pending_.gpus.empty() &&
      (row.gpu.index <= pending_.gpus.back().index || *row.gpu_count != expected_)) {
    if (unreadable_elsewhere_ > 0 && whole()) {
      // The rows of GPUs it cannot read never come: the sample was whole at its last row.
      add_unreadable_gpus(pending_, pending_unreadable_);
      outcome.sample = std::move(pending_);
      reset();
    } else {
      reset();
      outcome.error = "incomplete sample dropped: a new one began";
    }
  }
  if (!pending_.gpus.empty() && pending_bytes_ + line.size() > limits_.max_bytes) {
    reset();
    outcome.error =
        "sample larger than " + std::to_string(limits_.max_bytes) + " bytes; sample dropped";
    return outcome;
  }
  if (pending_.gpus.empty()) {
    pending_.source = Source::csv;
    pending_.timestamp = row.timestamp;
    pending_.driver_version = row.driver_version;
    expected_ = *row.gpu_count;
    pending_.gpus.reserve(static_cast<std::size_t>(std::min<std::int64_t>(expected_, 64)));
  }
  pending_.gpus.push_back(std::move(row.gpu));
  pending_bytes_ += line.size();
  if (whole() && !outcome.sample) {
    add_unreadable_gpus(pending_, pending_unreadable_);
    outcome.sample = std::move(pending_);
    reset();
  }
  return outcome;
}

bool CsvSampleAssembler::whole() const {
  std::size_t gpus = pending_.gpus.size() + pending_unreadable_.size();
  return static_cast<std::int64_t>(gpus) == expected_ ||
         (unreadable_elsewhere_ > 0 &&
          static_cast<std::int64_t>(gpus + unreadable_elsewhere_) >= expected_);
}

bool CsvSampleAssembler::reset() {
  bool had_partial = !pending_.gpus.empty();
  pending_ = Snapshot();
  pending_unreadable_.clear();
  pending_bytes_ = 0;
  return had_partial;
}

} // namespace nvsmi
