// Which families and series /metrics writes (serve's --metrics-* options, docs/SERVE.md "How many
// series"): a site's Prometheus pays for every series of every host, and a label that takes a new
// value for each process (pid) or each user makes series without end.
#pragma once

#include "nvsmi/snapshot.hpp"

#include <cstddef>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace nvsmi {

// The names /metrics writes the GPUs' readings under (serve's --metric-names): the agent's own
// (nvsmi_*, in base units), or the DCGM exporter's (DCGM_FI_*, in its units and with its labels,
// so that dashboards and alerts written for it work unchanged: docs/DCGM.md).
enum class MetricNames { nvsmi, dcgm };

struct MetricsSelection {
  MetricNames names = MetricNames::nvsmi;
  // The per-process families (nvsmi_gpu_process_*): a series per pid, new with every process.
  bool processes = false;
  // Users named in the per-user families (nvsmi_user_*, nvsmi_gpu_user_processes): those holding
  // the most GPU memory; the others are summed under other_users_label. 0: no per-user series.
  std::size_t users = default_metrics_users;
  // Family names, or a prefix ending in '*'; a family none matches is not written (not even its
  // HELP and TYPE). Empty: every family.
  std::vector<std::string> include;

  static constexpr std::size_t default_metrics_users = 10;
  static constexpr std::size_t max_metrics_users = 1000;

  bool includes(std::string_view family) const;
};

// Whether `pattern` (a name, or a prefix ending in '*') matches `family`.
bool family_matches(std::string_view pattern, std::string_view family);

// The user label of the users beyond the cap: a parenthesis no login name has, so that it never
// stands for one user.
constexpr const char *other_users_label = "(other users)";

// The user label each user of a snapshot is written under: the `cap` users holding the most GPU
// memory (then by name) under their own names, every other under other_users_label. Only
// processes whose user is known count (serve drops the users it may not show: serve_exposure).
class UserLabels {
public:
  UserLabels(const Snapshot &snapshot, std::size_t cap);
  // The label for a process's user; none where the user is unknown or the cap is 0.
  std::optional<std::string> label(const Text &user) const;

private:
  std::set<std::string> named_; // by the label's value (valid UTF-8)
  bool any_ = false;
};

} // namespace nvsmi
