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
};

enum class SortKey { gpu_memory, cpu, sm, pid, user };

// A GPU that was in an earlier sample and is missing from the latest one (fallen off the bus).
struct LostGpu {
  int index = 0;
  Text name;
};

class TopModel {
public:
  // Utilization samples kept per GPU: five minutes at one a second.
  static constexpr std::size_t history_length = 300;
  // GPUs remembered so that one that vanishes shows as lost (more than any machine holds).
  static constexpr std::size_t max_remembered_gpus = 256;

  explicit TopModel(std::chrono::milliseconds interval);

  void add_sample(Snapshot snapshot, TopClock::time_point now);
  const std::optional<Snapshot> &latest() const { return latest_; }
  // How long ago the latest sample came (nullopt before the first).
  std::optional<std::chrono::milliseconds> sample_age(TopClock::time_point now) const;
  // No sample yet, or the latest is older than 3 intervals (at least 3 s): its readings are no
  // longer the present.
  bool late(TopClock::time_point now) const;
  std::chrono::milliseconds late_after() const { return late_after_; }

  // Oldest first; nullopt where the reading was unknown.
  const std::deque<Reading> &utilization_history(int gpu) const;
  std::vector<LostGpu> lost_gpus() const;

  // The same key again reverses the order; a new key starts in its natural order (largest first
  // for quantities, smallest first for pid and user). Unknown values are last either way.
  void sort_by(SortKey key);
  SortKey sort_key() const { return sort_key_; }
  bool sort_descending() const;
  // all, then each GPU of the latest sample in turn, then all again.
  void cycle_gpu_filter();
  // all, then each user of the latest sample's processes (by name), then all again.
  void cycle_user_filter();
  void clear_filters();
  const std::optional<int> &gpu_filter() const { return gpu_filter_; }
  const std::optional<std::string> &user_filter() const { return user_filter_; }
  std::vector<ProcessRow> process_rows() const;

  // First process row shown; the layout clamps it to what fits.
  void scroll(int rows);
  int scroll_offset() const { return scroll_; }

  // The sampler's latest message (nvidia-smi restarted, failed), shown until the next sample.
  void set_message(std::string message) { message_ = std::move(message); }
  const std::optional<std::string> &message() const { return message_; }

private:
  std::chrono::milliseconds late_after_;
  std::optional<Snapshot> latest_;
  TopClock::time_point latest_at_{};
  std::map<int, std::deque<Reading>> history_;
  std::map<int, Text> seen_gpus_;
  SortKey sort_key_ = SortKey::gpu_memory;
  bool reversed_ = false;
  std::optional<int> gpu_filter_;
  std::optional<std::string> user_filter_;
  int scroll_ = 0;
  std::optional<std::string> message_;
};

} // namespace nvsmi
