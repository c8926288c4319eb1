// `report --format html`: one self-contained page, the series drawn as inline SVG. Nothing is
// fetched: no script, no stylesheet, no font, no image from anywhere.
#include "core/number_text.hpp"
#include "core/screen_text.hpp"
#include "report/report.hpp"
#include "report/report_chart.hpp"
#include "report/report_job.hpp"

#include "nvsmi/timestamp.hpp"
#include "nvsmi/utf8.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <initializer_list>
#include <optional>
#include <utility>
#include <vector>

namespace nvsmi {
namespace {

std::string elapsed(double seconds) {
  if (seconds < 120)
    return number(seconds, "%.0f s");
  if (seconds < 7200)
    return number(seconds / 60, "%.0f min");
  if (seconds < 2 * 86400)
    return number(seconds / 3600, "%.1f h");
  return number(seconds / 86400, "%.1f d");
}

std::optional<double> real(const Reading &reading) {
  return reading ? std::optional<double>(static_cast<double>(*reading)) : std::nullopt;
}

void keep_max(std::optional<double> &top, const std::optional<double> &value) {
  if (value && (!top || *value > *top))
    top = value;
}

// The axes every GPU's charts share, so that GPUs can be compared at a glance.
struct Scales {
  TimeAxis time;
  ValueAxis utilization, memory, power, temperature;
  double memory_divisor = 1024; // MiB per unit of the memory axis
};

Scales shared_scales(const std::vector<GpuSummary> &gpus) {
  Scales out;
  std::optional<double> start, end, memory, limit, draw, temperature;
  for (const GpuSummary &gpu : gpus) {
    double first = gpu.series.origin(), last = instant_seconds(gpu.last);
    start = start ? std::min(*start, first) : first;
    end = end ? std::max(*end, last) : last;
    keep_max(memory, real(gpu.memory_total_mib));
    keep_max(memory, real(gpu.memory_peak_mib));
    keep_max(limit, gpu.power_limit_max_w);
    keep_max(draw, gpu.power_max_w);
    keep_max(temperature, real(gpu.temperature_max_c));
  }
  // Whole seconds, so that a log starting at 10:00:00.012 has its 10:00 tick.
  out.time.start = std::floor(start.value_or(0));
  out.time.end = std::ceil(end.value_or(0));
  // A single instant still gets a minute of axis around it.
  if (out.time.end - out.time.start < 1) {
    out.time.start -= 30;
    out.time.end += 30;
  }
  // The log's times are local times with an offset: shown as the log says, in its first offset.
  if (!gpus.empty())
    out.time.offset_minutes = gpus.front().first.utc_offset_minutes.value_or(0);
  out.utilization = value_axis(100, "%");
  if (memory.value_or(0) < 2048) {
    out.memory_divisor = 1;
    out.memory = value_axis(memory.value_or(1024), "MiB");
  } else {
    out.memory = value_axis(*memory / 1024, "GiB");
  }
  // A draw above the limit (a spike) still fits.
  keep_max(limit, draw);
  out.power = value_axis(limit.value_or(100), "W");
  out.temperature = value_axis(temperature.value_or(100), "\u00b0C");
  return out;
}

using Runs = std::vector<std::vector<std::pair<double, double>>>;

// The buckets' means (or maxima) as lines broken at gaps, each at the middle of its bucket.
Runs series_runs(const GpuSummary &gpu, Series::Metric metric, bool maxima, double divisor) {
  const Series &series = gpu.series;
  double last = instant_seconds(gpu.last);
  Runs runs(1);
  for (std::size_t i = 0; i < series.buckets().size(); ++i) {
    const Series::Bucket &bucket = series.buckets()[i];
    const Series::Stat &stat = bucket.stats[metric];
    if (bucket.gap_before && !runs.back().empty())
      runs.emplace_back();
    if (stat.count == 0)
      continue;
    double time = std::min(last, series.origin() + (static_cast<double>(i) + 0.5) * series.width());
    runs.back().emplace_back(time, (maxima ? stat.max : *stat.mean()) / divisor);
  }
  return runs;
}

std::vector<ChartLine> mean_and_max(const GpuSummary &gpu, Series::Metric metric, const char *color,
                                    double divisor = 1) {
  return {{"max", color, ChartLine::maximum, series_runs(gpu, metric, true, divisor)},
          {"mean", color, ChartLine::mean, series_runs(gpu, metric, false, divisor)}};
}

void charts(std::string &out, const GpuSummary &gpu, const Scales &scales) {
  out += draw_chart({"utilization", "GPU utilization", scales.time, scales.utilization,
                     mean_and_max(gpu, Series::utilization, "#1f6fd1")});
  std::vector<ChartLine> memory =
      mean_and_max(gpu, Series::memory, "#7b3fb5", scales.memory_divisor);
  if (gpu.memory_total_mib) {
    double total = static_cast<double>(*gpu.memory_total_mib) / scales.memory_divisor;
    memory.insert(memory.begin(),
                  {"memory total", "#7b3fb5", ChartLine::reference,
                   Runs{{{gpu.series.origin(), total}, {instant_seconds(gpu.last), total}}}});
  }
  out += draw_chart({"memory", "Memory used", scales.time, scales.memory, memory});
  std::vector<ChartLine> power = mean_and_max(gpu, Series::power, "#d1661f");
  if (gpu.power_limit_max_w)
    power.insert(power.begin(), {"power limit", "#444", ChartLine::reference,
                                 series_runs(gpu, Series::power_limit, false, 1)});
  out += draw_chart({"power", "Power draw", scales.time, scales.power, power});
  out += draw_chart({"temperature", "Temperature", scales.time, scales.temperature,
                     mean_and_max(gpu, Series::temperature, "#c62828")});
}

std::string finding_paragraph(Severity severity, const std::string &text) {
  std::string name = severity_name(severity);
  return "<p class=\"finding " + name + "\"><span class=\"severity\">" + name + "</span> " +
         html_escape(text) + "</p>\n";
}

void row(std::string &out, const char *label, const std::string &value) {
  out += std::string("<tr><th>") + label + "</th><td>" + html_escape(value) + "</td></tr>";
}

std::string or_unknown(const std::optional<double> &value, const char *format) {
  return value ? number(*value, format) : "unknown";
}

void gpu_section(std::string &out, const Report &report, std::size_t position,
                 const Scales &scales) {
  const GpuSummary &gpu = report.gpus[position];
  out +=
      "<section id=\"gpu-" + std::to_string(position) + "\"><h2>GPU " + std::to_string(gpu.index);
  if (gpu.name)
    out += " &middot; " + html_escape(*gpu.name);
  if (gpu.uuid)
    out += " <small>" + html_escape(*gpu.uuid) + "</small>";
  out += "</h2>\n" + finding_paragraph(gpu.finding_severity, gpu.finding) + "<table>";
  row(out, "holders", gpu_holders_text(report, position));
  row(out, "time",
      to_iso8601(gpu.first) + " to " + to_iso8601(gpu.last) + ": " + elapsed(gpu.covered_seconds) +
          " covered, " + std::to_string(gpu.samples) + " samples, " + std::to_string(gpu.gaps) +
          " gap(s) (" + elapsed(gpu.gap_seconds) + ")");
  auto whole = [](const auto &value) {
    return value ? std::to_string(*value) + "%" : std::string("unknown");
  };
  row(out, "utilization",
      "mean " + or_unknown(gpu.utilization_mean, "%.1f%%") + ", median " +
          whole(gpu.utilization_median) + ", p95 " + whole(gpu.utilization_p95) + ", max " +
          whole(gpu.utilization_max));
  row(out, "idle / idle but held / starved",
      or_unknown(gpu.idle.percent(), "%.1f%%") + " / " +
          or_unknown(gpu.idle_held.percent(), "%.1f%%") + " / " +
          or_unknown(gpu.starved.percent(), "%.1f%%") + " of the time");
  std::string memory = "unknown";
  if (gpu.memory_peak_mib) {
    memory = "peak " + std::to_string(*gpu.memory_peak_mib) + " MiB";
    if (gpu.memory_total_mib && *gpu.memory_total_mib > 0)
      memory += " of " + std::to_string(*gpu.memory_total_mib) + " MiB, headroom " +
                std::to_string(*gpu.memory_total_mib - *gpu.memory_peak_mib) + " MiB";
  }
  row(out, "memory", memory);
  std::string fields = latest_fields_text(gpu.latest_fields);
  if (!fields.empty())
    row(out, "health", valid_utf8(fields));
  row(out, "power",
      "mean " + or_unknown(gpu.power_mean_w, "%.1f W") + ", max " +
          or_unknown(gpu.power_max_w, "%.1f W") + ", limit " +
          or_unknown(gpu.power_limit_max_w, "%.0f W") + ", energy " +
          or_unknown(gpu.energy_wh, "%.2f Wh"));
  std::optional<double> temperature_max;
  if (gpu.temperature_max_c)
    temperature_max = static_cast<double>(*gpu.temperature_max_c);
  row(out, "temperature",
      "mean " + or_unknown(gpu.temperature_mean_c, "%.1f \u00b0C") + ", max " +
          or_unknown(temperature_max, "%.0f \u00b0C"));
  row(out, "throttling",
      "at the power limit " + or_unknown(gpu.power_capped.percent(), "%.1f%%") +
          ", busy in a slow pstate " + or_unknown(gpu.slow_pstate.percent(), "%.1f%%"));
  std::string host_cpus = describe_starved_host_cpus(gpu);
  if (!host_cpus.empty())
    row(out, "host CPUs", host_cpus);
  out += "</table>\n";

  charts(out, gpu, scales);
  out += "</section>\n";
}

// A cell of the summary: "-" for a figure the log does not have.
std::string cell(const std::optional<double> &value, const char *format) {
  return "<td>" + (value ? number(*value, format) : std::string("-")) + "</td>";
}

// Figures that share a unit, "419 / 612 W"; "-" for each one unknown, "-" alone when none is known.
std::string cell(std::initializer_list<std::optional<double>> values, const char *format,
                 const char *unit) {
  std::string text;
  bool any = false;
  for (const std::optional<double> &value : values) {
    text += (text.empty() ? "" : " / ") + (value ? number(*value, format) : std::string("-"));
    any = any || value;
  }
  return "<td>" + (any ? text + unit : std::string("-")) + "</td>";
}

void summary_table(std::string &out, const std::vector<GpuSummary> &gpus) {
  // Nine columns are wider than a phone: the table scrolls in its own box, not the page.
  out += "<section><h2>All GPUs</h2>\n<div class=\"scroll\"><table class=\"summary\">"
         "<tr><th>GPU</th><th>name</th><th>samples</th><th>utilization<br>mean / max</th>"
         "<th>memory<br>peak / total</th><th>power<br>mean / max / limit</th>"
         "<th>temperature<br>max</th><th>energy</th><th>finding</th></tr>\n";
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    const GpuSummary &gpu = gpus[i];
    auto gib = [](const Reading &mib) {
      return mib ? std::optional<double>(static_cast<double>(*mib) / 1024) : std::nullopt;
    };
    std::string severity = severity_name(gpu.finding_severity);
    out += "<tr><td><a href=\"#gpu-" + std::to_string(i) + "\">" + std::to_string(gpu.index) +
           "</a></td><td>" + html_escape(gpu.name.value_or("-")) + "</td><td>" +
           std::to_string(gpu.samples) + "</td>" +
           cell({gpu.utilization_mean, real(gpu.utilization_max)}, "%.0f", " %") +
           cell({gib(gpu.memory_peak_mib), gib(gpu.memory_total_mib)}, "%.1f", " GiB") +
           cell({gpu.power_mean_w, gpu.power_max_w, gpu.power_limit_max_w}, "%.0f", " W") +
           cell(real(gpu.temperature_max_c), "%.0f \u00b0C") + cell(gpu.energy_wh, "%.1f Wh") +
           "<td class=\"finding " + severity + "\"><span class=\"severity\">" + severity +
           "</span> " + html_escape(gpu.finding) + "</td></tr>\n";
  }
  out += "</table></div>\n</section>\n";
}

// A figure of the ledger, with `*` when it counts only part of the user's time.
std::string figure(const std::optional<double> &value, const char *format, bool partial) {
  return value ? number(*value, format) + (partial ? "*" : "") : "unknown";
}

void users_section(std::string &out, const Report &report) {
  const UserLedgerSummary &ledger = report.users;
  out += "<section><h2>Users</h2>\n<p class=\"meta\">A GPU counts for a user while one of the "
         "user's processes is on it. Process lists cover " +
         number(ledger.listed_seconds / 3600, "%.2f") + " of " +
         number((ledger.listed_seconds + ledger.unlisted_seconds) / 3600, "%.2f") + " GPU-hours; " +
         number(ledger.unsplit_joules / 3600, "%.2f") + " Wh of shared GPUs could not be split, " +
         number(ledger.no_process_joules / 3600, "%.2f") +
         " Wh were drawn with no process. * counts only the time when it was known.</p>\n";
  for (const UserSummary &user : ledger.users)
    out += finding_paragraph(user.finding_severity, user.finding);
  // Eight columns are wider than a phone: the table scrolls in its own box, not the page. Who held
  // which GPUs comes first, so that a phone shows it without scrolling.
  out += "<div class=\"scroll\"><table class=\"users\"><tr><th>user</th><th>GPUs held</th>"
         "<th>GPUs</th><th>held GPU-h</th><th>idle GPU-h</th><th>idle</th><th>memory GiB-h</th>"
         "<th>energy Wh</th></tr>\n";
  for (const UserSummary &user : ledger.users) {
    std::optional<double> idle_hours;
    if (user.idle_known_seconds > 0)
      idle_hours = user.idle_seconds / 3600;
    out += "<tr><td>" + html_escape(user_label(user.user)) + "</td><td>" +
           html_escape(user_gpus_text(report, user)) + "</td><td>" + std::to_string(user.gpus) +
           "</td><td>" + number(user.held_seconds / 3600, "%.2f") + "</td><td>" +
           figure(idle_hours, "%.2f", user.idle_partly_unknown()) + "</td><td>" +
           figure(user.idle_percent(), "%.1f%%", user.idle_partly_unknown()) + "</td><td>" +
           figure(user.memory_gib_hours(), "%.2f", user.memory_partly_unknown()) + "</td><td>" +
           figure(user.energy_wh(), "%.2f", user.energy_partly_unknown()) + "</td></tr>\n";
  }
  out += "</table></div>\n</section>\n";
}

// A part of a job's time and its share, "unknown" where no sample knew it.
std::string share_cell(const TimeShare &share) {
  std::optional<double> percent = share.percent();
  return percent ? number(share.seconds / 3600, "%.2f") + number(*percent, " (%.1f%%)") : "unknown";
}

// `report --by-job`: each batch job's row, its finding and advice beside its figures, then the
// accounts' roll-up. Names come from the scheduler's records, which a job's owner chose: marked
// (terminal text made printable) and escaped like any other text of the page.
void jobs_section(std::string &out, const Report &report) {
  out += "<section id=\"jobs\"><h2>Jobs</h2>\n<p class=\"meta\">A GPU counts for a job while the "
         "scheduler's record gives it to the job. Idle: under 5% utilization; unused: no "
         "process on the GPU.";
  if (report.jobs.left_out > 0)
    out += " " + std::to_string(report.jobs.left_out) + " stretches of jobs past the first " +
           std::to_string(report_max_jobs) + " left out.";
  out += "</p>\n";
  if (report.jobs.jobs.empty()) {
    out += "<p>No allocation in the logs (the JSON logs of watch with --job-mapping-dir carry "
           "them).</p>\n</section>\n";
    return;
  }
  auto text = [](const Text &value, const char *none) {
    return html_escape(value ? marked_text(*value) : std::string(none));
  };
  auto job_name = [](const BatchJob &job) {
    return html_escape(marked_text(job.scheduler + " " + job.job_id));
  };
  // The findings first, each naming its job, as the users' are: on a phone the table scrolls in
  // its own box, and what to act on must not be off to its side. The advice, and what the units
  // did, each a line of its own under the finding.
  for (const BatchJob &job : report.jobs.jobs) {
    std::string severity = severity_name(job.finding.severity);
    out += "<p class=\"finding " + severity + "\"><span class=\"severity\">" + severity +
           "</span> " + job_name(job) + " (" + text(job.user, "unknown user") +
           "): " + html_escape(job.finding.text);
    if (!job.advice.empty())
      out += "<br><span class=\"advice\">" + html_escape(job.advice) + "</span>";
    if (job.activity_finding)
      out += "<br>" + std::string(severity_name(job.activity_finding->severity)) + ": " +
             html_escape(job.activity_finding->text);
    out += "</p>\n";
  }
  out += "<div class=\"scroll\"><table class=\"jobs\"><tr><th>job</th><th>user</th>"
         "<th>account</th><th>GPUs</th><th>time</th><th>held GPU-h</th><th>utilization</th>"
         "<th>idle GPU-h</th><th>unused GPU-h</th><th>energy Wh</th></tr>\n";
  for (const BatchJob &job : report.jobs.jobs) {
    std::string gpus = html_escape(held_list_text(job.gpus));
    out += "<tr><td>" + job_name(job) + "</td><td>" + text(job.user, "unknown") + "</td><td>" +
           text(job.account, "none") + "</td><td>" + gpus + "</td><td>" +
           html_escape(describe_duration(job.wall_seconds())) + "</td><td>" +
           gpu_hours_text(job.held_seconds) + "</td><td>" +
           or_unknown(job.utilization_percent(), "%.1f%%") + "</td><td>" + share_cell(job.idle) +
           "</td><td>" + share_cell(job.unused) + "</td><td>" +
           or_unknown(job.energy_wh(), "%.2f") + "</td></tr>\n";
  }
  out += "</table></div>\n<h3>Accounts</h3>\n<p class=\"meta\">GPU-hours held; used with a "
         "process, idle under 5% utilization, unused with none.</p>\n<div class=\"scroll\"><table "
         "class=\"accounts\"><tr><th>account</th><th>jobs</th><th>held</th><th>used</th>"
         "<th>idle</th><th>unused</th></tr>\n";
  for (const BatchAccount &account : roll_up_accounts(report.jobs.jobs))
    out += "<tr><td>" + text(account.account, "(no account)") + "</td><td>" +
           std::to_string(account.jobs) + "</td><td>" + gpu_hours_text(account.held_seconds) +
           "</td><td>" + gpu_hours_text(account.used_seconds) + "</td><td>" +
           gpu_hours_text(account.idle_seconds) + "</td><td>" +
           gpu_hours_text(account.unused_seconds) + "</td></tr>\n";
  out += "</table></div>\n</section>\n";
}

// Every GPU's finding, the most serious first, each naming its GPU and linking to its section:
// what a reader on a phone sees before any table.
void findings_section(std::string &out, const std::vector<GpuSummary> &gpus) {
  out += "<section id=\"findings\"><h2>Findings</h2>\n";
  for (Severity severity : {Severity::critical, Severity::warning, Severity::ok})
    for (std::size_t i = 0; i < gpus.size(); ++i) {
      if (gpus[i].finding_severity != severity)
        continue;
      std::string name = severity_name(severity);
      out += "<p class=\"finding " + name + "\"><span class=\"severity\">" + name +
             "</span> <a href=\"#gpu-" + std::to_string(i) + "\">GPU " +
             std::to_string(gpus[i].index) + "</a>: " + html_escape(gpus[i].finding) + "</p>\n";
    }
  out += "</section>\n";
}

// The job `run` ran, first: it is what the page is about, the GPUs' figures are its evidence.
void job_section(std::string &out, const Report &report) {
  const JobSummary &job = *report.job;
  out += "<section class=\"job\" id=\"job\"><h2>Job <code>" + html_escape(job_command_line(job)) +
         "</code></h2>\n<p class=\"meta\">" + html_escape(job_ending(job)) + " after " +
         fixed_text(job.seconds, 1) + " s</p>\n";
  for (const JobGpuTally &gpu : job.gpus) {
    out += "<h3>" + job_gpu_name(gpu.gpu) + " <small>" + html_escape(job_shown(gpu.gpu.uuid)) +
           "</small></h3>\n<ul>\n";
    double covered = 0;
    for (const GpuSummary &summary : report.gpus)
      if (summary.uuid && *summary.uuid == gpu.gpu.gpu_uuid())
        covered = summary.covered_seconds;
    for (const std::string &line : job_gpu_lines(gpu, covered, true))
      out += "<li>" + html_escape(line) + "</li>\n";
    out += "</ul>\n";
  }
  out += "<p>CPU: " + html_escape(job_cpu_line(job)) + "</p>\n";
  if (!job.left_running.empty())
    out += "<p>Left running: " + html_escape(job_left_running_line(job)) + "</p>\n";
  for (const std::string &note : job.notes)
    out += "<p class=\"note\">Note: " + html_escape(job_shown(note)) + "</p>\n";
  out += "</section>\n";
}

} // namespace

