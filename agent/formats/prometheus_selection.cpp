#include "formats/prometheus_selection.hpp"

#include "nvsmi/utf8.hpp"

#include <algorithm>
#include <map>

namespace nvsmi {

bool family_matches(std::string_view pattern, std::string_view family) {
  if (!pattern.empty() && pattern.back() == '*') {
    pattern.remove_suffix(1);
    return family.substr(0, pattern.size()) == pattern;
  }
  return family == pattern;
}

bool MetricsSelection::includes(std::string_view family) const {
  return include.empty() ||
         std::any_of(include.begin(), include.end(), [family](const std::string &pattern) {
           return family_matches(pattern, family);
         });
}

UserLabels::UserLabels(const Snapshot &snapshot, std::size_t cap) {
  if (cap == 0)
    return;
  std::map<std::string, double> memory; // MiB; unknown memory ranks as none
  for (const Gpu &gpu : snapshot.gpus) {
    if (!gpu.processes)
      continue;
    for (const Process &process : *gpu.processes) {
      if (!process.user || process.user->empty())
        continue;
      double &mib = memory[valid_utf8(*process.user)];
      if (process.used_memory_mib)
        mib += static_cast<double>(*process.used_memory_mib);
    }
  }
  any_ = !memory.empty();
  // A user who calls themself the bucket's name is counted in it: one label, one meaning.
  memory.erase(other_users_label);
  std::vector<std::pair<std::string, double>> ranked(memory.begin(), memory.end());
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const auto &a, const auto &b) { return a.second > b.second; });
  for (std::size_t i = 0; i < ranked.size() && i < cap; ++i)
    named_.insert(ranked[i].first);
}

std::optional<std::string> UserLabels::label(const Text &user) const {
  if (!any_ || !user || user->empty())
    return std::nullopt;
  std::string name = valid_utf8(*user);
  if (named_.count(name))
    return name;
  return std::string(other_users_label);
}

} // namespace nvsmi
