#include "report/report_series.hpp"

#include <algorithm>
#include <cmath>

namespace nvsmi {

void Series::Stat::add(double value) {
  min = count == 0 ? value : std::min(min, value);
  max = count == 0 ? value : std::max(max, value);
  sum += value;
  ++count;
}

void Series::Stat::merge(const Stat &other) {
  if (other.count == 0)
    return;
  min = count == 0 ? other.min : std::min(min, other.min);
  max = count == 0 ? other.max : std::max(max, other.max);
  sum += other.sum;
  count += other.count;
}

std::optional<double> Series::Stat::mean() const {
  if (count == 0)
    return std::nullopt;
  return sum / count;
}

void Series::start(double origin, double width) {
  origin_ = origin;
  width_ = width > 0 ? width : 1;
  buckets_.clear();
  buckets_.reserve(capacity);
}

void Series::merge_pairs() {
  std::size_t kept = (buckets_.size() + 1) / 2;
  for (std::size_t i = 0; i < kept; ++i) {
    Bucket merged = buckets_[2 * i];
    if (2 * i + 1 < buckets_.size()) {
      const Bucket &second = buckets_[2 * i + 1];
      if (merged.samples == 0)
        merged.gap_before = second.gap_before;
      for (std::size_t m = 0; m < metric_count; ++m)
        merged.stats[m].merge(second.stats[m]);
      merged.samples += second.samples;
    }
    buckets_[i] = merged;
  }
  buckets_.resize(kept);
  width_ *= 2;
}

void Series::add(double time, const Values &values, bool after_gap) {
  double offset = std::max(0.0, time - origin_);
  auto slot = [&] { return static_cast<std::size_t>(std::floor(offset / width_)); };
  while (slot() >= capacity)
    merge_pairs();
  std::size_t index = slot();
  if (buckets_.size() <= index)
    buckets_.resize(index + 1);
  Bucket &bucket = buckets_[index];
  if (bucket.samples == 0 && after_gap)
    bucket.gap_before = true;
  ++bucket.samples;
  for (std::size_t m = 0; m < metric_count; ++m)
    if (values[m])
      bucket.stats[m].add(*values[m]);
}

} // namespace nvsmi