std::string format_report_html(const Report &report) {
  std::string out = R"(<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>nvsmi-agent GPU report</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;background:#fff;overflow-wrap:break-word}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 6px}small{color:#666;font-weight:normal;font-size:12px}
.meta{color:#555;margin:2px 0}.glance{font-size:15px;font-weight:600;margin:4px 0}
.finding{font-weight:600;border-left:4px solid;padding:6px 10px;margin:6px 0}
.finding.info{background:#eaf2fc;border-color:#1f6fd1}.finding.warning{background:#fff5d6;border-color:#e0a800}
.finding.critical{background:#fde6e6;border-color:#c62828}
.severity{display:inline-block;font-size:12px;font-weight:700;text-transform:uppercase;letter-spacing:.04em;padding:0 6px;border-radius:3px;margin-right:4px;color:#fff}
.info .severity{background:#1f6fd1}.warning .severity{background:#e0a800;color:#222}.critical .severity{background:#c62828}
table{border-collapse:collapse;margin:6px 0 10px}th{text-align:left;padding:2px 14px 2px 0;color:#555;font-weight:normal;vertical-align:top}td{padding:2px 0}
.scroll{overflow-x:auto}.users td,.summary td{padding:3px 14px 3px 0;text-align:right;white-space:nowrap}
.users td:first-child,.summary td:nth-child(2){text-align:left}
.jobs td,.accounts td{padding:3px 14px 3px 0;text-align:right;white-space:nowrap;border-bottom:1px solid #eee}.jobs td:nth-child(-n+4),.accounts td:first-child{text-align:left}.jobs th,.accounts th{white-space:nowrap;border-bottom:1px solid #ccc;padding-right:14px}.advice{font-weight:normal;color:#444}.users td:nth-child(2){text-align:left;white-space:normal;min-width:11em}
.summary th{white-space:nowrap;border-bottom:1px solid #ccc;padding-right:14px}.summary td{border-bottom:1px solid #eee}.summary td.finding{text-align:left;white-space:normal;min-width:18em;font-weight:normal;border-left-width:4px;padding:3px 8px}
.chart{margin:12px 0 20px}figcaption{font-weight:600;margin:0 0 22px}.unit-name{font-weight:normal;color:#555}
.plot{position:relative;height:150px;margin:0 36px 36px 48px}.plot svg{display:block;width:100%;height:100%;overflow:visible}
.grid{stroke:#e4e4e4;stroke-width:1;vector-effect:non-scaling-stroke}
.line{fill:none;stroke-width:1.8;stroke-linejoin:round;stroke-linecap:round;vector-effect:non-scaling-stroke}
.line.max{stroke-width:1.2;stroke-opacity:.4}.line.ref{stroke-width:1.5;stroke-dasharray:6 4;stroke-linecap:butt}
.y-tick,.x-tick,.unit{position:absolute;font-size:12px;line-height:1.2;color:#555;white-space:nowrap}
.y-tick{right:100%;padding-right:6px;transform:translateY(-50%)}.unit{right:100%;padding-right:6px;bottom:100%;margin-bottom:8px;font-weight:600}
.x-tick{top:100%;padding-top:4px;transform:translateX(-50%);text-align:center}.x-tick small{display:block}
.legend{list-style:none;display:flex;flex-wrap:wrap;gap:4px 16px;margin:0;padding:0 0 0 48px;font-size:12px;color:#444}
.legend li{display:flex;align-items:center;gap:6px}.key{width:24px;height:10px;overflow:visible}
.job{border:1px solid #d6d6d6;border-radius:4px;padding:0 14px 6px;margin:16px 0}.job h2{margin-top:10px}.job code{font-size:15px;white-space:pre-wrap;word-break:break-all}.job h3{font-size:15px;margin:14px 0 2px}.job ul{margin:2px 0 8px;padding-left:20px}
.note{color:#8a5a00}
@media (max-width:600px){body{margin:10px}.x-tick.minor{display:none}.legend{padding-left:0}}
</style></head><body>
<h1>GPU report</h1>
)";
  if (report.job && report.rows_used == 0) { // no sample of the job's GPUs: the job alone
    job_section(out, report);
    out += "</body></html>\n";
    return out;
  }
  // `run`'s job first: it is what the page is about; the fleet line and the rows are its evidence.
  if (report.job)
    job_section(out, report);
  std::string files;
  for (std::size_t i = 0; i < report.files.size(); ++i)
    files += (i ? ", " : "") + report.files[i];
  if (report.files.empty())
    files = "samples taken while the job ran";
  // At a glance first: the fleet as it was last, and how much there is to act on.
  if (report.last_sample)
    out += "<p class=\"glance\">" + html_escape(valid_utf8(last_sample_text(*report.last_sample))) +
           "</p>\n";
  out += "<p class=\"glance\">" + html_escape(findings_count_text(report)) + "</p>\n";
  double longest = 0;
  for (const GpuSummary &gpu : report.gpus)
    longest = std::max(longest, gpu.covered_seconds);
  if (longest > 0 && !enough_for_advice(longest))
    out += "<p class=\"glance\">" + html_escape(short_log_text(longest)) + "</p>\n";
  out += "<p class=\"meta\">" + html_escape(files) + "</p>\n<p class=\"meta\">" +
         std::to_string(report.rows_read) + " rows read, " + std::to_string(report.rows_used) +
         " used, " + std::to_string(report.bad.total()) + " bad</p>\n";
  Scales scales = shared_scales(report.gpus);
  out += std::string("<p class=\"meta\">Times as ") +
         (report.files.empty() ? "nvidia-smi stamped the samples (" : "the log gives them (") +
         utc_offset_name(scales.time.offset_minutes) +
         "). Every GPU's charts share their axes.</p>\n";
  // The findings, then who held what, before the GPUs' charts (a page of many screens).
  findings_section(out, report.gpus);
  summary_table(out, report.gpus);
  if (report.users.listed_seconds > 0)
    users_section(out, report);
  if (report.options.by_job)
    jobs_section(out, report);
  for (std::size_t i = 0; i < report.gpus.size(); ++i)
    gpu_section(out, report, i, scales);
  out += "</body></html>\n";
  return out;
}

std::string html_escape(const std::string &text) {
  std::string out;
  for (char c : text) {
    switch (c) {
    case '&':
      out += "&amp;";
      break;
    case '<':
      out += "&lt;";
      break;
    case '>':
      out += "&gt;";
      break;
    case '"':
      out += "&quot;";
      break;
    default:
      out += c;
    }
  }
  return out;
}

} // namespace nvsmi
