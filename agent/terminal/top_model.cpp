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

TopModel::TopModel(milliseconds interval) { set_interval(interval); }

void TopModel::set_interval(milliseconds interval) {
  interval_ = interval;
  late_after_ = std::max(milliseconds(3000), 3 * interval);
}

void TopModel::add_sample(Snapshot snapshot, TopClock::time_point now, Lineages lineages) {
  lineages_ = std::move(lineages);
  sample_times_.push_back(now);
  while (sample_times_.size() > history_length)
    sample_times_.pop_front();
  for (const Gpu &gpu : snapshot.gpus) {
    std::deque<HistoryPoint> &history = history_[gpu.index];
    history.push_back({now, gpu.utilization_gpu_percent});
    while (history.size() > history_length)
      history.pop_front();
    if (seen_gpus_.size() < max_remembered_gpus || seen_gpus_.count(gpu.index))
      seen_gpus_[gpu.index] = gpu.name;
  }
  // The history of a GPU that has gone stays while it is remembered, so that it shows again
  // when the GPU comes back; both are bounded by max_remembered_gpus.
  for (auto it = history_.begin(); it != history_.end();)
    it = seen_gpus_.count(it->first) ? std::next(it) : history_.erase(it);
  if (snapshot.agent)
    cost_ = snapshot.agent;
  latest_ = std::move(snapshot);
  latest_at_ = now;
  message_.reset();
}

