#include "terminal/top_layout.hpp"

#include "core/command_text.hpp"
#include "core/number_text.hpp"
#include "core/screen_text.hpp"
#include "core/signal_name.hpp"

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

// NVLink's busier direction (saturation is judged on it: each direction has the whole capacity)
// in decimal bytes a second, "410G", and its share of the links' capacity where `nvlink -s` gave
// it, "410G 86%"; "-" where dmon (or --nvlink-counters) gives neither direction.
std::string nvlink_text(const Gpu &gpu) {
  const Reading &rx = gpu.nvlink_rx_bytes_per_second, &tx = gpu.nvlink_tx_bytes_per_second;
  if (!rx && !tx)
    return "-";
  double busier = static_cast<double>(std::max(rx.value_or(0), tx.value_or(0)));
  std::string text = busier < 1e9    ? number(busier / 1e6, "%.0fM")
                     : busier < 1e11 ? number(busier / 1e9, "%.1fG")
                                     : number(busier / 1e9, "%.0fG");
  if (gpu.nvlink_bandwidth_bytes_per_second && *gpu.nvlink_bandwidth_bytes_per_second > 0)
    text += number(
        std::min(999.0, 100 * busier / static_cast<double>(*gpu.nvlink_bandwidth_bytes_per_second)),
        " %.0f%%");
  return text;
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

// An age in whole seconds under `seconds_below`, whole minutes under `minutes_below` seconds, else
// whole hours.
std::string whole_units_text(milliseconds age, long seconds_below, long minutes_below) {
  long seconds = static_cast<long>(age.count() / 1000);
  if (seconds < seconds_below)
    return std::to_string(seconds) + " s";
  if (seconds < minutes_below)
    return std::to_string(seconds / 60) + " min";
  return std::to_string(seconds / 3600) + " h";
}

std::string age_text(milliseconds age) { return whole_units_text(age, 120, 7200); }

// A point of the history's time scale: seconds up to ten minutes, then minutes, then hours.
std::string scale_text(milliseconds age) { return whole_units_text(age, 600, 36000); }

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

std::string sparkline(const std::deque<HistoryPoint> &history, int width, bool unicode) {
  static const char *const levels[] = {"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
  static const char ascii_levels[] = "_.-=+*##";
  std::string out;
  std::size_t shown = std::min(history.size(), static_cast<std::size_t>(std::max(width, 0)));
  for (std::size_t i = history.size() - shown; i < history.size(); ++i) {
    const Reading &value = history[i].utilization;
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

// "NVLINK" over "410G 100%" and a space.
constexpr int nvlink_width = 10;

// Column widths of the GPU rows for a screen `columns` wide: the users stay at every width (who
// holds a GPU is what people look for), the fan and the performance state go under 100, SM and
// tensor activity (dmon's GPM) under 110, NVLink's traffic under 170 (the sparkline keeps its room
// at 160).
struct GpuColumns {
  bool name = false, fan_and_pstate = false, activity = false, nvlink = false;
  bool power = true; // the compact view leaves it to the state ("at power limit")
  int bar = 0;
  int users = 10;
  int history = 0; // the sparkline takes what is left

  // The readings' columns, from utilization to the users and the space after them: what a stale
  // row leaves blank, and with the index, name and state what the sparkline does not get.
  int readings_width() const {
    return (bar + 6) + (activity ? 10 : 0) + (nvlink ? nvlink_width : 0) + (bar + 12) +
           (bar + (power ? 11 : 0)) + 4 + (fan_and_pstate ? 9 : 0) + 1 + users + 1;
  }
};
// The longest state's name, "allocated but idle", and a space: no state is cut.
constexpr int state_width = 19;

GpuColumns gpu_columns(int columns, bool compact) {
  GpuColumns c;
  if (compact) {
    c.power = false;
    c.users = std::max(10, columns - 29 - state_width);
    return c;
  }
  c.name = columns >= 140;
  c.fan_and_pstate = columns >= 100;
  c.activity = columns >= 110;
  c.nvlink = columns >= 170;
  c.bar = columns >= 160 ? 12 : columns >= 120 ? 8 : 4;
  c.users = columns >= 160 ? 18 : columns >= 120 ? 14 : 10;
  c.history = std::max(0, columns - (4 + (c.name ? 23 : 0) + state_width + c.readings_width()));
  return c;
}

ScreenLine gpu_heading(const GpuColumns &c, int columns) {
  LineBuilder line(columns);
  line.add("GPU", 4, Tone::heading);
  if (c.name)
    line.add("NAME", 23, Tone::heading);
  line.add("STATE", state_width, Tone::heading);
  line.add("UTIL", c.bar + 6, Tone::heading);
  if (c.activity) {
    line.add("SM", 4, Tone::heading, Align::right);
    line.add("TENS", 5, Tone::heading, Align::right);
    line.add(" ", 1);
  }
  if (c.nvlink)
    line.add("NVLINK", nvlink_width, Tone::heading);
  line.add("MEMORY", c.bar + 12, Tone::heading);
  line.add("POWER", c.bar + 11, Tone::heading);
  line.add("TEMP", 4, Tone::heading, Align::right);
  if (c.fan_and_pstate) {
    line.add("FAN", 5, Tone::heading, Align::right);
    line.add("PS", 4, Tone::heading, Align::right);
  }
  line.add(" ", 1);
  line.add("USERS", c.users, Tone::heading);
  line.add(" ", 1);
  line.add(c.history >= 19 ? "UTILIZATION HISTORY" : "HIST", c.history, Tone::heading);
  return line.take();
}

// Who has processes on the GPU, each once, in the order listed: "alice,bob"; "?" for a process
// whose user is not known here, "-" when the source gives no process list, "" for none.
std::string gpu_users(const Gpu &gpu, bool unicode) {
  if (!gpu.processes)
    return "-";
  std::vector<std::string> users;
  for (const Process &process : *gpu.processes) {
    std::string user = process.user ? printable_text(*process.user, unicode) : "?";
    if (std::find(users.begin(), users.end(), user) == users.end())
      users.push_back(user);
  }
  std::string text;
  for (const std::string &user : users)
    text += (text.empty() ? "" : ",") + user;
  return text;
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
    line.add("stale", state_width, Tone::alarm);
    line.add("", c.readings_width());
    line.add(spark, c.history, Tone::dim);
    return line.take();
  }
  GpuState state = gpu_state(gpu);
  line.add(std::string(gpu_state_name(state)), state_width, state_tone(state));

  line.add(bar(fraction(real(gpu.utilization_gpu_percent), 100.0), c.bar, unicode), c.bar,
           Tone::busy);
  line.add(or_dash(gpu.utilization_gpu_percent, "%"), 5, Tone::normal, Align::right);
  line.add(" ", 1);
  if (c.activity) {
    // SMs with a warp resident and tensor pipes busy: "-" where this GPU or driver has no GPM.
    line.add(or_dash(gpu.sm_active_percent, "%"), 4, Tone::normal, Align::right);
    line.add(or_dash(gpu.tensor_active_percent, "%"), 5, Tone::normal, Align::right);
    line.add(" ", 1);
  }
  if (c.nvlink)
    line.add(nvlink_text(gpu), nvlink_width);

  GpuStateThresholds thresholds;
  std::optional<double> memory_used =
      fraction(real(gpu.memory_used_mib), real(gpu.memory_total_mib));
  Tone memory_tone = memory_used && *memory_used >= gpu_thresholds::memory_full_fraction
                         ? Tone::alarm
                         : Tone::normal;
  line.add(bar(memory_used, c.bar, unicode), c.bar,
           memory_tone == Tone::alarm ? Tone::alarm : Tone::busy);
  std::string memory = "-";
  if (gpu.memory_used_mib || gpu.memory_total_mib) {
    std::string total = mib_text(gpu.memory_total_mib);
    memory = mib_text(gpu.memory_used_mib);
    if (!memory.empty() && memory.back() == total.back() && memory.back() != '-')
      memory.pop_back(); // "40.0/80.0G", one unit for both
    memory += "/" + total;
  }
  line.add(memory, 11, memory_tone, Align::right);
  line.add(" ", 1);

  std::optional<double> power = fraction(gpu.power_draw_w, gpu.power_limit_w);
  bool at_limit = power && *power >= thresholds.power_limit_fraction;
  line.add(bar(power, c.bar, unicode), c.bar, at_limit ? Tone::alarm : Tone::busy);
  std::string watts = "-";
  if (gpu.power_draw_w || gpu.power_limit_w)
    watts = (gpu.power_draw_w ? number(*gpu.power_draw_w, "%.0f") : "-") + "/" +
            (gpu.power_limit_w ? number(*gpu.power_limit_w, "%.0f") : "-") + "W";
  if (c.power) {
    line.add(watts, 10, at_limit ? Tone::alarm : Tone::normal, Align::right);
    line.add(" ", 1);
  }

  bool hot = gpu.temperature_c && *gpu.temperature_c >= thresholds.hot_at_c;
  line.add(or_dash(gpu.temperature_c, "C"), 4, hot ? Tone::alarm : Tone::normal, Align::right);
  if (c.fan_and_pstate) {
    line.add(or_dash(gpu.fan_speed_percent, "%"), 5, Tone::normal, Align::right);
    line.add(printable_text(gpu.pstate.value_or("-"), unicode), 4, Tone::normal, Align::right);
  }
  line.add(" ", 1);
  line.add(cut_to_columns(gpu_users(gpu, unicode), static_cast<std::size_t>(c.users)), c.users);
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
ProcessColumns process_columns(int columns, bool compact) {
  ProcessColumns c{columns >= 72 && !compact, columns >= 100 && !compact, 0};
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

ScreenLine process_line(const ProcessRow &row, const ProcessColumns &c, int columns, bool unicode,
                        bool selected) {
  LineBuilder line(columns);
  std::string indent;
  if (row.depth > 0)
    indent = std::string(static_cast<std::size_t>(std::min(row.depth - 1, 8) * 2), ' ') +
             (unicode ? "└ " : "`-");
  if (!row.listed) {
    // An ancestor shown for the tree: its pid and the kernel's name for it, nothing to select.
    line.add("", 3);
    line.add(or_dash(row.pid), 9, Tone::dim, Align::right);
    line.add("", 11 + 9 + 5 + 7 + (c.host_memory ? 9 : 0) + (c.container ? 13 : 0));
    line.add(" ", 1);
    line.add(indent + printable_text(row.command.value_or("-"), unicode), c.command, Tone::dim);
    return line.take();
  }
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
  line.add(indent + printable_text(row.command ? shown_command(*row.command) : "-", unicode),
           c.command);
  ScreenLine spans = line.take();
  for (Span &span : spans)
    span.selected = selected;
  return spans;
}

ScreenLine text_line(const std::string &text, int columns, Tone style = Tone::normal) {
  LineBuilder line(columns);
  line.add(text, style);
  return line.take();
}

ScreenLine footer_line(const TopModel &model, int columns, bool unicode) {
  LineBuilder line(columns);
  if (const std::optional<PendingSignal> &pending = model.pending_signal()) {
    const ProcessRow &p = pending->process;
    line.add("send " + signal_name(pending->signal) + " to pid " + or_dash(p.pid) + " (" +
                 printable_text(p.user.value_or("user unknown"), unicode) + ": " +
                 printable_text(p.command ? shown_command(*p.command) : "-", unicode) +
                 ")? y: send, any other key: cancel",
             Tone::alarm);
    return line.take();
  }
  if (const auto &status = model.status()) {
    line.add(printable_text(status->first, unicode), status->second ? Tone::alarm : Tone::good);
    return line.take();
  }
  auto key = [&](const char *k, const std::string &what) {
    line.add(k, Tone::heading);
    line.add(" " + what + "  ");
  };
  key("q", "quit");
  key("?", "help");
  key("g", "GPU:" + (model.gpu_filter() ? std::to_string(*model.gpu_filter()) : "all"));
  key("f", "user:" + printable_text(model.user_filter().value_or("all"), unicode));
  key("a", "all");
  key(unicode ? "↑↓" : "up/down", "select");
  key("T/K/I", "signal");
  key("t", "tree");
  return line.take();
}

// Every key, and what the colours mean by the thresholds' own numbers.
std::vector<ScreenLine> help_lines(int columns, bool unicode) {
  std::vector<std::pair<std::string, std::string>> keys = {
      {"? h", "this help; any key closes it"},
      {"q", "quit (Ctrl-C too)"},
      {"m c s p u", "sort by GPU memory, CPU, SM, pid, user; the same key again reverses"},
      {"g", "only one GPU's processes: the first, the next, ... then all (or click its row)"},
      {"f", "only one user's processes: the first, the next, ... then all"},
      {"a Esc", "all processes again (clears both filters)"},
      {unicode ? "↑ ↓ j k" : "up down j k",
       "select a GPU process (PgUp, PgDn, space: a page; or click it)"},
      {"T K I", "send the selected process SIGTERM, SIGKILL or SIGINT: asks first, y sends"},
      {"t", "tree view: each process under its parent"},
      {"z", "compact view (on by itself under " + std::to_string(compact_below.columns) + "x" +
                std::to_string(compact_below.lines) + ")"},
  };
  std::vector<ScreenLine> out;
  out.push_back(text_line("Keys", columns, Tone::heading));
  for (const auto &[k, what] : keys) {
    LineBuilder line(columns);
    line.add("  ");
    line.add(k, 12, Tone::heading);
    line.add(what);
    out.push_back(line.take());
  }
  out.emplace_back();
  out.push_back(text_line("Colours", columns, Tone::heading));
  out.push_back(text_line("  red: hot (" + std::to_string(gpu_thresholds::hot_c) +
                              " C or more), power at " +
                              number(gpu_thresholds::power_limit_fraction * 100, "%.0f%%") +
                              " of its limit or more, memory " +
                              number(gpu_thresholds::memory_full_fraction * 100, "%.0f%%") +
                              " full or more, failing, lost, a late sample",
                          columns));
  out.push_back(text_line("  yellow: idle but held (utilization under " +
                              number(gpu_thresholds::idle_below_percent, "%.0f%%") +
                              " with processes on it)  green: free  cyan: in use",
                          columns));
  out.emplace_back();
  out.push_back(text_line("A signal goes only to a process listed here, only after y, and only "
                          "if the kernel lets you send it;",
                          columns, Tone::dim));
  out.push_back(
      text_line("a pid that now names another process is never signalled.", columns, Tone::dim));
  return out;
}

// Each GPU's utilization over as much time as the free lines and columns hold: `height` rows of
// block characters per GPU (a column per sample, the newest on the right), and a time scale
// under it that says how long ago its left edge was.
std::vector<ScreenLine> history_chart(const TopModel &model, TopClock::time_point now, int columns,
                                      int height, bool unicode) {
  std::vector<ScreenLine> out;
  const int label = 7, width = std::max(0, columns - label - 1);
  static const char *const eighths[] = {" ", "▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
  std::optional<TopClock::time_point> oldest;
  for (const Gpu &gpu : model.latest()->gpus) {
    const std::deque<HistoryPoint> &history = model.utilization_history(gpu.index);
    std::size_t shown = std::min(history.size(), static_cast<std::size_t>(width));
    std::size_t first = history.size() - shown;
    if (shown && (!oldest || history[first].at < *oldest))
      oldest = history[first].at;
    for (int row = height - 1; row >= 0; --row) {
      LineBuilder line(columns);
      line.add(row == height - 1 ? "GPU " + std::to_string(gpu.index) : "", label, Tone::heading);
      line.add(unicode ? "│" : "|", 1, Tone::dim);
      std::string cells(static_cast<std::size_t>(width - static_cast<int>(shown)), ' ');
      for (std::size_t i = first; i < history.size(); ++i) {
        const Reading &value = history[i].utilization;
        if (!value) {
          cells += ' '; // unknown: nothing drawn, never a zero
          continue;
        }
        int level = static_cast<int>(std::clamp<std::int64_t>(*value, 0, 100) * height * 8 / 100);
        int here = std::clamp(level - row * 8, 0, 8);
        cells += unicode ? eighths[here] : (here >= 4 ? "#" : " ");
      }
      line.add(cells, width, Tone::busy);
      out.push_back(line.take());
    }
  }
  // The scale: the left edge's age, the middle's, and now.
  LineBuilder scale(columns);
  scale.add("", label + 1);
  milliseconds span =
      oldest ? std::chrono::duration_cast<milliseconds>(now - *oldest) : milliseconds(0);
  if (span >= std::chrono::seconds(1)) {
    std::string left = "-" + scale_text(span), middle = "-" + scale_text(span / 2);
    int left_part = width / 2 - static_cast<int>(text_columns(middle)) / 2;
    bool room_for_middle = middle != left && left_part > static_cast<int>(text_columns(left)) &&
                           width - left_part - static_cast<int>(text_columns(middle)) > 3;
    if (room_for_middle) {
      scale.add(left, left_part, Tone::dim);
      scale.add(middle, width - left_part - 3, Tone::dim);
    } else {
      scale.add(left, width - 3, Tone::dim);
    }
  } else {
    scale.add("", width - 3); // one sample so far: it is now
  }
  scale.add("now", Tone::dim);
  out.push_back(scale.take());
  return out;
}

// The one fleet summary (nvsmi/gpu_state.hpp), its user names made printable; without UTF-8 its
// separator would turn to '?', so '|' stands in.
std::string summary_text(const Snapshot &snapshot, bool unicode) {
  std::string text = fleet_summary_text(fleet_summary(snapshot));
  if (!unicode)
    for (std::size_t at; (at = text.find("\u00b7")) != std::string::npos;)
      text.replace(at, std::string("\u00b7").size(), "|");
  return printable_text(text, unicode);
}

} // namespace

std::vector<ScreenLine> layout_screen(const TopModel &model, TopClock::time_point now,
                                      ScreenSize size, bool unicode, ClickTargets *targets) {
  std::vector<std::optional<std::size_t>> *rows_shown = targets ? &targets->process_rows : nullptr;
  if (targets) {
    targets->process_rows.clear();
    targets->gpus.clear();
  }
  int columns = std::max(size.columns, 0), lines = std::max(size.lines, 1);
  std::vector<ScreenLine> body;
  body.push_back(header_line(model, now, columns));
  if (model.help()) {
    for (ScreenLine &line : help_lines(columns, unicode))
      body.push_back(std::move(line));
    body.resize(static_cast<std::size_t>(lines - 1));
    body.push_back(footer_line(model, columns, unicode));
    return body;
  }
  bool compact = model.compact() || columns < compact_below.columns || lines < compact_below.lines;
  const std::optional<Snapshot> &latest = model.latest();
  bool late = model.late(now);
  std::vector<ProcessRow> rows;
  bool any_process_list = false;
  if (latest) {
    // The fleet at a glance first; a late sample's states are not the present.
    body.push_back(late
                       ? text_line("states hidden: the latest sample is late", columns, Tone::alarm)
                       : text_line(summary_text(*latest, unicode), columns));
    GpuColumns gpu_cols = gpu_columns(columns, compact);
    if (!compact)
      body.push_back(gpu_heading(gpu_cols, columns));
    for (const Gpu &gpu : latest->gpus) {
      if (targets) {
        targets->gpus.resize(body.size());
        targets->gpus.push_back(gpu.index);
      }
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
  if (latest && room >= (compact ? 2 : 3)) {
    if (!compact) {
      body.emplace_back();
      --room;
    }
    ProcessColumns proc_cols = process_columns(columns, compact);
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
      int first = 0;
      std::optional<std::size_t> selected = model.selected_row(rows);
      if (selected) { // the selected row is always on the screen
        int at = static_cast<int>(*selected);
        first = std::clamp(first, std::max(0, at - shown + 1), at);
      }
      for (int i = first; i < first + shown; ++i) {
        if (rows_shown) {
          rows_shown->resize(body.size());
          rows_shown->push_back(static_cast<std::size_t>(i));
        }
        body.push_back(process_line(rows[static_cast<std::size_t>(i)], proc_cols, columns, unicode,
                                    selected && static_cast<int>(*selected) == i));
      }
      if (count > shown) {
        int below = count - first - shown;
        body.push_back(text_line(std::to_string(below) + " more, " + std::to_string(first) +
                                     " above (" + (unicode ? "↑↓" : "up/down") + " select)",
                                 columns, Tone::dim));
      }
      if (count == 0)
        body.push_back(text_line(model.gpu_filter() || model.user_filter()
                                     ? "no process matches the filter"
                                     : "no compute process",
                                 columns, Tone::dim));
    }
  }
  // The lines left over hold the history: a row per GPU at least, four at most, and its scale.
  room = lines - 1 - static_cast<int>(body.size());
  std::size_t gpus = latest ? latest->gpus.size() : 0;
  if (latest && !late && !compact && gpus > 0 && room >= static_cast<int>(gpus) + 2) {
    int height = std::min(4, (room - 2) / static_cast<int>(gpus));
    body.emplace_back();
    for (ScreenLine &line : history_chart(model, now, columns, height, unicode))
      body.push_back(std::move(line));
  }
  body.resize(static_cast<std::size_t>(lines - 1));
  body.push_back(footer_line(model, columns, unicode));
  if (targets) {
    targets->process_rows.resize(body.size());
    targets->gpus.resize(body.size());
  }
  return body;
}

std::string line_text(const ScreenLine &line) {
  std::string text;
  for (const Span &span : line)
    text += span.text;
  return text;
}

} // namespace nvsmi
