// `report --format text`: what a person reads in a terminal.
#include "core/number_text.hpp"
#include "core/screen_text.hpp"
#include "report/report.hpp"
#include "report/report_job.hpp"

#include "nvsmi/allocation.hpp"
#include "nvsmi/thresholds.hpp"
#include "nvsmi/timestamp.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace nvsmi {
namespace {

std::string percent(std::optional<double> value) {
  return value ? number(*value, "%.1f%%") : "unknown";
}
std::string whole_percent(const std::optional<int> &value) {
  return value ? std::to_string(*value) + "%" : "unknown";
}
std::string whole_percent(const Reading &value) {
  return value ? std::to_string(*value) + "%" : "unknown";
}
std::string with_unit(const std::optional<double> &value, const char *format) {
  return value ? number(*value, format) : "unknown";
}
std::string whole_with_unit(const Reading &value, const std::string &unit) {
  return value ? std::to_string(*value) + unit : "unknown";
}

std::string share(const TimeShare &share) {
  return share.percent() ? percent(share.percent()) + " of the time" : "unknown";
}

void line(std::string &out, const char *label, const std::string &text) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "  %-13s", label);
  out += buffer;
  out += marked_text(text);
  out += '\n';
}

void gpu_section(std::string &out, const Report &report, std::size_t position) {
  const GpuSummary &gpu = report.gpus[position];
  out += "\nGPU " + std::to_string(gpu.index);
  if (gpu.name)
    out += "  " + marked_text(*gpu.name);
  if (gpu.uuid)
    out += "  " + marked_text(*gpu.uuid);
  out += '\n';

  line(out, "holders", gpu_holders_text(report, position));
  line(out, "time", to_iso8601(gpu.first) + " to " + to_iso8601(gpu.last));
  std::string coverage = describe_duration(gpu.covered_seconds) + " covered by " +
                         std::to_string(gpu.samples) + " samples";
  if (gpu.interval)
    coverage += ", every " + describe_duration(*gpu.interval);
  if (gpu.gaps == 0)
    coverage += "; no gaps";
  else
    coverage += "; " + std::to_string(gpu.gaps) + (gpu.gaps == 1 ? " gap" : " gaps") + " (" +
                describe_duration(gpu.gap_seconds) + ", longest " +
                describe_duration(gpu.longest_gap_seconds) + ") not counted";
  line(out, "", coverage);

  line(out, "utilization",
       "mean " + percent(gpu.utilization_mean) + ", median " +
           whole_percent(gpu.utilization_median) + ", p95 " + whole_percent(gpu.utilization_p95) +
           ", max " + whole_percent(gpu.utilization_max));
  if (gpu.counted_utilization_mean) {
    // The agent's counters hold every sample it read: a log that lost some says another mean.
    std::string counted = "counted by the agent: mean " + percent(gpu.counted_utilization_mean) +
                          " over " + describe_duration(gpu.counted_seconds);
    std::optional<bool> agrees = counted_agrees(gpu);
    if (agrees && *agrees)
      counted += ", as the logged samples say";
    else if (agrees)
      counted +=
          "; the logged samples' " + percent(gpu.utilization_mean) + " miss some of what it read";
    line(out, "", counted);
  }
  std::string starved = "starved " + share(gpu.starved);
  if (gpu.starved_memory_mean_mib)
    starved += number(*gpu.starved_memory_mean_mib, " (holding %.0f MiB on average, ") +
               number(gpu_thresholds::starved_below_percent, "under %.0f%%)");
  line(out, "",
       "idle " + share(gpu.idle) + ", idle but held " + share(gpu.idle_held) + ", " + starved);

  if (gpu.memory_peak_mib) {
    std::string memory = "peak " + std::to_string(*gpu.memory_peak_mib) + " MiB";
    if (gpu.memory_total_mib && *gpu.memory_total_mib > 0) {
      double total = static_cast<double>(*gpu.memory_total_mib);
      double peak = static_cast<double>(*gpu.memory_peak_mib);
      memory += " of " + std::to_string(*gpu.memory_total_mib) + " MiB (" +
                percent(100 * peak / total) + "), headroom " +
                std::to_string(*gpu.memory_total_mib - *gpu.memory_peak_mib) + " MiB (" +
                percent(100 * (total - peak) / total) + ")";
    } else {
      memory += ", total unknown";
    }
    line(out, "memory", memory);
  } else {
    line(out, "memory", "unknown");
  }

  line(out, "power",
       "mean " + with_unit(gpu.power_mean_w, "%.1f W") + ", max " +
           with_unit(gpu.power_max_w, "%.1f W") + ", energy " +
           with_unit(gpu.energy_wh, "%.2f Wh"));
  line(out, "temperature",
       "mean " + with_unit(gpu.temperature_mean_c, "%.1f C") + ", max " +
           whole_with_unit(gpu.temperature_max_c, " C"));
  std::string fields = latest_fields_text(gpu.latest_fields);
  if (!fields.empty())
    line(out, "health", fields);
  line(out, "throttling",
       "at the power limit: " + share(gpu.power_capped) +
           "; busy in a slow pstate: " + share(gpu.slow_pstate));
  std::string host_cpus = describe_starved_host_cpus(gpu);
  if (!host_cpus.empty())
    line(out, "host CPUs", host_cpus);
  line(out, "finding", std::string(severity_name(gpu.finding_severity)) + ": " + gpu.finding);
}

