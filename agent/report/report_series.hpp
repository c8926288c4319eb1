// A GPU's readings over time, squeezed into a fixed number of buckets for drawing. When a sample
// falls past the last bucket, neighbouring buckets merge in pairs and each then covers twice the
// time: memory stays the same however long the log is.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace nvsmi {

class Series {
public:
  static constexpr std::size_t capacity = 512;
  // power_limit: drawn as a dashed line where the log has it.
  enum Metric { utilization, memory, power, temperature, power_limit, metric_count };
  using Values = std::array<std::optional<double>, metric_count>;

  struct Stat {
    double sum = 0, min = 0, max = 0;
    std::uint32_t count = 0;
    void add(double value);
    void merge(const Stat &other);
    std::optional<double> mean() const;
  };
  struct Bucket {
    std::array<Stat, metric_count> stats;
    std::uint32_t samples = 0;
    bool gap_before = false; // the first sample in it came after a gap: the line breaks here
  };

  // The first bucket starts at `origin` and spans `width` seconds (> 0).
  void start(double origin, double width);
  void add(double time, const Values &values, bool after_gap);

  double origin() const { return origin_; }
  double width() const { return width_; }
  const std::vector<Bucket> &buckets() const { return buckets_; }

private:
  void merge_pairs();
  double origin_ = 0, width_ = 1;
  std::vector<Bucket> buckets_;
};

} // namespace nvsmi
