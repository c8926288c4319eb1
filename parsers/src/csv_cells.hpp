// What the CSV reader shares with the sample assembler (stream.cpp): a line split once into its
// cells, so that `watch` can tell a header from a row and read the row without splitting twice.
#pragma once

#include "nvsmi/csv_reader.hpp"

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace nvsmi::detail {

// A line's cells, trimmed; a quoted cell (the agent's own CSV) unquoted. nvidia-smi separates
// values with ", " and never quotes them. The cells of a query row live on the stack: a vector
// per row was a heap allocation for every GPU read.
class CsvCells {
public:
  explicit CsvCells(std::string_view line);
  CsvCells(const CsvCells &) = delete; // views into scratch_, and the pointers into the arrays
  CsvCells &operator=(const CsvCells &) = delete;

  class Iterator {
  public:
    Iterator(const char *const *start, const std::size_t *size) : start_(start), size_(size) {}
    std::string_view operator*() const { return {*start_, *size_}; }
    Iterator &operator++() {
      ++start_;
      ++size_;
      return *this;
    }
    bool operator!=(const Iterator &other) const { return start_ != other.start_; }

  private:
    const char *const *start_;
    const std::size_t *size_;
  };

  std::size_t size() const { return size_; }
  Iterator begin() const { return {starts_, sizes_}; }
  Iterator end() const { return {starts_ + size_, sizes_ + size_}; }
  std::string_view operator[](std::size_t i) const { return {starts_[i], sizes_[i]}; }

private:
  static constexpr std::size_t slot_count = 64; // the query has 41 fields, `watch --fields` more

  // Adds [first, last); `count` is the caller's, kept in a register while a line is split (size_,
  // a member beside the cells, was stored and loaded again after every cell).
  void add(const char *first, const char *last, std::size_t &count) {
    auto size = static_cast<std::size_t>(last - first);
    if (count < slot_count) {
      slot_starts_[count] = first;
      slot_sizes_[count] = size;
    } else {
      if (count == slot_count) {
        spilled_starts_.assign(slot_starts_, slot_starts_ + slot_count);
        spilled_sizes_.assign(slot_sizes_, slot_sizes_ + slot_count);
      }
      spilled_starts_.push_back(first);
      spilled_sizes_.push_back(size);
    }
    ++count;
  }
  void add(std::string_view cell, std::size_t &count) {
    add(cell.data(), cell.data() + cell.size(), count);
  }
  void finish(std::size_t count) {
    size_ = count;
    starts_ = count <= slot_count ? slot_starts_ : spilled_starts_.data();
    sizes_ = count <= slot_count ? slot_sizes_ : spilled_sizes_.data();
  }
  void split_quoted(std::string_view line);

  // Starts and sizes apart, and left unset. As string_views, each cell was built on the stack
  // and copied by one 16-byte load of two 8-byte stores, which the processor cannot forward: most
  // of the time of splitting a row. Set to empty views, the array was a kilobyte written per line.
  const char *slot_starts_[slot_count];
  std::size_t slot_sizes_[slot_count];
  const char *const *starts_ = nullptr;
  const std::size_t *sizes_ = nullptr;
  std::size_t size_ = 0;
  std::vector<const char *> spilled_starts_;
  std::vector<std::size_t> spilled_sizes_;
  std::string scratch_; // unquoted cells, sized once so that the views into it stay valid
};

// CsvLayout::is_header on a line already split.
bool names_a_field(const CsvCells &cells);

// read_csv_row on a line already split.
CsvRow read_csv_row(const CsvCells &cells, const CsvLayout &layout, int position);

// Where a row's readings go: its GPU, and what it says of the whole sample (CsvRow's other
// members).
struct RowTarget {
  Gpu &gpu;
  std::optional<Timestamp> &timestamp;
  Text &driver_version;
  Reading &gpu_count;
};
// The same, into a default Gpu that is already where it stays: moved there from a CsvRow, a Gpu
// of most of a kilobyte was copied and the moved-from one destroyed, for every row.
void read_csv_row(const CsvCells &cells, const CsvLayout &layout, int position,
                  const RowTarget &target);

} // namespace nvsmi::detail
