// The name meant (closest_name.hpp), by the optimal string alignment distance.
#include "core/closest_name.hpp"

#include <algorithm>
#include <limits>

namespace nvsmi {
namespace {

// The optimal string alignment distance: the edits (insert, delete, replace, swap two
// neighbours) from `a` to `b`, so that `tpo` is one slip from `top`, as `wach` is from `watch`.
std::size_t edit_distance(const std::string &a, const std::string &b) {
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i)
    d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j)
    d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i)
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t replace = d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, replace});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

} // namespace

std::string without_dashes(const std::string &name) {
  std::size_t start = name.find_first_not_of('-');
  return start == std::string::npos ? std::string() : name.substr(start);
}

std::string closest_name(const std::string &typed, const std::vector<std::string> &candidates) {
  std::string word = without_dashes(typed);
  if (word.empty() || word.size() > 64)
    return "";
  std::size_t allowed = word.size() <= 4 ? 1 : word.size() <= 8 ? 2 : 3;
  std::string best;
  std::size_t best_distance = std::numeric_limits<std::size_t>::max();
  for (const std::string &candidate : candidates) {
    std::string name = without_dashes(candidate);
    std::size_t distance = edit_distance(word, name);
    bool begins = word.size() >= 2 && name.compare(0, word.size(), word) == 0;
    if ((begins || distance <= allowed) && distance < best_distance) {
      best = candidate;
      best_distance = distance;
    }
  }
  return best;
}

} // namespace nvsmi