// A figure of the ledger's table, right-aligned in `width`, with `*` when it counts only part of
// the user's time (then `starred` is set).
std::string cell(const std::optional<double> &value, const char *format, bool partial, int width,
                 bool &starred) {
  std::string text = value ? number(*value, format) + (partial ? "*" : " ") : "unknown ";
  starred = starred || (value && partial);
  if (text.size() < static_cast<std::size_t>(width))
    text.insert(0, static_cast<std::size_t>(width) - text.size(), ' ');
  return text;
}

void users_section(std::string &out, const Report &report) {
  const UserLedgerSummary &ledger = report.users;
  out += "\nUsers (a GPU counts for a user while one of the user's processes is on it)\n";
  out += "    GPUs   held GPU-h   idle GPU-h     idle   memory GiB-h    energy Wh  user\n";
  bool starred = false;
  for (const UserSummary &user : ledger.users) {
    std::string gpus = std::to_string(user.gpus);
    out += std::string(8 - std::min<std::size_t>(8, gpus.size()), ' ') + gpus;
    out += cell(user.held_seconds / 3600, "%.2f", false, 13, starred);
    out += cell(user.idle_known_seconds > 0 ? std::optional<double>(user.idle_seconds / 3600)
                                            : std::nullopt,
                "%.2f", user.idle_partly_unknown(), 13, starred);
    out += cell(user.idle_percent(), "%.1f%%", user.idle_partly_unknown(), 9, starred);
    out += cell(user.memory_gib_hours(), "%.2f", user.memory_partly_unknown(), 15, starred);
    out += cell(user.energy_wh(), "%.2f", user.energy_partly_unknown(), 13, starred);
    out += " " + cut_to_columns(marked_text(user_label(user.user)), 64) + "\n";
    out += std::string(10, ' ') + "held " + user_gpus_text(report, user) + "\n";
  }
  if (ledger.users.empty())
    out += "  no processes on any GPU\n";
  if (starred)
    out += "  * counts only the time when it was known (--format json has the unknown hours)\n";
  // What the figures leave out; with nothing left out, a line for --details alone.
  bool partial =
      ledger.unlisted_seconds > 0 || ledger.unsplit_joules > 0 || ledger.left_out_seconds > 0;
  if (!partial && !report.options.details)
    return;
  double covered = ledger.listed_seconds + ledger.unlisted_seconds;
  out += number(ledger.listed_seconds / 3600, "  process lists for %.2f") +
         number(covered / 3600, " of %.2f GPU-hours covered");
  if (ledger.unsplit_joules > 0)
    out += number(ledger.unsplit_joules / 3600,
                  "; %.2f Wh of shared GPUs not split (a share unknown)");
  if (ledger.no_process_joules > 0)
    out += number(ledger.no_process_joules / 3600, "; %.2f Wh drawn with no process");
  if (ledger.left_out_seconds > 0)
    out += number(ledger.left_out_seconds / 3600, "; %.2f GPU-hours of users past the first ") +
           std::to_string(report_max_users) + " left out";
  out += '\n';
}

