// What `top` shows, apart from how it is drawn: the latest sample and when it came, each GPU's
// recent utilization (for the sparkline), the process rows sorted and filtered as the keys asked,
// and whether the sample is too old to pass for the present. No terminal, no clock of its own:
// the run hands it the time, so that tests can.
#pragma once

#include "nvsmi/snapshot.hpp"

#include <chrono>
#include <cstddef>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace nvsmi {

using TopClock = std::chrono::steady_clock;

// One line of the process table.
struct ProcessRow {
  int gpu = 0;
  Reading pid;
  Text user;
  Reading gpu_memory_mib;
  Reading sm_percent;
  RealReading cpu_percent;
  Reading host_memory_mib;
  Text container;
  Text command; // the command line from /proc, else nvidia-smi's process name
  // When the process started (clock ticks after boot, /proc/PID/stat), read as the sample came:
  // a signal goes to the pid only while it still has this start, never to a reused pid.
  std::optional<std::uint64_t> start_ticks;
  int depth = 0;      // in the tree view: how many shown ancestors it has
  bool listed = true; // false: an ancestor shown only for the tree (not a GPU process)
};

// What /proc says of a listed pid when its sample comes (the model reads no /proc: the command
// does, and hands it over with the sample).
struct ProcessLineage {
  std::optional<std::uint64_t> start_ticks;
  // Its ancestors, nearest first, each with the kernel's short name, for the tree view.
  std::vector<std::pair<std::int64_t, std::string>> ancestors;
};
using Lineages = std::map<std::int64_t, ProcessLineage>;

// One point of a GPU's utilization history: when its sample came, and the reading.
struct HistoryPoint {
  TopClock::time_point at;
  Reading utilization;
};

// A signal asked for and not yet confirmed: the process as the screen showed it.
struct PendingSignal {
  int signal = 0;
  ProcessRow process;
};

enum class SortKey { gpu_memory, cpu, sm, pid, user };

// A GPU that was in an earlier sample and is missing from the latest one (fallen off the bus).
struct LostGpu {
  int index = 0;
  Text name;
};

class TopModel {
public:
  // Utilization samples kept per GPU: an hour at one a second, more than the widest screen shows.
  static constexpr std::size_t history_length = 3600;
  // GPUs remembered so that one that vanishes shows as lost (more than any machine holds).
  static constexpr std::size_t max_remembered_gpus = 256;

  explicit TopModel(std::chrono::milliseconds interval);

  void add_sample(Snapshot snapshot, TopClock::time_point now, Lineages lineages = {});
  // The ancestors of `lineages` given to the latest sample's pids (read when the tree view is
  // turned on); their starts are left as the sample had them.
  void add_ancestors(const Lineages &lineages);
  std::chrono::milliseconds interval() const { return interval_; }
  // The sample interval in force (--cpu-budget may lengthen it), and when a sample is late.
  void set_interval(std::chrono::milliseconds interval);
  const std::optional<Snapshot> &latest() const { return latest_; }
  // The monitor's own cost as last read (a sample carries it every few seconds).
  const std::optional<AgentCost> &cost() const { return cost_; }
  // How long ago the latest sample came (nullopt before the first).
  std::optional<std::chrono::milliseconds> sample_age(TopClock::time_point now) const;
  // No sample yet, or the latest is older than 3 intervals (at least 3 s): its readings are no
  // longer the present.
  bool late(TopClock::time_point now) const;
  std::chrono::milliseconds late_after() const { return late_after_; }

  // Oldest first; nullopt where the reading was unknown.
  const std::deque<HistoryPoint> &utilization_history(int gpu) const;
  // When each sample came, oldest first (as many as a GPU's history holds): the history chart's
  // columns, one a sample, so that a GPU missing from some samples is blank where it was missing
  // rather than drawn a column late.
  const std::deque<TopClock::time_point> &sample_times() const { return sample_times_; }
  std::vector<LostGpu> lost_gpus() const;

  // The same key again reverses the order; a new key starts in its natural order (largest first
  // for quantities, smallest first for pid and user). Unknown values are last either way.
  void sort_by(SortKey key);
  SortKey sort_key() const { return sort_key_; }
  bool sort_descending() const;
  // all, then each GPU of the latest sample in turn, then all again.
  void cycle_gpu_filter();
  // Only GPU `index`'s processes (a click on its row), or all again when they are all it shows.
  void toggle_gpu_filter(int index);
  // all, then each user of the latest sample's processes (by name), then all again.
  void cycle_user_filter();
  void clear_filters();
  const std::optional<int> &gpu_filter() const { return gpu_filter_; }
  const std::optional<std::string> &user_filter() const { return user_filter_; }
  // The GPU processes, sorted and filtered; in the tree view each under its parent, with the
  // ancestors that are not GPU processes as rows of their own (`listed` false).
  std::vector<ProcessRow> process_rows() const;

  // The selected process row (a GPU process of the latest sample), found again by GPU and pid in
  // each sample; none when it has gone. `move_selection` selects the first row when none is.
  void move_selection(int rows);
  void clear_selection() { selected_.reset(); }
  // Selects row `index` of process_rows() (a click), where it is a GPU process.
  void select_row(std::size_t index);
  std::optional<std::size_t> selected_row(const std::vector<ProcessRow> &rows) const;
  std::optional<ProcessRow> selected_process() const;

  // A signal for the selected process, waiting for the person's yes; nullopt when none is.
  void ask_signal(int signal);
  const std::optional<PendingSignal> &pending_signal() const { return pending_; }
  std::optional<PendingSignal> take_pending_signal();
  void cancel_signal() { pending_.reset(); }
  // What became of the last signal (or any note for the person), shown until the next key.
  void set_status(std::string text, bool failed) { status_ = {std::move(text), failed}; }
  void clear_status() { status_.reset(); }
  const std::optional<std::pair<std::string, bool>> &status() const { return status_; }

  void toggle_help() { help_ = !help_; }
  bool help() const { return help_; }
  void toggle_tree() { tree_ = !tree_; }
  bool tree() const { return tree_; }
  void toggle_compact() { compact_ = !compact_; }
  bool compact() const { return compact_; }

  // The sampler's latest message (nvidia-smi restarted, failed), shown until the next sample.
  void set_message(std::string message) { message_ = std::move(message); }
  const std::optional<std::string> &message() const { return message_; }

private:
  std::vector<ProcessRow> listed_rows() const;
  std::vector<ProcessRow> as_tree(std::vector<ProcessRow> rows) const;

  std::chrono::milliseconds interval_;
  std::chrono::milliseconds late_after_;
  Lineages lineages_;
  std::optional<Snapshot> latest_;
  std::optional<AgentCost> cost_;
  TopClock::time_point latest_at_{};
  std::map<int, std::deque<HistoryPoint>> history_;
  std::deque<TopClock::time_point> sample_times_;
  std::map<int, Text> seen_gpus_;
  SortKey sort_key_ = SortKey::gpu_memory;
  bool reversed_ = false;
  std::optional<int> gpu_filter_;
  std::optional<std::string> user_filter_;
  std::optional<std::string> message_;
  std::optional<std::pair<int, std::int64_t>> selected_; // GPU, pid
  std::optional<PendingSignal> pending_;
  std::optional<std::pair<std::string, bool>> status_;
  bool help_ = false, tree_ = false, compact_ = false;
};

} // namespace nvsmi
