#include "nvsmi/reading_parts.hpp"

namespace nvsmi {

std::optional<std::int64_t> sum_of_parts(std::initializer_list<Part<std::int64_t>> parts) {
  std::optional<std::int64_t> total;
  for (const Part<std::int64_t> &part : parts) {
    if (!part)
      continue;
    std::int64_t sum = 0;
    // A sum past the type's range is no count: unknown, never a wrapped one.
    if (!*part || __builtin_add_overflow(total.value_or(0), **part, &sum))
      return std::nullopt;
    total = sum;
  }
  return total;
}

std::optional<bool> any_of_parts(std::initializer_list<Part<bool>> parts) {
  bool present = false, unknown = false;
  for (const Part<bool> &part : parts) {
    if (!part)
      continue;
    present = true;
    if (!*part)
      unknown = true;
    else if (**part)
      return true;
  }
  if (!present || unknown)
    return std::nullopt;
  return false;
}

} // namespace nvsmi
