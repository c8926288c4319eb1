#include "terminal/top_layout.hpp"

#include "core/number_text.hpp"
#include "core/screen_text.hpp"

#include "nvsmi/gpu_state.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace nvsmi {
namespace {

using std::chrono::milliseconds;

// A line being built: spans are cut where the screen ends, so no line is ever wider than it.
class LineBuilder {
public:
  explicit LineBuilder(int columns) : left_(columns) {}
  // `text` (printable) cut or padded to `width` columns.
  void add(const std::string &text, int width, Tone style = Tone::normal,
           Align align = Align::left) {
    width = std::min(width, left_);
    if (width <= 0)
      return;
    line_.push_back({fit_text(text, width, align), style});
    left_ -= width;
  }
  // `text` as wide as it is, or as much as fits.
  void add(const std::string &text, Tone style = Tone::normal) {
    add(text, static_cast<int>(text_columns(text)), style);
  }
  int left() const { return left_; }
  ScreenLine take() { return std::move(line_); }

private:
  int left_;
  ScreenLine line_;
};

std::string or_dash(const Reading &value, const char *unit = "") {
  return value ? std::to_string(*value) + unit : "-";
}

// MiB as people read them: "512M", "40.0G", "640G".
std::string mib_text(const Reading &mib) {
  if (!mib)
    return "-";
  if (*mib < 1024)
    return std::to_string(*mib) + "M";
  double gib = static_cast<double>(*mib) / 1024;
  return number(gib, gib < 100 ? "%.1fG" : "%.0fG");
}

std::string timestamp_text(const std::optional<Timestamp> &t, bool with_date) {
  if (!t)
    return "-";
  char buffer[32];
  if (with_date)
    std::snprintf(buffer, sizeof buffer, "%04d-%02d-%02d %02d:%02d:%02d", t->year, t->month, t->day,
                  t->hour, t->minute, t->second);
  else
    std::snprintf(buffer, sizeof buffer, "%02d:%02d:%02d", t->hour, t->minute, t->second);
  return buffer;
}

std::string age_text(milliseconds age) {
  long seconds = static_cast<long>(age.count() / 1000);
  if (seconds < 120)
    return std::to_string(seconds) + " s";
  if (seconds < 7200)
    return std::to_string(seconds / 60) + " min";
  return std::to_string(seconds / 3600) + " h";
}

// A bar of `width` columns filled to `fraction` (nullopt: blank, the value is unknown).
std::string bar(std::optional<double> fraction, int width, bool unicode) {
  if (!fraction)
    return std::string(static_cast<std::size_t>(width), ' ');
  double clamped = std::clamp(*fraction, 0.0, 1.0);
  static const char *const eighths[] = {"", "▏", "▎", "▍", "▌", "▋", "▊", "▉"};
  int filled_eighths = static_cast<int>(std::lround(clamped * width * 8));
  std::string out;
  int used = 0;
  for (; used < filled_eighths / 8; ++used)
    out += unicode ? "█" : "#";
  if (used < width && filled_eighths % 8) {
    out += unicode ? eighths[filled_eighths % 8] : (filled_eighths % 8 >= 4 ? "#" : ".");
    ++used;
  }
  for (; used < width; ++used)
    out += unicode ? "·" : ".";
  return out;
}

std::string sparkline(const std::deque<Reading> &history, int width, bool unicode) {
  static const char *const levels[] = {"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
  static const char ascii_levels[] = "_.-=+*##";
  std::string out;
  std::size_t shown = std::min(history.size(), static_cast<std::size_t>(std::max(width, 0)));
  for (std::size_t i = history.size() - shown; i < history.size(); ++i) {
    const Reading &value = history[i];
    if (!value) {
      out += ' ';
      continue;
    }
    int level = static_cast<int>(std::clamp<std::int64_t>(*value, 0, 100) * 7 / 100);
    if (unicode)
      out += levels[level];
    else
      out += ascii_levels[level];
  }
  return out;
}

// Column widths of the GPU rows for a screen `columns` wide.
struct GpuColumns {
  bool name;
  int bar;
  int history; // the sparkline takes what is left
};
GpuColumns gpu_columns(int columns) {
  GpuColumns c{columns >= 140, columns >= 160 ? 12 : columns >= 120 ? 8 : 4, 0};
  int fixed = 4 + (c.name ? 23 : 0) + 15 + (c.bar + 6) + (c.bar + 12) + (c.bar + 11) + 13 + 1;
  c.history = std::max(0, columns - fixed);
  return c;
}

ScreenLine gpu_heading(const GpuColumns &c, int columns) {
  LineBuilder line(columns);
  line.add("GPU", 4, Tone::heading);
  if (c.name)
    line.add("NAME", 23, Tone::heading);
  line.add("STATE", 15, Tone::heading);
  line.add("UTIL", c.bar + 6, Tone::heading);
  line.add("MEMORY", c.bar + 12, Tone::heading);
  line.add("POWER", c.bar + 11, Tone::heading);
  line.add("TEMP", 4, Tone::heading, Align::right);
  line.add("FAN", 5, Tone::heading, Align::right);
  line.add("PS", 4, Tone::heading, Align::right);
  line.add(" ", 1);
  line.add(c.history >= 19 ? "UTILIZATION HISTORY" : "HIST", c.history, Tone::heading);
  return line.take();
}

std::optional<double> fraction(std::optional<double> part, std::optional<double> whole) {
  if (!part || !whole || *whole <= 0)
    return std::nullopt;
  return *part / *whole;
}
std::optional<double> real(const Reading &value) {
  return value ? std::optional<double>(static_cast<double>(*value)) : std::nullopt;
}

ScreenLine gpu_line(const Gpu &gpu, const TopModel &model, const GpuColumns &c, int columns,
                    bool late, bool unicode) {
  LineBuilder line(columns);
  line.add(std::to_string(gpu.index) + "  ", 4, Tone::normal, Align::right);
  if (c.name)
    line.add(printable_text(gpu.name.value_or("-"), unicode), 23);
  std::string spark = sparkline(model.utilization_history(gpu.index), c.history, unicode);
  if (late) {
    // The readings are of a sample too old to be the present: not shown at all.
    line.add("stale", 15, Tone::alarm);
    line.add("", (c.bar + 6) + (c.bar + 12) + (c.bar + 11) + 13 + 1);
    line.add(spark, c.history, Tone::dim);
    return line.take();
  }
  GpuState state = gpu_state(gpu);
  line.add(std::string(gpu_state_name(state)), 15, state_tone(state));

  line.add(bar(fraction(real(gpu.utilization_gpu_percent), 100.0), c.bar, unicode), c.bar,
           Tone::busy);
  line.add(or_dash(gpu.utilization_gpu_percent, "%"), 5, Tone::normal, Align::right);
  line.add(" ", 1);

  line.add(bar(fraction(real(gpu.memory_used_mib), real(gpu.memory_total_mib)), c.bar, unicode),
           c.bar, Tone::busy);
  std::string memory = "-";
  if (gpu.memory_used_mib || gpu.memory_total_mib) {
    std::string total = mib_text(gpu.memory_total_mib);
    memory = mib_text(gpu.memory_used_mib);
    if (!memory.empty() && memory.back() == total.back() && memory.back() != '-')
      memory.pop_back(); // "40.0/80.0G", one unit for both
    memory += "/" + total;
  }
  line.add(memory, 11, Tone::normal, Align::right);
  line.add(" ", 1);

  std::optional<double> power = fraction(gpu.power_draw_w, gpu.power_limit_w);
  GpuStateThresholds thresholds;
  line.add(bar(power, c.bar, unicode), c.bar,
           power && *power >= thresholds.power_limit_fraction ? Tone::alarm : Tone::busy);
  std::string watts = "-";
  if (gpu.power_draw_w || gpu.power_limit_w)
    watts = (gpu.power_draw_w ? number(*gpu.power_draw_w, "%.0f") : "-") + "/" +
            (gpu.power_limit_w ? number(*gpu.power_limit_w, "%.0f") : "-") + "W";
  line.add(watts, 10, Tone::normal, Align::right);
  line.add(" ", 1);

  bool hot = gpu.temperature_c && *gpu.temperature_c >= thresholds.hot_at_c;
  line.add(or_dash(gpu.temperature_c, "C"), 4, hot ? Tone::alarm : Tone::normal, Align::right);
  line.add(or_dash(gpu.fan_speed_percent, "%"), 5, Tone::normal, Align::right);
  line.add(printable_text(gpu.pstate.value_or("-"), unicode), 4, Tone::normal, Align::right);
  line.add(" ", 1);
  line.add(spark, c.history, Tone::busy);
  return line.take();
}

ScreenLine mig_line(const MigDevice &mig, int columns, bool late, bool unicode) {
  LineBuilder line(columns);
  line.add(unicode ? "   └ " : "   `-", 5);
  line.add("MIG " + or_dash(mig.index) + "  GI " + or_dash(mig.gpu_instance_id) + " CI " +
           or_dash(mig.compute_instance_id));
  if (late)
    return line.take();
  std::string used = mib_text(mig.memory_used_mib), total = mib_text(mig.memory_total_mib);
  line.add("  memory " + used + "/" + total);
  return line.take();
}

ScreenLine header_line(const TopModel &model, TopClock::time_point now, int columns) {
  LineBuilder line(columns);
  const std::optional<Snapshot> &latest = model.latest();
  line.add("nvsmi-agent top", Tone::heading);
  std::vector<std::pair<std::string, Tone>> parts;
  if (!latest) {
    parts.push_back({"waiting for the first sample", Tone::alarm});
  } else {
    const std::optional<Host> &host = latest->host;
    parts.push_back({"host " + printable_text(host && host->hostname ? *host->hostname : "-", true),
                     Tone::normal});
    milliseconds age = model.sample_age(now).value_or(milliseconds(0));
    if (model.late(now))
      parts.push_back({"LATE: no sample for " + age_text(age), Tone::alarm});
    parts.push_back({"sample " + timestamp_text(latest->timestamp, columns >= 120), Tone::normal});
    parts.push_back(
        {"driver " + printable_text(latest->driver_version.value_or("-"), true), Tone::normal});
    std::string cpu = host && host->cpu_percent ? number(*host->cpu_percent, "%.0f%%") : "-";
    parts.push_back({"CPU " + cpu, Tone::normal});
    std::string memory = "-";
    if (host && (host->memory_used_mib || host->memory_total_mib))
      memory = mib_text(host->memory_used_mib) + "/" + mib_text(host->memory_total_mib);
    parts.push_back({"mem " + memory, Tone::normal});
    if (latest->cuda_version)
      parts.push_back({"CUDA " + printable_text(*latest->cuda_version, true), Tone::normal});
  }
  // Whole parts only, in order: a cut "driver 55" would be a wrong reading.
  for (auto &[text, style] : parts) {
    if (static_cast<int>(text_columns(text)) + 2 > line.left())
      break;
    line.add("  ");
    line.add(text, style);
  }
  return line.take();
}

// The process table's columns for a screen `columns` wide: the container goes first, then the
// host memory, so that the command keeps room at 80 columns.
struct ProcessColumns {
  bool host_memory, container;
  int command;
};
ProcessColumns process_columns(int columns) {
  ProcessColumns c{columns >= 72, columns >= 100, 0};
  int fixed = 3 + 9 + 11 + 9 + 5 + 7 + (c.host_memory ? 9 : 0) + (c.container ? 13 : 0) + 1;
  c.command = std::max(0, columns - fixed);
  return c;
}

ScreenLine process_heading(const TopModel &model, const ProcessColumns &c, int columns,
                           bool unicode) {
  auto label = [&](const char *name, SortKey key) {
    std::string text = name;
    if (model.sort_key() == key)
      text += model.sort_descending() ? (unicode ? "▼" : "v") : (unicode ? "▲" : "^");
    return text;
  };
  LineBuilder line(columns);
  line.add("GPU", 3, Tone::heading, Align::right);
  line.add(label("PID", SortKey::pid), 9, Tone::heading, Align::right);
  line.add(" " + label("USER", SortKey::user), 11, Tone::heading);
  line.add(label("GPU MEM", SortKey::gpu_memory), 9, Tone::heading, Align::right);
  line.add(label("SM%", SortKey::sm), 5, Tone::heading, Align::right);
  line.add(label("CPU%", SortKey::cpu), 7, Tone::heading, Align::right);
  if (c.host_memory)
    line.add("HOST MEM", 9, Tone::heading, Align::right);
  if (c.container)
    line.add(" CONTAINER", 13, Tone::heading);
  line.add(" ", 1);
  line.add("COMMAND", c.command, Tone::heading);
  return line.take();
}

ScreenLine process_line(const ProcessRow &row, const ProcessColumns &c, int columns, bool unicode) {
  LineBuilder line(columns);
  line.add(std::to_string(row.gpu), 3, Tone::normal, Align::right);
  line.add(or_dash(row.pid), 9, Tone::normal, Align::right);
  line.add(" " + printable_text(row.user.value_or("-"), unicode), 11);
  line.add(mib_text(row.gpu_memory_mib), 9, Tone::normal, Align::right);
  line.add(or_dash(row.sm_percent), 5, Tone::normal, Align::right);
  line.add(row.cpu_percent ? number(*row.cpu_percent, "%.1f") : "-", 7, Tone::normal, Align::right);
  if (c.host_memory)
    line.add(mib_text(row.host_memory_mib), 9, Tone::normal, Align::right);
  if (c.container)
    line.add(" " + printable_text(row.container ? row.container->substr(0, 12) : "-", unicode), 13);
  line.add(" ", 1);
  line.add(printable_text(row.command.value_or("-"), unicode), c.command);
  return line.take();
}

ScreenLine footer_line(const TopModel &model, int columns) {
  LineBuilder line(columns);
  auto key = [&](const char *k, const std::string &what) {
    line.add(k, Tone::heading);
    line.add(" " + what + "  ");
  };
  key("q", "quit");
  line.add("sort ");
  key("m", "mem");
  key("c", "CPU");
  key("s", "SM");
  key("p", "pid");
  key("u", "user");
  key("g", "GPU:" + (model.gpu_filter() ? std::to_string(*model.gpu_filter()) : "all"));
  key("f", "user:" + printable_text(model.user_filter().value_or("all"), true));
  key("a", "all");
  return line.take();
}

ScreenLine text_line(const std::string &text, int columns, Tone style = Tone::normal) {
  LineBuilder line(columns);
  line.add(text, style);
  return line.take();
}

} // namespace

std::vector<ScreenLine> layout_screen(const TopModel &model, TopClock::time_point now,
                                      ScreenSize size, bool unicode) {
  int columns = std::max(size.columns, 0), lines = std::max(size.lines, 1);
  std::vector<ScreenLine> body;
  body.push_back(header_line(model, now, columns));
  const std::optional<Snapshot> &latest = model.latest();
  bool late = model.late(now);
  std::vector<ProcessRow> rows;
  bool any_process_list = false;
  if (latest) {
    GpuColumns gpu_cols = gpu_columns(columns);
    body.push_back(gpu_heading(gpu_cols, columns));
    for (const Gpu &gpu : latest->gpus) {
      body.push_back(gpu_line(gpu, model, gpu_cols, columns, late, unicode));
      if (gpu.mig_devices)
        for (const MigDevice &mig : *gpu.mig_devices)
          body.push_back(mig_line(mig, columns, late, unicode));
      any_process_list = any_process_list || gpu.processes.has_value();
    }
    for (const LostGpu &gpu : model.lost_gpus()) {
      LineBuilder line(columns);
      line.add(std::to_string(gpu.index) + "  ", 4, Tone::normal, Align::right);
      if (gpu_cols.name)
        line.add(printable_text(gpu.name.value_or("-"), unicode), 23);
      line.add("lost: not in the latest sample", Tone::alarm);
      body.push_back(line.take());
    }
    rows = model.process_rows();
  }
  if (model.message())
    body.push_back(text_line(printable_text(*model.message(), unicode), columns, Tone::alarm));

  // What is left under the GPUs, less the footer: a blank line, the table's heading, its rows.
  int room = lines - 1 - static_cast<int>(body.size());
  if (latest && room >= 3) {
    body.emplace_back();
    --room;
    ProcessColumns proc_cols = process_columns(columns);
    if (late) {
      body.push_back(text_line("processes hidden: the latest sample is " +
                                   age_text(model.sample_age(now).value_or(milliseconds(0))) +
                                   " old",
                               columns, Tone::alarm));
    } else if (!any_process_list) {
      body.push_back(text_line("no process list from this source", columns, Tone::dim));
    } else {
      body.push_back(process_heading(model, proc_cols, columns, unicode));
      --room;
      int count = static_cast<int>(rows.size());
      int shown = count <= room ? count : room - 1;
      int first = std::clamp(model.scroll_offset(), 0, std::max(0, count - shown));
      for (int i = first; i < first + shown; ++i)
        body.push_back(
            process_line(rows[static_cast<std::size_t>(i)], proc_cols, columns, unicode));
      if (count > shown) {
        int below = count - first - shown;
        body.push_back(text_line(std::to_string(below) + " more, " + std::to_string(first) +
                                     " above (" + (unicode ? "↑↓" : "up/down") + " scroll)",
                                 columns, Tone::dim));
      }
      if (count == 0)
        body.push_back(text_line(model.gpu_filter() || model.user_filter()
                                     ? "no process matches the filter"
                                     : "no compute process",
                                 columns, Tone::dim));
    }
  }
  body.resize(static_cast<std::size_t>(lines - 1));
  body.push_back(footer_line(model, columns));
  return body;
}

std::string line_text(const ScreenLine &line) {
  std::string text;
  for (const Span &span : line)
    text += span.text;
  return text;
}

} // namespace nvsmi
