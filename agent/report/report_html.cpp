// `report --format html`: one self-contained page, the series drawn as inline SVG. Nothing is
// fetched: no script, no stylesheet, no font, no image from anywhere.
#include "report/report.hpp"

#include "nvsmi/timestamp.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace nvsmi {
namespace {

constexpr double chart_width = 1100, chart_height = 170;
constexpr double left = 64, right = 16, top = 26, bottom = 24;

std::string escape(const std::string &text) {
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

std::string number(double value, const char *format = "%.1f") {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, format, value);
  return buffer;
}

std::string elapsed(double seconds) {
  if (seconds < 120)
    return number(seconds, "%.0f s");
  if (seconds < 7200)
    return number(seconds / 60, "%.0f min");
  if (seconds < 2 * 86400)
    return number(seconds / 3600, "%.1f h");
  return number(seconds / 86400, "%.1f d");
}

// A round number at or above `value`, for the top of an axis.
double nice_ceiling(double value) {
  if (value <= 0)
    return 1;
  double magnitude = std::pow(10.0, std::floor(std::log10(value)));
  for (double step : {1.0, 2.0, 2.5, 5.0, 10.0})
    if (step * magnitude >= value)
      return step * magnitude;
  return 10 * magnitude;
}

struct ChartSpec {
  const char *title;
  Series::Metric metric;
  double y_max;
  const char *unit;
  const char *color;
  double scale = 1;                // divides values for display (MiB -> GiB)
  std::optional<double> reference; // a dashed line: the memory total
};

std::string polyline(const GpuSummary &gpu, const ChartSpec &spec, bool maxima) {
  const Series &series = gpu.series;
  double span = std::max(series.width() * static_cast<double>(series.buckets().size()), 1e-9);
  double plot_w = chart_width - left - right, plot_h = chart_height - top - bottom;
  std::string out, points;
  auto flush = [&] {
    if (!points.empty())
      out += std::string("<polyline fill=\"none\" stroke=\"") + spec.color + "\" stroke-width=\"" +
             (maxima ? "1\" stroke-opacity=\"0.35" : "1.6") + "\" points=\"" + points + "\"/>";
    points.clear();
  };
  for (std::size_t i = 0; i < series.buckets().size(); ++i) {
    const Series::Bucket &bucket = series.buckets()[i];
    const Series::Stat &stat = bucket.stats[spec.metric];
    if (bucket.gap_before)
      flush();
    if (stat.count == 0)
      continue;
    double value = (maxima ? stat.max : *stat.mean()) / spec.scale;
    double x = left + plot_w * (static_cast<double>(i) + 0.5) * series.width() / span;
    double y = top + plot_h * (1 - std::clamp(value / spec.y_max, 0.0, 1.0));
    points += number(x) + "," + number(y) + " ";
  }
  flush();
  return out;
}

std::string chart(const GpuSummary &gpu, const ChartSpec &spec) {
  const Series &series = gpu.series;
  double span = series.width() * static_cast<double>(series.buckets().size());
  double plot_w = chart_width - left - right, plot_h = chart_height - top - bottom;
  std::string out = "<svg width=\"" + number(chart_width, "%.0f") + "\" height=\"" +
                    number(chart_height, "%.0f") + "\" role=\"img\">";
  out += "<text x=\"" + number(left) + "\" y=\"16\" class=\"title\">" + spec.title + " (" +
         spec.unit + "; line: mean, faint: max)</text>";
  for (int tick = 0; tick <= 4; ++tick) {
    double y = top + plot_h * (1 - tick / 4.0);
    out += "<line x1=\"" + number(left) + "\" x2=\"" + number(chart_width - right) + "\" y1=\"" +
           number(y) + "\" y2=\"" + number(y) + "\" class=\"grid\"/>";
    out += "<text x=\"" + number(left - 6) + "\" y=\"" + number(y + 4) +
           "\" class=\"axis\" text-anchor=\"end\">" + number(spec.y_max * tick / 4, "%.4g") +
           "</text>";
  }
  for (int tick = 0; tick <= 6; ++tick) {
    double x = left + plot_w * tick / 6.0;
    out += "<text x=\"" + number(x) + "\" y=\"" + number(chart_height - 6) +
           "\" class=\"axis\" text-anchor=\"" + (tick == 6 ? "end" : "middle") + "\">" +
           (tick == 0 ? std::string("start") : "+" + elapsed(span * tick / 6.0)) + "</text>";
  }
  if (spec.reference) {
    double y = top + plot_h * (1 - std::clamp(*spec.reference / spec.y_max, 0.0, 1.0));
    out += "<line x1=\"" + number(left) + "\" x2=\"" + number(chart_width - right) + "\" y1=\"" +
           number(y) + "\" y2=\"" + number(y) + "\" class=\"reference\"/>";
  }
  out += polyline(gpu, spec, true) + polyline(gpu, spec, false);
  out += "</svg>\n";
  return out;
}

void row(std::string &out, const char *label, const std::string &value) {
  out += std::string("<tr><th>") + label + "</th><td>" + escape(value) + "</td></tr>";
}

std::string or_unknown(const std::optional<double> &value, const char *format) {
  return value ? number(*value, format) : "unknown";
}

void gpu_section(std::string &out, const GpuSummary &gpu) {
  out += "<section><h2>GPU " + std::to_string(gpu.index);
  if (gpu.name)
    out += " &middot; " + escape(*gpu.name);
  if (gpu.uuid)
    out += " <small>" + escape(*gpu.uuid) + "</small>";
  out += "</h2>\n<p class=\"finding\">" + escape(gpu.finding) + "</p>\n<table>";
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
  row(out, "idle / starved",
      or_unknown(gpu.idle.percent(), "%.1f%%") + " / " +
          or_unknown(gpu.starved.percent(), "%.1f%%") + " of the time");
  std::string memory = "unknown";
  if (gpu.memory_peak_mib) {
    memory = "peak " + std::to_string(*gpu.memory_peak_mib) + " MiB";
    if (gpu.memory_total_mib && *gpu.memory_total_mib > 0)
      memory += " of " + std::to_string(*gpu.memory_total_mib) + " MiB, headroom " +
                std::to_string(*gpu.memory_total_mib - *gpu.memory_peak_mib) + " MiB";
  }
  row(out, "memory", memory);
  row(out, "power",
      "mean " + or_unknown(gpu.power_mean_w, "%.1f W") + ", max " +
          or_unknown(gpu.power_max_w, "%.1f W") + ", energy " +
          or_unknown(gpu.energy_wh, "%.2f Wh"));
  std::optional<double> temperature_max;
  if (gpu.temperature_max_c)
    temperature_max = static_cast<double>(*gpu.temperature_max_c);
  row(out, "temperature",
      "mean " + or_unknown(gpu.temperature_mean_c, "%.1f C") + ", max " +
          or_unknown(temperature_max, "%.0f C"));
  row(out, "throttling",
      "at the power limit " + or_unknown(gpu.power_capped.percent(), "%.1f%%") +
          ", busy in a slow pstate " + or_unknown(gpu.slow_pstate.percent(), "%.1f%%"));
  std::string host_cpus = describe_starved_host_cpus(gpu);
  if (!host_cpus.empty())
    row(out, "host CPUs", host_cpus);
  out += "</table>\n";

  std::optional<double> total_gib;
  if (gpu.memory_total_mib)
    total_gib = static_cast<double>(*gpu.memory_total_mib) / 1024;
  double memory_top = nice_ceiling(
      total_gib.value_or(static_cast<double>(gpu.memory_peak_mib.value_or(1024)) / 1024));
  double power_top = nice_ceiling(gpu.power_max_w.value_or(100) * 1.05);
  double temperature_top =
      nice_ceiling(std::max<double>(100, static_cast<double>(gpu.temperature_max_c.value_or(0))));
  out += chart(gpu, {"GPU utilization", Series::utilization, 100, "%", "#1f6fd1", 1, std::nullopt});
  out += chart(gpu, {"Memory used", Series::memory, memory_top, "GiB", "#7b3fb5", 1024, total_gib});
  out += chart(gpu, {"Power draw", Series::power, power_top, "W", "#d1661f", 1, std::nullopt});
  out += chart(
      gpu, {"Temperature", Series::temperature, temperature_top, "C", "#c62828", 1, std::nullopt});
  out += "</section>\n";
}

// A figure of the ledger, with `*` when it counts only part of the user's time.
std::string figure(const std::optional<double> &value, const char *format, bool partial) {
  return value ? number(*value, format) + (partial ? "*" : "") : "unknown";
}

void users_section(std::string &out, const UserLedgerSummary &ledger) {
  out += "<section><h2>Users</h2>\n<p class=\"meta\">A GPU counts for a user while one of the "
         "user's processes is on it. Process lists cover " +
         number(ledger.listed_seconds / 3600, "%.2f") + " of " +
         number((ledger.listed_seconds + ledger.unlisted_seconds) / 3600, "%.2f") + " GPU-hours; " +
         number(ledger.unsplit_joules / 3600, "%.2f") + " Wh of shared GPUs could not be split, " +
         number(ledger.no_process_joules / 3600, "%.2f") +
         " Wh were drawn with no process. * counts only the time when it was known.</p>\n";
  for (const UserSummary &user : ledger.users)
    out += "<p class=\"finding\">" + escape(user.finding) + "</p>\n";
  // Seven columns are wider than a phone: the table scrolls in its own box, not the page.
  out += "<div class=\"scroll\"><table class=\"users\"><tr><th>user</th><th>GPUs</th><th>held "
         "GPU-h</th>"
         "<th>idle GPU-h</th><th>idle</th><th>memory GiB-h</th><th>energy Wh</th></tr>\n";
  for (const UserSummary &user : ledger.users) {
    std::optional<double> idle_hours;
    if (user.idle_known_seconds > 0)
      idle_hours = user.idle_seconds / 3600;
    out += "<tr><td>" + escape(user_label(user.user)) + "</td><td>" + std::to_string(user.gpus) +
           "</td><td>" + number(user.held_seconds / 3600, "%.2f") + "</td><td>" +
           figure(idle_hours, "%.2f", user.idle_partly_unknown()) + "</td><td>" +
           figure(user.idle_percent(), "%.1f%%", user.idle_partly_unknown()) + "</td><td>" +
           figure(user.memory_gib_hours(), "%.2f", user.memory_partly_unknown()) + "</td><td>" +
           figure(user.energy_wh(), "%.2f", user.energy_partly_unknown()) + "</td></tr>\n";
  }
  out += "</table></div>\n</section>\n";
}

} // namespace