void jobs_section(std::string &out, const Report &report) {
  out += "\nJobs (a GPU counts for a job while the scheduler's record gives it to the job)\n";
  if (report.jobs.jobs.empty())
    out += "  no allocation in the logs (the JSON logs of watch with --job-mapping-dir carry "
           "them)\n";
  for (const BatchJob &job : report.jobs.jobs)
    out += format_job_text(job);
  if (report.jobs.left_out > 0)
    out += "  " + std::to_string(report.jobs.left_out) + " stretches of jobs past the first " +
           std::to_string(report_max_jobs) + " left out\n";
  if (report.jobs.jobs.empty())
    return;
  // The accounting roll-up: what each Slurm account's jobs held, used and left idle.
  out += "\nAccounts (GPU-hours held, used with a process, idle under 5 %, unused with none)\n";
  for (const BatchAccount &account : roll_up_accounts(report.jobs.jobs))
    out += "  " + marked_text(account.account.value_or("(no account)")) + ": " +
           std::to_string(account.jobs) + (account.jobs == 1 ? " job" : " jobs") + ", held " +
           gpu_hours_text(account.held_seconds) + ", used " + gpu_hours_text(account.used_seconds) +
           ", idle " + gpu_hours_text(account.idle_seconds) + ", unused " +
           gpu_hours_text(account.unused_seconds) + "\n";
}

// The GPU of the report that the job's `gpu` is, by UUID; nullptr where no sample of it was used.
const GpuSummary *report_gpu(const Report &report, const JobGpuTally &gpu) {
  for (const GpuSummary &summary : report.gpus)
    if (summary.uuid && *summary.uuid == gpu.gpu.gpu_uuid())
      return &summary;
  return nullptr;
}

// `run`'s job first: what it ran, how it ended, and per GPU its peak memory, the batch advice
// and the GPU's finding; with --details each GPU's UUID and the samples it was seen in too.
void job_section(std::string &out, const Report &report) {
  const JobSummary &job = *report.job;
  bool details = report.options.details;
  out += "Job  " + job_command_line(job) + "\n";
  out += "  ended        " + job_ending(job) + " after " + fixed_text(job.seconds, 1) + " s\n";
  for (const JobGpuTally &gpu : job.gpus) {
    const GpuSummary *summary = report_gpu(report, gpu);
    std::string head = job_gpu_name(gpu.gpu);
    head.resize(std::max<std::size_t>(head.size() + 1, 13), ' ');
    std::string name = summary && summary->name ? marked_text(*summary->name) : "";
    if (details)
      name += (name.empty() ? "" : "  ") + job_shown(gpu.gpu.uuid);
    std::vector<std::string> lines =
        job_gpu_lines(gpu, summary ? summary->covered_seconds : 0, details);
    if (summary)
      lines.push_back(std::string(severity_name(summary->finding_severity)) + ": " +
                      marked_text(summary->finding));
    out += "  " + head + (name.empty() ? lines.front() : name + ": " + lines.front()) + "\n";
    for (std::size_t i = 1; i < lines.size(); ++i)
      out += std::string(15, ' ') + lines[i] + "\n";
  }
  out += "  CPU          " + job_cpu_line(job) + "\n";
  if (!job.left_running.empty())
    out += "  left running " + job_left_running_line(job) + "\n";
  for (const std::string &note : job.notes)
    out += "  note         " + job_shown(note) + "\n";
}

