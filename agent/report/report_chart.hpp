// One chart of the HTML report: a value axis from 0 with round ticks and its unit, a time axis of
// clock times in the log's own offset, lines that break at gaps, and a legend entry for every
// line. The plot is an SVG stretched to the page's width; the tick labels and the legend are HTML
// laid over and under it, so their text keeps its size however narrow the page.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace nvsmi {

// Instants in seconds (UTC where the log gives an offset), shown as the log's clock shows them:
// at `offset_minutes` (0 where the log has none: its times are then the clock's own).
struct TimeAxis {
  double start = 0, end = 1; // end > start
  int offset_minutes = 0;
};

struct TimeTick {
  double time = 0;
  std::string clock;  // "10:02", or "10:02:30" when ticks are less than a minute apart
  std::string date;   // "2024-03-15" at the first tick and where the day changes, for a
                      // log over more than one day; else empty
  bool minor = false; // every other tick: left out on a narrow page
};

// Ticks at a round interval (1, 2, 5, 10, 15, 30 s or min; 1, 2, 3, 6, 12 h; days), at most
// about 8 over the axis.
std::vector<TimeTick> time_ticks(const TimeAxis &axis);

// "UTC+01:00", "UTC-05:00", or "UTC" for an offset of 0.
std::string utc_offset_name(int offset_minutes);

// A value axis from 0 to `top`, with a tick every `step`.
struct ValueAxis {
  double step = 1, top = 1;
  std::string unit; // "%", "GiB", "W", "°C"
};

// The axis for values up to `highest`: a 1-2-5 step giving at most 8 intervals, and the first
// multiple of it at or above `highest`.
ValueAxis value_axis(double highest, std::string unit);

struct ChartLine {
  enum Style { mean, maximum, reference }; // solid; faint; dashed
  std::string label, color;
  Style style = mean;
  std::vector<std::vector<std::pair<double, double>>> runs; // (time, value), broken at gaps
};

struct Chart {
  std::string quantity; // a name for tests and stylesheets: "utilization", "power", ...
  std::string title;
  TimeAxis time;
  ValueAxis value;
  std::vector<ChartLine> lines; // drawn in order: the last on top
};

// A <figure> holding the chart; `title` and `label`s must already be HTML-escaped.
std::string draw_chart(const Chart &chart);

} // namespace nvsmi
