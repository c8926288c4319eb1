// The plot is drawn in a 1000 x 100 box stretched to the figure (preserveAspectRatio none), with
// strokes that keep their width in pixels; labels are placed in percent of the same box.
#include "report/report_chart.hpp"

#include "core/number_text.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <ctime>

namespace nvsmi {
namespace {

constexpr double box_width = 1000, box_height = 100;
constexpr double most_intervals = 8;

// The value's calendar fields, read as UTC: a time already moved to the log's offset comes out
// as the log's clock shows it, whatever the reader's zone.
std::tm clock_fields(double local_seconds) {
  std::time_t whole = static_cast<std::time_t>(std::floor(local_seconds));
  std::tm fields{};
  gmtime_r(&whole, &fields);
  return fields;
}

std::string format_clock(double local_seconds, const char *format) {
  std::tm fields = clock_fields(local_seconds);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, format, &fields);
  return buffer;
}

long day_of(double local_seconds) { return static_cast<long>(std::floor(local_seconds / 86400)); }

// A tick's value without trailing zeros: 0.5, 20, 700.
std::string tick_value(double value) {
  std::string text = number(value, "%.3f");
  text.erase(text.find_last_not_of('0') + 1);
  if (text.back() == '.')
    text.pop_back();
  return text == "-0" ? "0" : text;
}

double x_of(const TimeAxis &axis, double time) {
  return box_width * std::clamp((time - axis.start) / (axis.end - axis.start), 0.0, 1.0);
}

double y_of(const ValueAxis &axis, double value) {
  return box_height * (1 - std::clamp(value / axis.top, 0.0, 1.0));
}

std::string line_class(ChartLine::Style style) {
  switch (style) {
  case ChartLine::mean:
    return "line";
  case ChartLine::maximum:
    return "line max";
  case ChartLine::reference:
    return "line ref";
  }
  return "line";
}

} // namespace

std::vector<TimeTick> time_ticks(const TimeAxis &axis) {
  static constexpr std::array<double, 21> steps = {
      1,    2,    5,    10,    15,    30,    60,    120,    300,    600,    900,
      1800, 3600, 7200, 10800, 21600, 43200, 86400, 172800, 604800, 2419200};
  double offset = axis.offset_minutes * 60.0;
  double start = axis.start + offset, end = axis.end + offset;
  double step = steps.back();
  for (double candidate : steps)
    if ((end - start) / candidate <= most_intervals) {
      step = candidate;
      break;
    }
  bool many_days = day_of(start) != day_of(end);
  const char *format = step >= 86400 ? "%Y-%m-%d" : step < 60 ? "%H:%M:%S" : "%H:%M";
  std::vector<TimeTick> ticks;
  long previous_day = 0;
  // About 8 ticks by the choice of step; a log over months still stops at 64.
  for (double t = std::ceil(start / step) * step; t <= end + 1e-6 && ticks.size() < 64; t += step) {
    TimeTick tick;
    tick.time = t - offset;
    tick.clock = format_clock(t, format);
    if (many_days && step < 86400 && (ticks.empty() || day_of(t) != previous_day))
      tick.date = format_clock(t, "%Y-%m-%d");
    tick.minor = ticks.size() % 2 == 1;
    previous_day = day_of(t);
    ticks.push_back(std::move(tick));
  }
  return ticks;
}

std::string utc_offset_name(int offset_minutes) {
  if (offset_minutes == 0)
    return "UTC";
  int minutes = std::abs(offset_minutes);
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "UTC%c%02d:%02d", offset_minutes < 0 ? '-' : '+',
                minutes / 60, minutes % 60);
  return buffer;
}

ValueAxis value_axis(double highest, std::string unit) {
  ValueAxis axis;
  axis.unit = std::move(unit);
  if (!(highest > 0))
    highest = 1;
  double magnitude = std::pow(10.0, std::floor(std::log10(highest / most_intervals)));
  axis.step = 10 * magnitude;
  for (double factor : {1.0, 2.0, 5.0, 10.0})
    if (highest / (factor * magnitude) <= most_intervals + 1e-9) {
      axis.step = factor * magnitude;
      break;
    }
  axis.top = std::ceil(highest / axis.step - 1e-9) * axis.step;
  return axis;
}

std::string draw_chart(const Chart &chart) {
  std::string out = "<figure class=\"chart\" data-quantity=\"" + chart.quantity +
                    "\" data-axis-max=\"" + tick_value(chart.value.top) + "\">\n<figcaption>" +
                    chart.title + " <span class=\"unit-name\">(" + chart.value.unit +
                    ")</span></figcaption>\n<div class=\"plot\">";
  out += "<svg viewBox=\"0 0 " + number(box_width, "%.0f") + " " + number(box_height, "%.0f") +
         "\" preserveAspectRatio=\"none\" aria-hidden=\"true\">";
  std::vector<TimeTick> ticks = time_ticks(chart.time);
  for (const TimeTick &tick : ticks) {
    std::string x = number(x_of(chart.time, tick.time), "%.2f");
    out += "<line class=\"grid\" x1=\"" + x + "\" x2=\"" + x + "\" y1=\"0\" y2=\"" +
           number(box_height, "%.0f") + "\"/>";
  }
  // Bounded: top / step is at most about 8 by value_axis.
  int value_ticks = static_cast<int>(std::lround(chart.value.top / chart.value.step));
  for (int i = 0; i <= value_ticks; ++i) {
    std::string y = number(y_of(chart.value, i * chart.value.step), "%.2f");
    out += "<line class=\"grid\" x1=\"0\" x2=\"" + number(box_width, "%.0f") + "\" y1=\"" + y +
           "\" y2=\"" + y + "\"/>";
  }
  for (const ChartLine &line : chart.lines)
    for (const auto &run : line.runs) {
      if (run.empty())
        continue;
      std::string points;
      for (const auto &[time, value] : run)
        points += number(x_of(chart.time, time), "%.2f") + "," +
                  number(y_of(chart.value, value), "%.2f") + " ";
      // A lone point is drawn as a dot: a line to itself with round ends.
      if (run.size() == 1)
        points += points;
      out += "<polyline class=\"" + line_class(line.style) + "\" stroke=\"" + line.color +
             "\" points=\"" + points + "\"/>";
    }
  out += "</svg>";
  out += "<span class=\"unit\">" + chart.value.unit + "</span>";
  for (int i = 0; i <= value_ticks; ++i) {
    double value = i * chart.value.step;
    out += "<span class=\"y-tick\" style=\"top:" +
           number(100 * y_of(chart.value, value) / box_height, "%.2f") + "%\">" +
           tick_value(value) + "</span>";
  }
  for (const TimeTick &tick : ticks) {
    out += std::string("<span class=\"x-tick") + (tick.minor ? " minor" : "") +
           "\" style=\"left:" + number(100 * x_of(chart.time, tick.time) / box_width, "%.2f") +
           "%\">" + tick.clock;
    if (!tick.date.empty())
      out += "<small>" + tick.date + "</small>";
    out += "</span>";
  }
  out += "</div>\n<ul class=\"legend\">";
  for (const ChartLine &line : chart.lines)
    out += "<li><svg class=\"key\" viewBox=\"0 0 24 10\" aria-hidden=\"true\"><line class=\"" +
           line_class(line.style) + "\" stroke=\"" + line.color +
           "\" x1=\"1\" y1=\"5\" x2=\"23\" y2=\"5\"/></svg>" + line.label + "</li>";
  out += "</ul>\n</figure>\n";
  return out;
}

} // namespace nvsmi
