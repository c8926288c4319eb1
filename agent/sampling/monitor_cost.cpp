#include "sampling/monitor_cost.hpp"

#include "host/process_reader.hpp"
#include "host/process_tree.hpp"

#include <sys/resource.h>
#include <unistd.h>

namespace nvsmi {
namespace {

using std::chrono::steady_clock;

double own_cpu_seconds() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  auto seconds = [](const timeval &time) {
    return static_cast<double>(time.tv_sec) + static_cast<double>(time.tv_usec) / 1e6;
  };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

} // namespace

MonitorCost::MonitorCost() : reader_(std::make_unique<ProcessReader>()) {
  points_.emplace_back(steady_clock::now(), own_cpu_seconds());
}

MonitorCost::~MonitorCost() = default;

AgentCost MonitorCost::read(const std::vector<CostedStream> &streams) {
  auto asked = steady_clock::now();
  if (last_ && asked - last_->first < std::chrono::seconds(1))
    return last_->second;
  AgentCost cost = read_now(streams);
  last_.emplace(asked, cost);
  return cost;
}

AgentCost MonitorCost::read_now(const std::vector<CostedStream> &streams) {
  // Each running stream with what it started and has not reaped (a wrapper's nvidia-smi, the
  // stand-in's awk): their CPU reaches the child's own count only when they end.
  std::vector<int> pids{static_cast<int>(::getpid())};
  std::vector<std::vector<pid_t>> trees(streams.size());
  for (std::size_t i = 0; i < streams.size(); ++i)
    if (streams[i].running) {
      trees[i] = process_subtree(*streams[i].running);
      pids.insert(pids.end(), trees[i].begin(), trees[i].end());
    }
  std::vector<ProcessFacts> facts = reader_->read(pids);
  auto facts_of = [&](int pid) -> const ProcessFacts * {
    for (const ProcessFacts &fact : facts)
      if (fact.pid == pid)
        return &fact;
    return nullptr;
  };
  double ticks = static_cast<double>(reader_->ticks_per_second());

  AgentCost cost;
  cost.cpu_seconds = own_cpu_seconds();
  if (const ProcessFacts *own = facts_of(pids.front()))
    cost.memory_bytes = own->rss_kib * 1024;
  double total = cost.cpu_seconds;
  for (std::size_t i = 0; i < streams.size(); ++i) {
    const CostedStream &stream = streams[i];
    if (!stream.runs || stream.runs->starts() == 0)
      continue;
    StreamCost figures{stream.name, stream.runs->ended_cpu_seconds(), std::nullopt,
                       stream.runs->starts(), std::nullopt};
    // A run that ended between the list and the read is in neither: its CPU is counted once it
    // is reaped, at the next reading. A process below it that ended meanwhile is in its parent's
    // count once reaped there.
    for (pid_t pid : trees[i])
      if (const ProcessFacts *running = facts_of(pid)) {
        if (ticks > 0)
          figures.cpu_seconds += static_cast<double>(running->cpu_ticks_with_children) / ticks;
        figures.memory_bytes = figures.memory_bytes.value_or(0) + running->rss_kib * 1024;
      }
    total += figures.cpu_seconds;
    cost.streams.push_back(std::move(figures));
  }

  auto now = steady_clock::now();
  // The oldest point no older than the window; where every earlier one is, the newest of them.
  while (points_.size() > 1 && now - points_[1].first >= cost_window)
    points_.pop_front();
  double window = std::chrono::duration<double>(now - points_.front().first).count();
  if (window >= 1 && total >= points_.front().second) {
    cost.core_percent = (total - points_.front().second) / window * 100;
    cost.window_seconds = window;
  }
  // At most a point a second, however often it is asked (a client scraping in a loop).
  if (now - points_.back().first >= std::chrono::seconds(1))
    points_.emplace_back(now, total);
  return cost;
}

} // namespace nvsmi
