#include "report/report_jobs.hpp"

#include "report/report.hpp"

#include "core/mig_text.hpp"

#include "nvsmi/thresholds.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <tuple>

namespace nvsmi {
namespace {

// The job findings' own rules (README "report" beside the GPUs' and users'); idle and the
// allocated-but-idle time are nvsmi/thresholds.hpp's, as every view has them.
namespace job_rules {
constexpr double unused_share_percent = 50;    // of the held time with a process list
constexpr double idle_share_percent = 50;      // of the held time with a utilization reading
constexpr double small_memory_fraction = 0.25; // peak of total on every GPU: a smaller GPU does
} // namespace job_rules

std::string percent_text(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.0f %%", value);
  return text;
}

std::string gib_text(std::int64_t mib) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f GiB", static_cast<double>(mib) / 1024);
  return text;
}

} // namespace

std::string held_name(const BatchJobGpu &held) {
  if (!held.mig_index)
    return "GPU " + std::to_string(held.index);
  std::string name = mig_instance_name(held.index, held.mig_index);
  return held.mig_profile ? name + " (" + mig_profile_text(*held.mig_profile) + ")" : name;
}

std::string held_list_text(const std::vector<BatchJobGpu> &held) {
  std::string list;
  for (const BatchJobGpu &each : held)
    list += (list.empty() ? "" : ", ") +
            (each.mig_index ? held_name(each) : std::to_string(each.index));
  return list;
}

std::string held_count_text(const std::vector<BatchJobGpu> &held) {
  std::size_t instances = 0;
  for (const BatchJobGpu &each : held)
    instances += each.mig_index ? 1 : 0;
  std::size_t gpus = held.size() - instances;
  auto count = [](std::size_t n, const char *one, const char *many) {
    return std::to_string(n) + (n == 1 ? one : many);
  };
  std::string gpu_text = count(gpus, " GPU", " GPUs");
  if (instances == 0)
    return gpu_text;
  std::string instance_text = count(instances, " MIG instance", " MIG instances");
  return gpus == 0 ? instance_text : gpu_text + " and " + instance_text;
}

std::optional<double> BatchJob::utilization_percent() const {
  if (utilization_known_seconds <= 0)
    return std::nullopt;
  return utilization_sum / utilization_known_seconds;
}

std::optional<double> BatchJob::energy_wh() const {
  if (energy_known_seconds <= 0)
    return std::nullopt;
  return energy_joules / 3600;
}

double BatchJob::wall_seconds() const {
  double longest = 0;
  for (const BatchJobGpu &gpu : gpus)
    longest = std::max(longest, gpu.seconds);
  return longest;
}

void BatchJobLedger::add(const BatchJobStretch &stretch) {
  if (!stretch.allocation)
    return;
  const Allocation &allocation = *stretch.allocation;
  std::string key = allocation.scheduler + "\n" + allocation.job_id;
  auto found = jobs_.find(key);
  if (found == jobs_.end()) {
    if (jobs_.size() >= report_max_jobs) {
      ++left_out_;
      return;
    }
    order_.emplace(key, order_.size());
    found = jobs_.emplace(key, BatchJob{}).first;
    found->second.job_id = allocation.job_id;
    found->second.scheduler = allocation.scheduler;
  }
  BatchJob &job = found->second;
  if (!job.user)
    job.user = allocation.user;
  if (!job.account)
    job.account = allocation.account;
  if (!job.first || earlier(stretch.end, *job.first))
    job.first = stretch.end;
  if (!job.last || earlier(*job.last, stretch.end))
    job.last = stretch.end;
  // A GPU, or one of its instances: each its own entry, in GPU then instance order.
  auto same = [&](const BatchJobGpu &held) {
    return held.index == stretch.gpu_index && held.mig_index == stretch.mig_index;
  };
  auto gpu = std::find_if(job.gpus.begin(), job.gpus.end(), same);
  if (gpu == job.gpus.end()) {
    job.gpus.push_back(
        {stretch.gpu_index, 0, std::nullopt, std::nullopt, stretch.mig_index, stretch.mig_profile});
    std::sort(job.gpus.begin(), job.gpus.end(), [](const BatchJobGpu &a, const BatchJobGpu &b) {
      return std::tie(a.index, a.mig_index) < std::tie(b.index, b.mig_index);
    });
    gpu = std::find_if(job.gpus.begin(), job.gpus.end(), same);
  }
  double d = stretch.seconds;
  gpu->seconds += d;
  if (stretch.memory_used &&
      (!gpu->peak_memory_mib || *stretch.memory_used > *gpu->peak_memory_mib))
    gpu->peak_memory_mib = stretch.memory_used;
  if (stretch.memory_total)
    gpu->memory_total_mib = stretch.memory_total;
  job.held_seconds += d;
  if (stretch.utilization) {
    job.utilization_sum += static_cast<double>(*stretch.utilization) * d;
    job.utilization_known_seconds += d;
    job.idle.known_seconds += d;
    if (static_cast<double>(*stretch.utilization) < gpu_thresholds::idle_below_percent)
      job.idle.seconds += d;
  }
  if (stretch.compute_process) {
    job.unused.known_seconds += d;
    if (!*stretch.compute_process)
      job.unused.seconds += d;
  }
  if (stretch.joules) {
    job.energy_joules += *stretch.joules;
    job.energy_known_seconds += d;
  }
  if (stretch.sample)
    job.activity.add(*stretch.sample, d);
}

