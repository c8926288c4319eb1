// What the CSV reader shares with the sample assembler (stream.cpp): a line split once into its
// cells, so that `watch` can tell a header from a row and read the row without splitting twice.
#pragma once

#include "nvsmi/csv_reader.hpp"

#include <array>
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
  CsvCells(const CsvCells &) = delete; // views into scratch_, and data() into inline_
  CsvCells &operator=(const CsvCells &) = delete;

  std::size_t size() const { return size_; }
  const std::string_view *begin() const { return data(); }
  const std::string_view *end() const { return data() + size_; }
  std::string_view operator[](std::size_t i) const { return data()[i]; }

private:
  void push(std::string_view cell) {
    if (size_ < inline_.size()) {
      inline_[size_] = cell;
    } else {
      if (size_ == inline_.size())
        spilled_.assign(inline_.begin(), inline_.end());
      spilled_.push_back(cell);
    }
    ++size_;
  }
  const std::string_view *data() const {
    return size_ <= inline_.size() ? inline_.data() : spilled_.data();
  }
  void split_quoted(std::string_view line);

  std::array<std::string_view, 64> inline_; // the query has 41 fields, `watch --fields` adds some
  std::vector<std::string_view> spilled_;
  std::size_t size_ = 0;
  std::string scratch_; // unquoted cells, sized once so that the views into it stay valid
};

// CsvLayout::is_header on a line already split.
bool names_a_field(const CsvCells &cells);

// read_csv_row on a line already split.
CsvRow read_csv_row(const CsvCells &cells, const CsvLayout &layout, int position);

} // namespace nvsmi::detail