// "GPU 3", "GPUs 0-3, 6": indices in ascending order, runs of three or more as a range.
std::string gpus_text(std::vector<int> indices) {
  std::sort(indices.begin(), indices.end());
  std::string out = indices.size() == 1 ? "GPU " : "GPUs ";
  for (std::size_t i = 0; i < indices.size();) {
    std::size_t j = i;
    while (j + 1 < indices.size() && indices[j + 1] == indices[j] + 1)
      ++j;
    out += (i ? ", " : "") + std::to_string(indices[i]);
    if (j >= i + 2)
      out += "-" + std::to_string(indices[j]);
    else if (j == i + 1)
      out += ", " + std::to_string(indices[j]);
    i = j + 1;
  }
  return out;
}

// Who held the GPU at `position` most, for a finding's line: "alice", "alice, bob +2"; empty
// where the log has no process list or no process was on it. Names bounded and printable.
std::string holders_label(const Report &report, std::size_t position) {
  constexpr std::size_t named = 2, name_columns = 24;
  std::vector<std::pair<Text, double>> holders = gpu_holders(report.users, position);
  std::string out;
  for (std::size_t i = 0; i < holders.size() && i < named; ++i)
    out +=
        (i ? ", " : "") + cut_to_columns(marked_text(user_label(holders[i].first)), name_columns);
  if (holders.size() > named)
    out += " +" + std::to_string(holders.size() - named);
  return out;
}

// The findings of every GPU and user, the most serious first: each names its GPU (and who held
// it) or its user, then what was found with its figures and window. GPUs with the same finding
// and holders share a line. `skip`: a finding the report has said once for all (a short log).
void findings_list(std::string &out, const Report &report, const std::string &skip) {
  struct Group {
    Severity severity;
    std::string holders, text;
    std::vector<int> indices;
  };
  std::vector<Group> groups;
  for (std::size_t i = 0; i < report.gpus.size(); ++i) {
    const GpuSummary &gpu = report.gpus[i];
    if (gpu.finding == skip)
      continue;
    std::string holders = holders_label(report, i);
    auto same = std::find_if(groups.begin(), groups.end(), [&](const Group &group) {
      return group.severity == gpu.finding_severity && group.text == gpu.finding &&
             group.holders == holders;
    });
    if (same != groups.end())
      same->indices.push_back(gpu.index);
    else
      groups.push_back({gpu.finding_severity, holders, gpu.finding, {gpu.index}});
  }
  std::vector<std::pair<Severity, std::string>> lines; // GPUs first, then users, at a severity
  for (const Group &group : groups)
    lines.emplace_back(group.severity,
                       gpus_text(group.indices) +
                           (group.holders.empty() ? "" : " (" + group.holders + ")") + ": " +
                           marked_text(group.text));
  for (const UserSummary &user : report.users.users)
    lines.emplace_back(user.finding_severity, marked_text(user.finding));
  if (lines.empty())
    return;
  std::stable_sort(lines.begin(), lines.end(),
                   [](const auto &a, const auto &b) { return a.first > b.first; });
  out += "\nFindings, most serious first\n";
  for (const auto &[severity, text] : lines) {
    std::string word = severity_name(severity);
    word.resize(std::max<std::size_t>(word.size() + 1, 10), ' ');
    out += "  " + word + text + "\n";
  }
}

