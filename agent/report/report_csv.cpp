// `report --by-job --format csv`: the accounting rows a site's reports read, one per job: the
// GPU-hours each job held, used (a compute process on the GPU), left idle and left unused, and its
// energy. Every value is of a checked form (a job id's digits, an account name, ISO 8601 times,
// numbers), so none needs quoting; an unknown one is an empty field, never 0. The same per account
// (`--by-account`): the roll-up a site charges its accounts by.
#include "report/report.hpp"

#include "core/number_text.hpp"
#include "nvsmi/timestamp.hpp"

namespace nvsmi {
namespace {

std::string hours(std::optional<double> seconds) {
  return seconds ? number(*seconds / 3600, "%.3f") : "";
}

} // namespace

std::string format_jobs_csv(const Report &report) {
  std::string out = "job_id,scheduler,user,account,gpus,first,last,held_gpu_hours,used_gpu_hours,"
                    "idle_gpu_hours,unused_gpu_hours,energy_wh\n";
  for (const BatchJob &job : report.jobs.jobs) {
    bool listed = job.unused.known_seconds > 0, read = job.idle.known_seconds > 0;
    std::optional<double> energy = job.energy_wh();
    out += job.job_id + "," + job.scheduler + "," + job.user.value_or("") + "," +
           job.account.value_or("") + "," + std::to_string(job.gpus.size()) + "," +
           (job.first ? to_iso8601(*job.first) : "") + "," +
           (job.last ? to_iso8601(*job.last) : "") + "," + hours(job.held_seconds) + "," +
           hours(listed ? std::optional<double>(job.unused.known_seconds - job.unused.seconds)
                        : std::nullopt) +
           "," + hours(read ? std::optional<double>(job.idle.seconds) : std::nullopt) + "," +
           hours(listed ? std::optional<double>(job.unused.seconds) : std::nullopt) + "," +
           (energy ? number(*energy, "%.3f") : "") + "\n";
  }
  return out;
}

std::string format_accounts_csv(const Report &report) {
  std::string out = "account,jobs,held_gpu_hours,used_gpu_hours,idle_gpu_hours,unused_gpu_hours\n";
  for (const BatchAccount &account : roll_up_accounts(report.jobs.jobs))
    out += account.account.value_or("") + "," + std::to_string(account.jobs) + "," +
           hours(account.held_seconds) + "," + hours(account.used_seconds) + "," +
           hours(account.idle_seconds) + "," + hours(account.unused_seconds) + "\n";
  return out;
}

} // namespace nvsmi
