#include "host/cpu_shares.hpp"

#include <algorithm>
#include <cmath>

namespace nvsmi {
namespace {

// Clock ticks are hundredths of a second: digits past the second decimal would be noise.
double percent(double share) { return std::round(share * 10000.0) / 100.0; }

// The counters move a whole tick at a time, so one tick more or less over a short span is a
// large share: over a millisecond, one tick reads as 1000 %. Over ten ticks' time it is 10 points
// at most.
constexpr double shortest_ticks = 10;

} // namespace

std::vector<std::optional<double>>
ProcessCpuShares::update(const std::vector<ProcessTicks> &now_read) {
  std::vector<std::optional<double>> shares;
  shares.reserve(now_read.size());
  std::unordered_map<int, Previous> seen;
  for (const ProcessTicks &process : now_read) {
    std::optional<double> share;
    Previous now{process.start_ticks, process.cpu_ticks, process.at};
    auto before = previous_.find(process.pid);
    if (before != previous_.end() && before->second.start_ticks == process.start_ticks &&
        process.cpu_ticks >= before->second.cpu_ticks && process.at > before->second.at &&
        ticks_per_second_ > 0) {
      double seconds = std::chrono::duration<double>(process.at - before->second.at).count();
      double used = static_cast<double>(process.cpu_ticks - before->second.cpu_ticks) /
                    static_cast<double>(ticks_per_second_);
      if (seconds * static_cast<double>(ticks_per_second_) >= shortest_ticks)
        share = percent(used / seconds);
      else
        now = before->second; // too soon to tell: measure the next one from the older reading
    }
    shares.push_back(share);
    seen[process.pid] = now;
  }
  previous_ = std::move(seen); // forget the pids not read now
  return shares;
}

std::optional<double> HostCpuShare::update(std::optional<CpuTicks> now_read) {
  if (!now_read) {
    previous_.reset();
    return std::nullopt;
  }
  std::optional<double> share;
  bool went_back =
      previous_ && (now_read->busy < previous_->busy || now_read->total < previous_->total);
  if (previous_ && !went_back) {
    std::uint64_t total = now_read->total - previous_->total;
    if (total == 0)
      return std::nullopt; // within one tick: keep the older baseline for the next sample
    std::uint64_t busy = std::min(now_read->busy - previous_->busy, total);
    share = percent(static_cast<double>(busy) / static_cast<double>(total));
  }
  previous_ = now_read;
  return share;
}

} // namespace nvsmi