// The files read and their rows: all of it with --details; the bad rows always, as they leave
// figures out.
void rows_lines(std::string &out, const Report &report) {
  std::int64_t bad = report.bad.total();
  if (!report.options.details && bad == 0)
    return;
  if (report.options.details) {
    if (report.files.empty()) {
      out += "samples: taken while the job ran";
    } else {
      out += "files: ";
      for (std::size_t i = 0; i < report.files.size(); ++i)
        out += (i ? ", " : "") + marked_text(report.files[i]);
      if (report.files.size() > 1)
        out += " (read in this order)";
    }
    out += "\nrows: " + std::to_string(report.rows_read) + " read, " +
           std::to_string(report.rows_used) + " used";
    if (report.rows_outside_time)
      out += ", " + std::to_string(report.rows_outside_time) + " outside --from/--to";
    if (report.rows_other_gpus)
      out += ", " + std::to_string(report.rows_other_gpus) + " of other GPUs";
    out += ", " + std::to_string(bad) + " bad";
  } else {
    out += "rows: " + std::to_string(bad) + " of " + std::to_string(report.rows_read) + " bad";
  }
  if (bad > 0) {
    std::string kinds;
    for (int k = 0; k < BadRows::kind_count; ++k)
      if (std::int64_t count = report.bad.counts[static_cast<std::size_t>(k)])
        kinds += std::string(kinds.empty() ? "" : ", ") + std::to_string(count) + " " +
                 BadRows::name(static_cast<BadRows::Kind>(k));
    out += " (" + kinds + ")";
  }
  out += '\n';
  for (const std::string &example : report.bad.examples)
    out += "  " + marked_text(example) + '\n';
}

} // namespace

std::string format_job_text(const BatchJob &job) {
  Allocation allocation;
  allocation.job_id = job.job_id;
  allocation.user = job.user;
  std::string out =
      marked_text(allocation_text(allocation)) + ": " + held_count_text(job.gpus) + " (";
  out += held_list_text(job.gpus) + ") for " + describe_duration(job.wall_seconds());
  if (job.account)
    out += ", account " + marked_text(*job.account);
  if (job.first && job.last)
    out += ", " + to_iso8601(*job.first) + " to " + to_iso8601(*job.last);
  out += "\n";
  auto row = [&out](const std::string &name, const std::string &text) {
    std::string head = name;
    head.resize(std::max<std::size_t>(head.size() + 1, 13), ' ');
    out += "  " + head + text + "\n";
  };
  row("held", number(job.held_seconds / 3600, "%.2f GPU-h"));
  std::optional<double> utilization = job.utilization_percent();
  row("utilization", utilization ? number(*utilization, "%.1f %% on average") : "unknown");
  // The units' activity where the log has dmon's figures; no row where it has none (an older
  // GPU, or no dmon): unknown is not 0.
  ActivityFigures activity = job.activity.figures();
  if (activity.sm_active_mean)
    row("activity",
        number(*activity.sm_active_mean, "SM %.1f %%") +
            (activity.tensor_active_mean ? number(*activity.tensor_active_mean, ", tensor %.1f %%")
                                         : std::string(", tensor unknown")) +
            " while not idle");
  std::optional<double> idle = job.idle.percent(), unused = job.unused.percent();
  row("idle", idle ? number(*idle, "%.1f %% of the time under 5 %% utilization") +
                         number(job.idle.seconds / 3600, " (%.2f GPU-h)")
                   : "unknown");
  row("unused", unused ? number(*unused, "%.1f %% of the time with no process") +
                             number(job.unused.seconds / 3600, " (%.2f GPU-h allocated but unused)")
                       : "unknown (no process lists)");
  std::string memory;
  for (const BatchJobGpu &gpu : job.gpus) {
    memory += (memory.empty() ? "" : ", ") + held_name(gpu) + " peak ";
    memory += gpu.peak_memory_mib ? number(static_cast<double>(*gpu.peak_memory_mib) / 1024, "%.1f")
                                  : "unknown";
    memory += gpu.memory_total_mib
                  ? number(static_cast<double>(*gpu.memory_total_mib) / 1024, " of %.1f GiB")
                  : " of unknown";
  }
  row("memory", memory);
  std::optional<double> energy = job.energy_wh();
  row("energy", energy ? number(*energy, "%.2f Wh") +
                             (job.energy_known_seconds < job.held_seconds * (1 - 1e-9)
                                  ? " (power known for part of the time)"
                                  : "")
                       : "unknown");
  row("finding", std::string(severity_name(job.finding.severity)) + ": " + job.finding.text);
  if (!job.advice.empty())
    row("advice", job.advice);
  if (job.activity_finding)
    row("finding", std::string(severity_name(job.activity_finding->severity)) + ": " +
                       job.activity_finding->text);
  return out;
}