BatchJobLedgerSummary BatchJobLedger::finish() const {
  BatchJobLedgerSummary summary;
  summary.left_out = left_out_;
  std::vector<std::pair<std::size_t, const BatchJob *>> ordered;
  for (const auto &[key, job] : jobs_)
    ordered.emplace_back(order_.at(key), &job);
  std::sort(ordered.begin(), ordered.end());
  for (const auto &entry : ordered) {
    BatchJob job = *entry.second;
    judge_job(job);
    summary.jobs.push_back(std::move(job));
  }
  return summary;
}

std::vector<BatchAccount> roll_up_accounts(const std::vector<BatchJob> &jobs) {
  std::map<std::optional<std::string>, BatchAccount> by_account;
  auto add = [](std::optional<double> &total, double seconds) {
    total = total.value_or(0) + seconds;
  };
  for (const BatchJob &job : jobs) {
    BatchAccount &account = by_account[job.account];
    account.account = job.account;
    ++account.jobs;
    account.held_seconds += job.held_seconds;
    if (job.unused.known_seconds > 0) {
      add(account.used_seconds, job.unused.known_seconds - job.unused.seconds);
      add(account.unused_seconds, job.unused.seconds);
    }
    if (job.idle.known_seconds > 0)
      add(account.idle_seconds, job.idle.seconds);
  }
  std::vector<BatchAccount> out;
  for (auto &entry : by_account) // nullopt sorts first: moved to the end below
    out.push_back(std::move(entry.second));
  if (!out.empty() && !out.front().account)
    std::rotate(out.begin(), out.begin() + 1, out.end());
  return out;
}

void judge_job(BatchJob &job) {
  job.activity_finding = activity_finding(job.activity.figures());
  std::optional<double> unused = job.unused.percent(), idle = job.idle.percent();
  std::string gpus = held_count_text(job.gpus);
  if (unused && *unused >= job_rules::unused_share_percent &&
      job.unused.seconds >= static_cast<double>(gpu_thresholds::allocated_idle_after_s)) {
    job.finding = {Severity::warning, "allocated but unused: no process on its " + gpus + " for " +
                                          percent_text(*unused) + " of the time (" +
                                          describe_duration(job.unused.seconds) + " GPU time)"};
    job.advice = "ask for fewer GPUs (--gres=gpu:N), or check that the job starts work on every "
                 "GPU it is given (CUDA_VISIBLE_DEVICES)";
    return;
  }
  if (idle && *idle >= job_rules::idle_share_percent) {
    job.finding = {Severity::warning,
                   "idle: utilization under " + percent_text(gpu_thresholds::idle_below_percent) +
                       " on its " + gpus + " for " + percent_text(*idle) + " of the time"};
    job.advice = "find what the job waits on (data loading, CPU, I/O, a lock); the report's "
                 "per-GPU findings say which where the log has the host's CPU";
    return;
  }
  bool small = !job.gpus.empty() &&
               job.wall_seconds() >= static_cast<double>(gpu_thresholds::allocated_idle_after_s);
  std::int64_t peak = 0, total = 0;
  for (const BatchJobGpu &gpu : job.gpus) {
    if (!gpu.peak_memory_mib || !gpu.memory_total_mib || *gpu.memory_total_mib <= 0) {
      small = false;
      continue;
    }
    peak = std::max(peak, *gpu.peak_memory_mib);
    total = std::max(total, *gpu.memory_total_mib);
    if (static_cast<double>(*gpu.peak_memory_mib) >=
        job_rules::small_memory_fraction * static_cast<double>(*gpu.memory_total_mib))
      small = false;
  }
  std::optional<double> utilization = job.utilization_percent();
  std::string used = utilization ? "used its " + gpus + ": " + percent_text(*utilization) +
                                       " utilization on average"
                                 : "held " + gpus + "; utilization unknown";
  if (small) {
    job.finding = {Severity::ok,
                   used + "; peak memory " + gib_text(peak) + " of " + gib_text(total)};
    bool instances = std::any_of(job.gpus.begin(), job.gpus.end(), [](const BatchJobGpu &held) {
      return held.mig_index.has_value();
    });
    job.advice = instances ? "a MIG instance of a smaller profile would do for this job"
                           : "a GPU with less memory, or a MIG slice, would do for this job";
    return;
  }
  job.finding = {Severity::ok, used};
}

} // namespace nvsmi
