// The per-user ledger: from the process lists of a `watch --json-log`, who held which GPUs for how
// long, how much of that time idle, how much memory and how much energy. Gathered in one pass; its
// memory grows with the number of users (at most report_max_users), never with the log.
#pragma once

#include "report/report_severity.hpp"

#include "nvsmi/snapshot.hpp"

#include <array>
#include <bitset>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace nvsmi {

constexpr std::size_t report_max_users = 1024;

// One user's processes on one GPU in one sample.
struct GpuUser {
  Text user;                   // nullopt: the processes' user is unknown
  std::int64_t memory_mib = 0; // the used memory of those processes that have a reading
  bool memory_known = false;   // at least one of them has a reading
  bool memory_unknown = false; // at least one of them has none
};
using GpuUsers = std::vector<GpuUser>;

// The users of a GPU's processes, one entry each, in the order of their names. nullopt when the
// sample has no process list (a CSV log; the JSON log of `--source csv`): nothing is known of who
// used the GPU then, which is not the same as nobody.
std::optional<GpuUsers> gpu_users(const Gpu &gpu);

// One stretch of a GPU's covered time, exactly as the GPU's own figures count it (GpuStats).
struct GpuStretch {
  std::size_t gpu_slot = 0; // which GPU, < UserLedger::max_gpus
  double seconds = 0;
  std::optional<bool> idle;     // utilization under 5 %; nullopt when utilization is unknown
  std::optional<double> joules; // power x seconds; nullopt when power is unknown
};

// A user's figures; a "GPU-second" is one GPU held for one second.
struct UserSummary {
  Text user;    // nullopt: processes whose user is unknown, "(unknown user)"
  int gpus = 0; // GPUs held at some time
  // The GPUs held, as their GpuStretch::gpu_slot (a GPU's place in Report::gpus), with the
  // seconds held on each, in slot order.
  std::vector<std::pair<std::size_t, double>> gpu_seconds;
  double held_seconds = 0;
  double idle_seconds = 0, idle_known_seconds = 0; // held with utilization under 5 %, and known
  double memory_mib_seconds = 0;                   // the processes' used memory x time
  double memory_known_seconds = 0, memory_unknown_seconds = 0; // held with a process's memory
                                                               // known, unknown (both may hold)
  double energy_joules = 0, energy_known_seconds = 0; // the user's share; held with it known
  std::string finding;
  Severity finding_severity = Severity::ok;

  std::optional<double> idle_percent() const;     // of the held time whose utilization is known
  std::optional<double> memory_gib_hours() const; // nullopt when no process had a reading
  std::optional<double> energy_wh() const;        // nullopt when no share could be told
  // Whether the figure counts only part of the held time (the rest unknown).
  bool idle_partly_unknown() const;
  bool memory_partly_unknown() const;
  bool energy_partly_unknown() const;
};

struct UserLedgerSummary {
  std::vector<UserSummary> users; // most GPU-hours first
  double listed_seconds = 0;      // GPU-seconds covered with a process list
  double unlisted_seconds = 0;    // GPU-seconds covered without one
  double unsplit_joules = 0;      // energy of shared GPUs whose users' shares could not be told
  double no_process_joules = 0;   // energy of GPUs whose list was empty
  double left_out_seconds = 0;    // held by users past the first report_max_users
  // Per GPU slot (index: GpuStretch::gpu_slot; as many as the highest slot counted): its seconds
  // covered with a process list and without one, so that a GPU nobody held is told from one
  // whose holders the log does not name.
  std::vector<double> gpu_listed_seconds, gpu_unlisted_seconds;
};

// Who held the GPU in `gpu_slot`, and for how many seconds, most first (the unknown user after
// named ones at a tie).
std::vector<std::pair<Text, double>> gpu_holders(const UserLedgerSummary &ledger,
                                                 std::size_t gpu_slot);

class UserLedger {
public:
  static constexpr std::size_t max_gpus = 64;

  // Counts the stretch for each of `users`; `users` nullopt: the GPU had no process list.
  void add(const std::optional<GpuUsers> &users, const GpuStretch &stretch);
  UserLedgerSummary finish() const;

private:
  struct Entry {
    UserSummary figures;
    std::bitset<max_gpus> gpus;
    std::array<double, max_gpus> gpu_seconds{};
  };
  std::map<Text, Entry> users_;
  UserLedgerSummary totals_;
};

// The label a person reads for a user: the name, or "(unknown user)" for nullopt.
std::string user_label(const Text &user);

} // namespace nvsmi
