// What the report says before its details, the same in every format: the GPUs' states at the
// last sample, how many findings of each severity, and who held each GPU.
#include "core/number_text.hpp"
#include "report/report.hpp"

#include "nvsmi/timestamp.hpp"

#include <array>

namespace nvsmi {
namespace {

std::string hours_text(double seconds) { return number(seconds / 3600, "%.2f h"); }

double slot_seconds(const std::vector<double> &seconds, std::size_t slot) {
  return slot < seconds.size() ? seconds[slot] : 0;
}

} // namespace

std::string last_sample_text(const LastSample &last) {
  return "At the last sample (" + to_iso8601(last.time) + "): " + fleet_summary_text(last.fleet);
}

std::string findings_count_text(const Report &report) {
  std::array<std::size_t, 3> count{}; // by Severity: ok, warning, critical
  for (const GpuSummary &gpu : report.gpus)
    ++count[static_cast<std::size_t>(gpu.finding_severity)];
  for (const UserSummary &user : report.users.users)
    ++count[static_cast<std::size_t>(user.finding_severity)];
  std::string out;
  for (Severity severity : {Severity::critical, Severity::warning, Severity::ok})
    if (std::size_t n = count[static_cast<std::size_t>(severity)])
      out += (out.empty() ? "" : ", ") + std::to_string(n) + " " + severity_name(severity);
  return "findings: " + (out.empty() ? std::string("none") : out);
}

std::string gpu_holders_text(const Report &report, std::size_t position) {
  double listed = slot_seconds(report.users.gpu_listed_seconds, position);
  double unlisted = slot_seconds(report.users.gpu_unlisted_seconds, position);
  if (listed <= 0)
    return "unknown (no process lists)";
  std::string out;
  for (const auto &[user, seconds] : gpu_holders(report.users, position))
    out += (out.empty() ? "" : ", ") + user_label(user) + " " + hours_text(seconds);
  if (out.empty())
    out = "no process in the lists (" + hours_text(listed) + ")";
  if (unlisted > 0)
    out += "; process lists for " + number(listed / 3600, "%.2f") + " of " +
           hours_text(listed + unlisted);
  return out;
}

std::string user_gpus_text(const Report &report, const UserSummary &user) {
  std::string out;
  for (const auto &[slot, seconds] : user.gpu_seconds) {
    std::string gpu =
        slot < report.gpus.size() ? "GPU " + std::to_string(report.gpus[slot].index) : "GPU ?";
    out += (out.empty() ? "" : ", ") + gpu + " " + hours_text(seconds);
  }
  return out;
}

} // namespace nvsmi