std::string gpu_hours_text(std::optional<double> seconds) {
  return seconds ? number(*seconds / 3600, "%.2f") : std::string("unknown");
}

std::string describe_duration(double seconds) {
  if (seconds < 60)
    return number(seconds, "%.4g s");
  // As a person says it: the two largest units, and a part that is zero left unsaid ("40 min",
  // "2 h", "1 d 3 h"), never "40 min 0 s".
  auto whole = static_cast<std::int64_t>(std::llround(seconds));
  std::int64_t days = whole / 86400, hours = whole / 3600 % 24, minutes = whole / 60 % 60;
  auto say = [](std::int64_t big, const char *big_unit, std::int64_t small,
                const char *small_unit) {
    std::string out = std::to_string(big) + " " + big_unit;
    if (small > 0)
      out += " " + std::to_string(small) + " " + small_unit;
    return out;
  };
  if (days > 0)
    return say(days, "d", hours, "h");
  if (hours > 0)
    return say(hours, "h", minutes, "min");
  return say(minutes, "min", whole % 60, "s");
}

std::string describe_window(double seconds) {
  if (seconds < 10)
    return number(seconds, "%.2g s");
  return describe_duration(seconds < 60 ? std::round(seconds) : seconds);
}

std::string format_report_text(const Report &report) {
  std::string out;
  bool details = report.options.details;
  if (report.job) { // `run`: the job first, the report's figures its evidence (with --details)
    job_section(out, report);
    if (!details || report.rows_used == 0)
      return out;
    out += "\n";
  }
  // The answer first: the GPUs as the last sample had them (the line every view opens with),
  // the time the figures cover, and how much there is to act on.
  if (report.last_sample)
    out += marked_text(fleet_summary_text(report.last_sample->fleet)) + ", at the last sample (" +
           to_iso8601(report.last_sample->time) + ")\n";
  double longest = 0;
  for (const GpuSummary &gpu : report.gpus)
    longest = std::max(longest, gpu.covered_seconds);
  if (!report.gpus.empty()) {
    const GpuSummary &first = *std::min_element(
        report.gpus.begin(), report.gpus.end(),
        [](const GpuSummary &a, const GpuSummary &b) { return earlier(a.first, b.first); });
    const GpuSummary &last = *std::max_element(
        report.gpus.begin(), report.gpus.end(),
        [](const GpuSummary &a, const GpuSummary &b) { return earlier(a.last, b.last); });
    out += describe_window(longest) + " of samples, " + to_iso8601(first.first) + " to " +
           to_iso8601(last.last) + "; ";
  }
  out += findings_count_text(report) + "\n";
  rows_lines(out, report);
  // A log too short for advice says so once, rather than once for each GPU.
  std::string skip;
  if (!report.gpus.empty() && longest > 0 && !enough_for_advice(longest)) {
    skip = short_window_finding(longest);
    std::vector<int> withheld; // the GPUs whose only finding that is, named where others had one
    for (const GpuSummary &gpu : report.gpus)
      if (gpu.finding == skip)
        withheld.push_back(gpu.index);
    out += short_log_text(longest);
    if (!withheld.empty() && withheld.size() < report.gpus.size())
      out += " (none for " + gpus_text(withheld) + ")";
    out += "\n";
  }
  findings_list(out, report, skip);
  // Then who held what, the question most readers come with.
  if (report.users.listed_seconds > 0)
    users_section(out, report);
  if (report.options.by_job)
    jobs_section(out, report);
  if (details)
    for (std::size_t i = 0; i < report.gpus.size(); ++i)
      gpu_section(out, report, i);
  return out;
}

} // namespace nvsmi