std::string format_report_html(const Report &report) {
  std::string out = R"(<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>nvsmi-agent GPU report</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;background:#fff}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 6px}small{color:#777;font-weight:normal}
.meta{color:#555;margin:2px 0}.finding{font-weight:600;background:#fff5d6;border-left:4px solid #e0a800;padding:6px 10px;margin:6px 0}
table{border-collapse:collapse;margin:6px 0 10px}th{text-align:left;padding:2px 14px 2px 0;color:#555;font-weight:normal}td{padding:2px 0}
.users td{padding:2px 14px 2px 0;text-align:right}.users td:first-child{text-align:left}.scroll{overflow-x:auto}
svg{display:block;margin:4px 0}.title{font-size:13px;font-weight:600;fill:#333}.axis{font-size:11px;fill:#666}
.grid{stroke:#e4e4e4;stroke-width:1}.reference{stroke:#7b3fb5;stroke-dasharray:5 4;stroke-width:1}
</style></head><body>
<h1>GPU report</h1>
)";
  std::string files;
  for (std::size_t i = 0; i < report.files.size(); ++i)
    files += (i ? ", " : "") + report.files[i];
  out += "<p class=\"meta\">" + escape(files) + "</p>\n<p class=\"meta\">" +
         std::to_string(report.rows_read) + " rows read, " + std::to_string(report.rows_used) +
         " used, " + std::to_string(report.bad.total()) + " bad</p>\n";
  for (const GpuSummary &gpu : report.gpus)
    gpu_section(out, gpu);
  if (report.users.listed_seconds > 0)
    users_section(out, report.users);
  out += "</body></html>\n";
  return out;
}

} // namespace nvsmi