void TopModel::add_ancestors(const Lineages &lineages) {
  for (const auto &[pid, lineage] : lineages)
    if (auto found = lineages_.find(pid); found != lineages_.end())
      found->second.ancestors = lineage.ancestors;
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

const std::deque<HistoryPoint> &TopModel::utilization_history(int gpu) const {
  static const std::deque<HistoryPoint> none;
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
}

void TopModel::toggle_gpu_filter(int index) {
  gpu_filter_ = gpu_filter_ == index ? std::nullopt : std::optional<int>(index);
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
}

void TopModel::clear_filters() {
  gpu_filter_.reset();
  user_filter_.reset();
}

std::vector<ProcessRow> TopModel::listed_rows() const {
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
      ProcessRow row{gpu.index,
                     p.pid,
                     p.user,
                     p.used_memory_mib,
                     p.sm_utilization_percent,
                     p.cpu_percent,
                     p.host_memory_mib,
                     p.container,
                     p.command ? p.command : p.name,
                     std::nullopt};
      if (p.pid)
        if (auto found = lineages_.find(*p.pid); found != lineages_.end())
          row.start_ticks = found->second.start_ticks;
      rows.push_back(std::move(row));
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

// Each GPU process under its nearest ancestor that is shown; a chain of ancestors that are not
// GPU processes is shown up to where it meets another GPU process's, so that the launcher of
// eight workers is one row with the eight under it. Siblings keep the sorted order.
std::vector<ProcessRow> TopModel::as_tree(std::vector<ProcessRow> listed) const {
  // Every node: the GPU rows (a pid on two GPUs is two rows under one parent) and the ancestors.
  std::map<std::int64_t, std::int64_t> parent_of;
  std::map<std::int64_t, std::string> ancestor_name;
  std::map<std::int64_t, std::set<std::int64_t>> below; // each ancestor's children in the chains
  for (const ProcessRow &row : listed) {
    if (!row.pid)
      continue;
    auto found = lineages_.find(*row.pid);
    if (found == lineages_.end())
      continue;
    std::int64_t child = *row.pid;
    for (const auto &[pid, name] : found->second.ancestors) {
      parent_of.emplace(child, pid);
      ancestor_name.emplace(pid, name);
      below[pid].insert(child);
      child = pid;
    }
  }
  std::set<std::int64_t> listed_pids;
  for (const ProcessRow &row : listed)
    if (row.pid)
      listed_pids.insert(*row.pid);
  // An ancestor is shown when it is a GPU process or where chains part (a launcher of several
  // workers); the single links above (the shell, the session, init's children) would only push
  // the rows to the right.
  auto shown = [&](std::int64_t pid) {
    auto children = below.find(pid);
    return listed_pids.count(pid) || (children != below.end() && children->second.size() >= 2);
  };
  auto shown_parent = [&](std::int64_t pid) -> std::optional<std::int64_t> {
    for (std::size_t hops = 0; hops < 64; ++hops) {
      auto up = parent_of.find(pid);
      if (up == parent_of.end())
        return std::nullopt;
      pid = up->second;
      if (shown(pid))
        return pid;
    }
    return std::nullopt;
  };
  // The children of each shown node, in the order of the first listed row under them.
  std::map<std::optional<std::int64_t>, std::vector<std::int64_t>> children;
  std::map<std::int64_t, std::vector<const ProcessRow *>> rows_of;
  std::set<std::int64_t> placed;
  std::vector<const ProcessRow *> without_pid;
  for (const ProcessRow &row : listed) {
    if (!row.pid) {
      without_pid.push_back(&row);
      continue;
    }
    rows_of[*row.pid].push_back(&row);
    std::int64_t node = *row.pid;
    while (placed.insert(node).second) {
      std::optional<std::int64_t> up = shown_parent(node);
      children[up].push_back(node);
      if (!up)
        break;
      node = *up;
    }
  }
  std::vector<ProcessRow> out;
  std::set<std::int64_t> visited;
  auto walk = [&](auto &&self, std::int64_t node, int depth) -> void {
    if (!visited.insert(node).second || depth > 64)
      return;
    if (auto found = rows_of.find(node); found != rows_of.end()) {
      for (const ProcessRow *row : found->second) {
        out.push_back(*row);
        out.back().depth = depth;
      }
    } else {
      ProcessRow ancestor;
      ancestor.pid = node;
      ancestor.command = ancestor_name[node];
      ancestor.depth = depth;
      ancestor.listed = false;
      out.push_back(std::move(ancestor));
    }
    for (std::int64_t child : children[node])
      self(self, child, depth + 1);
  };
  for (std::int64_t root : children[std::nullopt])
    walk(walk, root, 0);
  for (const ProcessRow *row : without_pid)
    out.push_back(*row);
  return out;
}

std::vector<ProcessRow> TopModel::process_rows() const {
  std::vector<ProcessRow> rows = listed_rows();
  return tree_ ? as_tree(std::move(rows)) : rows;
}

void TopModel::move_selection(int step) {
  std::vector<ProcessRow> rows = process_rows();
  std::vector<std::size_t> selectable;
  for (std::size_t i = 0; i < rows.size(); ++i)
    if (rows[i].listed && rows[i].pid)
      selectable.push_back(i);
  if (selectable.empty()) {
    selected_.reset();
    return;
  }
  std::optional<std::size_t> now = selected_row(rows);
  std::size_t at = 0;
  if (now) {
    auto here = std::find(selectable.begin(), selectable.end(), *now);
    long moved = static_cast<long>(here - selectable.begin()) + step;
    at = static_cast<std::size_t>(std::clamp(moved, 0L, static_cast<long>(selectable.size()) - 1));
  } else if (step < 0) {
    at = selectable.size() - 1;
  }
  const ProcessRow &row = rows[selectable[at]];
  selected_ = std::make_pair(row.gpu, *row.pid);
}

void TopModel::select_row(std::size_t index) {
  std::vector<ProcessRow> rows = process_rows();
  if (index < rows.size() && rows[index].listed && rows[index].pid)
    selected_ = std::make_pair(rows[index].gpu, *rows[index].pid);
}

std::optional<std::size_t> TopModel::selected_row(const std::vector<ProcessRow> &rows) const {
  if (!selected_)
    return std::nullopt;
  for (std::size_t i = 0; i < rows.size(); ++i)
    if (rows[i].listed && rows[i].gpu == selected_->first && rows[i].pid == selected_->second)
      return i;
  return std::nullopt;
}

std::optional<ProcessRow> TopModel::selected_process() const {
  std::vector<ProcessRow> rows = process_rows();
  std::optional<std::size_t> at = selected_row(rows);
  if (!at)
    return std::nullopt;
  return rows[*at];
}

void TopModel::ask_signal(int signal) {
  std::optional<ProcessRow> process = selected_process();
  if (!process) {
    set_status("select a process first (up/down)", true);
    return;
  }
  pending_ = PendingSignal{signal, std::move(*process)};
}

std::optional<PendingSignal> TopModel::take_pending_signal() {
  std::optional<PendingSignal> taken = std::move(pending_);
  pending_.reset();
  return taken;
}

} // namespace nvsmi
