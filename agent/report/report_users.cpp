#include "report/report_users.hpp"

#include <algorithm>

namespace nvsmi {
namespace {

// Whether the known part falls short of the whole. Both are sums of the same stretches in the
// same order, so equal when nothing was unknown; the margin does not rely on that.
bool short_of(double part, double whole) { return part < whole * (1 - 1e-9); }

} // namespace

bool UserSummary::idle_partly_unknown() const { return short_of(idle_known_seconds, held_seconds); }
bool UserSummary::memory_partly_unknown() const { return memory_unknown_seconds > 0; }
bool UserSummary::energy_partly_unknown() const {
  return short_of(energy_known_seconds, held_seconds);
}

std::optional<double> UserSummary::idle_percent() const {
  if (idle_known_seconds <= 0)
    return std::nullopt;
  return 100 * idle_seconds / idle_known_seconds;
}

std::optional<double> UserSummary::memory_gib_hours() const {
  if (memory_known_seconds <= 0)
    return std::nullopt;
  return memory_mib_seconds / 1024 / 3600;
}

std::optional<double> UserSummary::energy_wh() const {
  if (energy_known_seconds <= 0)
    return std::nullopt;
  return energy_joules / 3600;
}

std::optional<GpuUsers> gpu_users(const Gpu &gpu) {
  if (!gpu.processes)
    return std::nullopt;
  std::map<Text, GpuUser> by_user; // a user with several processes holds the GPU once
  for (const Process &process : *gpu.processes) {
    GpuUser &entry = by_user[process.user];
    entry.user = process.user;
    if (process.used_memory_mib) {
      entry.memory_mib += *process.used_memory_mib;
      entry.memory_known = true;
    } else {
      entry.memory_unknown = true;
    }
  }
  GpuUsers users;
  for (auto &named : by_user)
    users.push_back(std::move(named.second));
  return users;
}

void UserLedger::add(const std::optional<GpuUsers> &users, const GpuStretch &stretch) {
  double seconds = stretch.seconds;
  std::size_t slots = std::max(totals_.gpu_listed_seconds.size(), stretch.gpu_slot + 1);
  totals_.gpu_listed_seconds.resize(slots);
  totals_.gpu_unlisted_seconds.resize(slots);
  if (!users) {
    totals_.unlisted_seconds += seconds;
    totals_.gpu_unlisted_seconds[stretch.gpu_slot] += seconds;
    return;
  }
  totals_.listed_seconds += seconds;
  totals_.gpu_listed_seconds[stretch.gpu_slot] += seconds;
  if (users->empty()) {
    totals_.no_process_joules += stretch.joules.value_or(0);
    return;
  }
  // The GPU's energy goes to its users by their share of the memory its processes hold. A sole
  // user takes it all. Among several, each share must be known: when a process's memory is
  // unknown, or all hold none, the energy is counted as not split rather than split by a guess.
  double total_mib = 0;
  bool shares_known = true;
  for (const GpuUser &user : *users) {
    total_mib += static_cast<double>(user.memory_mib);
    shares_known = shares_known && !user.memory_unknown;
  }
  shares_known = users->size() == 1 || (shares_known && total_mib > 0);
  if (stretch.joules && !shares_known)
    totals_.unsplit_joules += *stretch.joules;

  for (const GpuUser &user : *users) {
    auto found = users_.find(user.user);
    if (found == users_.end()) {
      if (users_.size() >= report_max_users) {
        totals_.left_out_seconds += seconds;
        continue;
      }
      found = users_.emplace(user.user, Entry{}).first;
      found->second.figures.user = user.user;
    }
    UserSummary &figures = found->second.figures;
    found->second.gpus.set(stretch.gpu_slot);
    found->second.gpu_seconds[stretch.gpu_slot] += seconds;
    figures.held_seconds += seconds;
    if (stretch.idle) {
      figures.idle_known_seconds += seconds;
      figures.idle_seconds += *stretch.idle ? seconds : 0;
    }
    figures.memory_mib_seconds += static_cast<double>(user.memory_mib) * seconds;
    figures.memory_known_seconds += user.memory_known ? seconds : 0;
    figures.memory_unknown_seconds += user.memory_unknown ? seconds : 0;
    if (stretch.joules && shares_known) {
      double share = users->size() == 1 ? 1.0 : static_cast<double>(user.memory_mib) / total_mib;
      figures.energy_joules += *stretch.joules * share;
      figures.energy_known_seconds += seconds;
    }
  }
}

UserLedgerSummary UserLedger::finish() const {
  UserLedgerSummary out = totals_;
  for (const auto &entry : users_) {
    out.users.push_back(entry.second.figures);
    out.users.back().gpus = static_cast<int>(entry.second.gpus.count());
    for (std::size_t slot = 0; slot < max_gpus; ++slot)
      if (entry.second.gpus.test(slot))
        out.users.back().gpu_seconds.emplace_back(slot, entry.second.gpu_seconds[slot]);
  }
  std::stable_sort(out.users.begin(), out.users.end(),
                   [](const UserSummary &a, const UserSummary &b) {
                     if (a.held_seconds != b.held_seconds)
                       return a.held_seconds > b.held_seconds;
                     return bool(a.user) > bool(b.user); // the unknown user after named ones
                   });
  return out;
}

std::vector<std::pair<Text, double>> gpu_holders(const UserLedgerSummary &ledger,
                                                 std::size_t gpu_slot) {
  std::vector<std::pair<Text, double>> holders;
  for (const UserSummary &user : ledger.users) // most GPU-hours first, the unknown user last
    for (const auto &[slot, seconds] : user.gpu_seconds)
      if (slot == gpu_slot)
        holders.emplace_back(user.user, seconds);
  std::stable_sort(holders.begin(), holders.end(),
                   [](const auto &a, const auto &b) { return a.second > b.second; });
  return holders;
}

std::string user_label(const Text &user) { return user ? *user : "(unknown user)"; }

} // namespace nvsmi
