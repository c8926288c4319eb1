#include "terminal/top_model.hpp"

#include <algorithm>
#include <set>

namespace nvsmi {
namespace {

using std::chrono::milliseconds;

// Smaller first, unknown last; `descending` reverses the known ones only.
template <typename T>
int compare_known(const std::optional<T> &a, const std::optional<T> &b, bool descending) {
  if (!a || !b)
    return a ? -1 : b ? 1 : 0;
  if (*a == *b)
    return 0;
  bool less = *a < *b;
  return (less != descending) ? -1 : 1;
}

} // namespace

TopModel::TopModel(milliseconds interval)
    : late_after_(std::max(milliseconds(3000), 3 * interval)) {}

void TopModel::add_sample(Snapshot snapshot, TopClock::time_point now) {
  for (const Gpu &gpu : snapshot.gpus) {
    std::deque<Reading> &history = history_[gpu.index];
    history.push_back(gpu.utilization_gpu_percent);
    while (history.size() > history_length)
      history.pop_front();
    if (seen_gpus_.size() < max_remembered_gpus || seen_gpus_.count(gpu.index))
      seen_gpus_[gpu.index] = gpu.name;
  }
  // The history of a GPU that has gone stays while it is remembered, so that it shows again
  // when the GPU comes back; both are bounded by max_remembered_gpus.
  for (auto it = history_.begin(); it != history_.end();)
    it = seen_gpus_.count(it->first) ? std::next(it) : history_.erase(it);
  latest_ = std::move(snapshot);
  latest_at_ = now;
  message_.reset();
}

std::optional<milliseconds> TopModel::sample_age(TopClock::time_point now) const {
  if (!latest_)
    return std::nullopt;
  return std::chrono::duration_cast<milliseconds>(now - latest_at_);
}

bool TopModel::late(TopClock::time_point now) const {
  std::optional<milliseconds> age = sample_age(now);
  return !age || *age > late_after_;
}

const std::deque<Reading> &TopModel::utilization_history(int gpu) const {
  static const std::deque<Reading> none;
  auto found = history_.find(gpu);
  return found == history_.end() ? none : found->second;
}

std::vector<LostGpu> TopModel::lost_gpus() const {
  std::vector<LostGpu> lost;
  if (!latest_)
    return lost;
  for (const auto &[index, name] : seen_gpus_) {
    bool present = std::any_of(latest_->gpus.begin(), latest_->gpus.end(),
                               [index = index](const Gpu &gpu) { return gpu.index == index; });
    if (!present)
      lost.push_back({index, name});
  }
  return lost;
}

void TopModel::sort_by(SortKey key) {
  reversed_ = key == sort_key_ ? !reversed_ : false;
  sort_key_ = key;
  scroll_ = 0;
}

bool TopModel::sort_descending() const {
  bool natural =
      sort_key_ == SortKey::gpu_memory || sort_key_ == SortKey::cpu || sort_key_ == SortKey::sm;
  return natural != reversed_;
}

void TopModel::cycle_gpu_filter() {
  std::vector<int> indices;
  if (latest_)
    for (const Gpu &gpu : latest_->gpus)
      indices.push_back(gpu.index);
  std::sort(indices.begin(), indices.end());
  auto next = gpu_filter_ ? std::upper_bound(indices.begin(), indices.end(), *gpu_filter_)
                          : indices.begin();
  gpu_filter_ = next == indices.end() ? std::nullopt : std::optional<int>(*next);
  scroll_ = 0;
}

void TopModel::cycle_user_filter() {
  std::set<std::string> users;
  if (latest_)
    for (const Gpu &gpu : latest_->gpus)
      for (const Process &process : gpu.processes.value_or(std::vector<Process>{}))
        if (process.user)
          users.insert(*process.user);
  auto next = user_filter_ ? users.upper_bound(*user_filter_) : users.begin();
  user_filter_ = next == users.end() ? std::nullopt : std::optional<std::string>(*next);
  scroll_ = 0;
}

void TopModel::clear_filters() {
  gpu_filter_.reset();
  user_filter_.reset();
  scroll_ = 0;
}

std::vector<ProcessRow> TopModel::process_rows() const {
  std::vector<ProcessRow> rows;
  if (!latest_)
    return rows;
  for (const Gpu &gpu : latest_->gpus) {
    if (gpu_filter_ && gpu.index != *gpu_filter_)
      continue;
    if (!gpu.processes)
      continue;
    for (const Process &p : *gpu.processes) {
      if (user_filter_ && p.user != user_filter_)
        continue;
      rows.push_back({gpu.index, p.pid, p.user, p.used_memory_mib, p.sm_utilization_percent,
                      p.cpu_percent, p.host_memory_mib, p.container,
                      p.command ? p.command : p.name});
    }
  }
  bool descending = sort_descending();
  auto by_key = [&](const ProcessRow &a, const ProcessRow &b) {
    switch (sort_key_) {
    case SortKey::gpu_memory:
      return compare_known(a.gpu_memory_mib, b.gpu_memory_mib, descending);
    case SortKey::cpu:
      return compare_known(a.cpu_percent, b.cpu_percent, descending);
    case SortKey::sm:
      return compare_known(a.sm_percent, b.sm_percent, descending);
    case SortKey::pid:
      return compare_known(a.pid, b.pid, descending);
    case SortKey::user:
      return compare_known(a.user, b.user, descending);
    }
    return 0;
  };
  std::stable_sort(rows.begin(), rows.end(), [&](const ProcessRow &a, const ProcessRow &b) {
    if (int order = by_key(a, b))
      return order < 0;
    if (a.gpu != b.gpu)
      return a.gpu < b.gpu;
    return compare_known(a.pid, b.pid, false) < 0;
  });
  return rows;
}

void TopModel::scroll(int rows) { scroll_ = std::max(0, scroll_ + rows); }

} // namespace nvsmi
