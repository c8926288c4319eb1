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
  int name = 0; // the GPU's name, where shown
  bool fan_and_pstate = false, activity = false, nvlink = false;
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
  c.name = columns >= 140 ? 23 : 0;
  c.fan_and_pstate = columns >= 100;
  c.activity = columns >= 110;
  c.nvlink = columns >= 170;
  c.bar = columns >= 160 ? 12 : columns >= 120 ? 8 : 4;
  c.users = columns >= 160 ? 18 : columns >= 120 ? 14 : 10;
  c.history = std::max(0, columns - (4 + c.name + state_width + c.readings_width()));
  return c;
}

// top --hosts' rows: no history; its room goes to the GPU's name (fleets mix models), for which the
// SM and tensor activity make way, then to the users.
GpuColumns fleet_columns(int columns) {
  bool compact = columns < compact_below.columns;
  GpuColumns c = gpu_columns(columns, compact);
  if (compact)
    return c;
  constexpr int least_name = 12, activity_width = 10;
  int left = c.history + c.name;
  c.history = 0;
  if (left < least_name && c.activity) {
    c.activity = false;
    left += activity_width;
  }
  c.name = left >= least_name ? std::min(23, left) : 0;
  c.users += left - c.name;
  return c;
}

ScreenLine gpu_heading(const GpuColumns &c, int columns) {
  LineBuilder line(columns);
  line.add("GPU", 4, Tone::heading);
  line.add("NAME", c.name, Tone::heading);
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
  if (c.history > 0)
    line.add(c.history >= 19 ? "UTILIZATION HISTORY" : "HIST", c.history, Tone::heading);
  return line.take();
}

// Who has processes on the GPU, each once, in the order listed: "alice,bob"; "?" for a process
// whose user is not known here, "-" when the source gives no process list, "" for none.
// The users of `processes`, each once in their order: "alice,bob" ("?" for one not known).
std::string users_text(const std::vector<const Process *> &processes, bool unicode) {
  std::vector<std::string> users;
  for (const Process *process : processes) {
    std::string user = process->user ? printable_text(*process->user, unicode) : "?";
    if (std::find(users.begin(), users.end(), user) == users.end())
      users.push_back(user);
  }
  std::string text;
  for (const std::string &user : users)
    text += (text.empty() ? "" : ",") + user;
  return text;
}

std::string gpu_users(const Gpu &gpu, bool unicode) {
  if (!gpu.processes)
    return "-";
  std::vector<const Process *> all;
  for (const Process &process : *gpu.processes)
    all.push_back(&process);
  return users_text(all, unicode);
}

std::optional<double> fraction(std::optional<double> part, std::optional<double> whole) {
  if (!part || !whole || *whole <= 0)
    return std::nullopt;
  return *part / *whole;
}
std::optional<double> real(const Reading &value) {
  return value ? std::optional<double>(static_cast<double>(*value)) : std::nullopt;
}

// `history`: the GPU's utilization for the sparkline; none in top --hosts.
ScreenLine gpu_line(const Gpu &gpu, const std::deque<HistoryPoint> &history, const GpuColumns &c,
                    int columns, bool late, bool unicode) {
  LineBuilder line(columns);
  line.add(std::to_string(gpu.index) + "  ", 4, Tone::normal, Align::right);
  // Two columns of the name's cell stay blank, so that a name cut to fit never runs into the
  // state after it ("NVIDIA H100 80Gidle").
  line.add(fit_text(printable_text(gpu.name.value_or("-"), unicode), std::max(0, c.name - 2)),
           c.name);
  std::string spark = sparkline(history, c.history, unicode);
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

// A MIG instance under its GPU: "└ MIG 1  2g.20gb  GI 2 CI 0  in use  memory 3.9G/19.5G  alice",
// its state mig_state's and its users those of the processes on it; its profile where -L gave
// it. No state or readings once the sample is late.
ScreenLine mig_line(const Gpu &gpu, const MigDevice &mig, int columns, bool late, bool unicode) {
  LineBuilder line(columns);
  line.add(unicode ? "   └ " : "   `-", 5);
  line.add("MIG " + or_dash(mig.index) + "  ");
  if (mig.profile)
    line.add(cut_to_columns(printable_text(*mig.profile, unicode), 16) + "  ");
  line.add("GI " + or_dash(mig.gpu_instance_id) + " CI " + or_dash(mig.compute_instance_id));
  if (late)
    return line.take();
  GpuState state = mig_state(gpu, mig);
  line.add("  ");
  line.add(std::string(gpu_state_name(state)), state_tone(state));
  std::string used = mib_text(mig.memory_used_mib), total = mib_text(mig.memory_total_mib);
  line.add("  memory " + used + "/" + total);
  if (std::vector<const Process *> on_it = placed_on(gpu, mig); !on_it.empty())
    line.add("  " + users_text(on_it, unicode));
  return line.take();
}

// 0.42%, 3.1%, 12%: two figures that say something at any size.
std::string core_share_text(double percent) {
  return number(percent, percent < 1 ? "%.2f%%" : percent < 10 ? "%.1f%%" : "%.0f%%");
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
    // Over ten seconds at least: before, it is mostly the cost of starting nvidia-smi.
    const std::optional<AgentCost> &cost = model.cost();
    if (cost && cost->core_percent && cost->window_seconds >= 10)
      parts.push_back(
          {"monitor " + core_share_text(*cost->core_percent) + " of a core", Tone::normal});
    // What --cpu-budget has given up to keep to it: the latest step says what is slower or
    // unknown now (the ladder's earlier steps are in force with it), never silent.
    if (cost && cost->budget_percent && !cost->budget_steps.empty())
      parts.push_back({"budget " + trimmed_text(*cost->budget_percent, 2) +
                           "%: " + printable_text(cost->budget_steps.back(), true),
                       Tone::warning});
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
// host memory, so that the command keeps room at 80 columns; the user goes only where the command
// would keep fewer than least_command_columns (the GPU rows still name the users).
constexpr int least_command_columns = 8;
struct ProcessColumns {
  bool host_memory, container, user = true;
  int command = 0;
};
ProcessColumns process_columns(int columns, bool compact) {
  ProcessColumns c{columns >= 72 && !compact, columns >= 100 && !compact};
  int fixed = 3 + 9 + 11 + 9 + 5 + 7 + (c.host_memory ? 9 : 0) + (c.container ? 13 : 0) + 1;
  c.command = std::max(0, columns - fixed);
  if (c.command < least_command_columns) {
    c.user = false;
    c.command = std::max(0, c.command + 11);
  }
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
  if (c.user)
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
    line.add("", (c.user ? 11 : 0) + 9 + 5 + 7 + (c.host_memory ? 9 : 0) + (c.container ? 13 : 0));
    line.add(" ", 1);
    line.add(indent + printable_text(row.command.value_or("-"), unicode), c.command, Tone::dim);
    return line.take();
  }
  line.add(std::to_string(row.gpu), 3, Tone::normal, Align::right);
  line.add(or_dash(row.pid), 9, Tone::normal, Align::right);
  if (c.user)
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

// The history chart: one column a sample (the newest on the right, at most as many as the screen
// is wide), so that a column's place says how long ago its sample came.
constexpr int chart_label_width = 7; // "GPU 255", then the axis
// No chart narrower than this many samples, nor one that leaves the process table fewer rows than
// this where it has more.
constexpr int least_chart_width = 10, least_table_rows = 5;
struct Chart {
  std::size_t first = 0, shown = 0; // the samples drawn: sample_times()[first, first + shown)
  int width = 0;                    // the columns for samples
  // The GPUs of the latest sample that have a known reading in a drawn sample, each with its
  // readings at the drawn samples (nullopt: unknown, or not in that sample).
  std::vector<std::pair<int, std::vector<Reading>>> gpus;
};

Chart chart_of(const TopModel &model, int columns) {
  Chart chart;
  chart.width = std::max(0, columns - chart_label_width - 1);
  const std::deque<TopClock::time_point> &times = model.sample_times();
  chart.shown = std::min(times.size(), static_cast<std::size_t>(chart.width));
  chart.first = times.size() - chart.shown;
  if (!model.latest() || chart.shown == 0)
    return chart;
  for (const Gpu &gpu : model.latest()->gpus) {
    const std::deque<HistoryPoint> &history = model.utilization_history(gpu.index);
    std::vector<Reading> readings(chart.shown);
    // Both in time order: each drawn sample's time is looked for in the GPU's points.
    auto point =
        std::lower_bound(history.begin(), history.end(), times[chart.first],
                         [](const HistoryPoint &p, TopClock::time_point at) { return p.at < at; });
    bool known = false;
    for (std::size_t i = 0; i < chart.shown; ++i) {
      TopClock::time_point at = times[chart.first + i];
      while (point != history.end() && point->at < at)
        ++point;
      if (point != history.end() && point->at == at) {
        readings[i] = point->utilization;
        known = known || point->utilization.has_value();
      }
    }
    if (known)
      chart.gpus.emplace_back(gpu.index, std::move(readings));
  }
  return chart;
}

// How long before the newest drawn sample sample `i` (of those drawn) came: "-87 s", to the
// nearest second.
std::string chart_age(const TopModel &model, const Chart &chart, std::size_t i) {
  const std::deque<TopClock::time_point> &times = model.sample_times();
  milliseconds age =
      std::chrono::duration_cast<milliseconds>(times.back() - times[chart.first + i]);
  return "-" + scale_text(age + milliseconds(500));
}

// Under the chart: the oldest drawn column's age at that column, one in the middle where there is
// room, and `now` at the newest; each corner points up at the column it names. A span the columns
// do not hold is never labelled.
ScreenLine chart_scale(const TopModel &model, const Chart &chart, int columns, bool unicode) {
  std::vector<std::string> cells(static_cast<std::size_t>(chart.width), " ");
  const std::string up_right = unicode ? "└" : "|", up_left = unicode ? "┘" : "|";
  // `text` (ASCII) into the cells from `at`, when all of it fits in [`from`, `to`).
  auto put = [&](const std::string &text, int at, int from, int to) {
    if (at < from || at + static_cast<int>(text.size()) > to)
      return false;
    for (std::size_t i = 0; i < text.size(); ++i)
      cells[static_cast<std::size_t>(at) + i] = std::string(1, text[i]);
    return true;
  };
  int newest = chart.width - 1, oldest = chart.width - static_cast<int>(chart.shown);
  int taken_from = chart.width; // the left end of the `now` label
  if (chart.shown == 1) {
    put("now", newest - 2, 0, chart.width); // one sample: it is now
    taken_from = newest - 2;
  } else if (chart.shown >= 6) { // with a blank between it and the oldest column's corner
    put("now", newest - 3, 0, chart.width);
    cells[static_cast<std::size_t>(newest)] = up_left;
    taken_from = newest - 3;
  }
  int used_to = 0; // the right end of the oldest label
  if (chart.shown > 1) {
    // After the oldest column where it fits, else before it (the columns there hold nothing).
    std::string age = chart_age(model, chart, 0);
    if (put(age, oldest + 1, 0, taken_from - 1)) {
      cells[static_cast<std::size_t>(oldest)] = up_right;
      used_to = oldest + 1 + static_cast<int>(age.size());
    } else if (put(age, oldest - static_cast<int>(age.size()), 0, oldest)) {
      cells[static_cast<std::size_t>(oldest)] = up_left;
      used_to = oldest + 1;
    }
  }
  if (chart.shown >= 40) {
    std::size_t middle = chart.shown / 2;
    int at = oldest + static_cast<int>(middle);
    if (put(chart_age(model, chart, middle), at + 1, used_to + 2, taken_from - 2))
      cells[static_cast<std::size_t>(at)] = up_right;
  }
  LineBuilder line(columns);
  line.add("", chart_label_width + 1);
  std::string text;
  for (const std::string &cell : cells)
    text += cell;
  line.add(text, chart.width, Tone::dim);
  return line.take();
}

// The chart's lines: a title that says what a column is, `height` rows of block characters per
// GPU with history, and the time scale.
std::vector<ScreenLine> history_chart(const TopModel &model, const Chart &chart, int columns,
                                      int height, bool unicode) {
  std::vector<ScreenLine> out;
  static const char *const eighths[] = {" ", "▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
  LineBuilder title(columns);
  title.add("UTILIZATION", Tone::heading);
  title.add("  one column per sample, every " + seconds_text(model.interval()) + " s", Tone::dim);
  out.push_back(title.take());
  for (const auto &[index, readings] : chart.gpus) {
    for (int row = height - 1; row >= 0; --row) {
      LineBuilder line(columns);
      line.add(row == height - 1 ? "GPU " + std::to_string(index) : "", chart_label_width);
      line.add(unicode ? "│" : "|", 1, Tone::dim);
      std::string cells(static_cast<std::size_t>(chart.width) - chart.shown, ' ');
      for (const Reading &value : readings) {
        if (!value) {
          cells += ' '; // unknown: nothing drawn, never a zero
          continue;
        }
        int level = static_cast<int>(std::clamp<std::int64_t>(*value, 0, 100) * height * 8 / 100);
        int here = std::clamp(level - row * 8, 0, 8);
        cells += unicode ? eighths[here] : (here >= 4 ? "#" : " ");
      }
      line.add(cells, chart.width, Tone::busy);
      out.push_back(line.take());
    }
  }
  out.push_back(chart_scale(model, chart, columns, unicode));
  return out;
}

// The one fleet summary (nvsmi/gpu_state.hpp), its user names made printable; without UTF-8 its
// separator would turn to '?', so '|' stands in.
ScreenLine summary_of(const Snapshot &snapshot, int columns, bool unicode) {
  std::string text = fleet_summary_text(fleet_summary(snapshot));
  if (unicode)
    return summary_line(printable_text(text, true), columns);
  for (std::size_t at; (at = text.find("\u00b7")) != std::string::npos;)
    text.replace(at, std::string("\u00b7").size(), "|");
  return summary_line(printable_text(text, false), columns, " | ");
}

// The state a summary's part counts ("3 free", "1 idle but held (alice)"), if it counts one.
std::optional<GpuState> counted_state(std::string_view part) {
  std::size_t digits = part.find_first_not_of("0123456789");
  if (digits == 0 || digits == std::string_view::npos || part[digits] != ' ')
    return std::nullopt;
  std::string_view rest = part.substr(digits + 1);
  for (GpuState state : {GpuState::lost, GpuState::failing, GpuState::free, GpuState::in_use,
                         GpuState::idle_held, GpuState::allocated_idle, GpuState::idle,
                         GpuState::hot, GpuState::at_power_limit, GpuState::unknown}) {
    std::string_view name = gpu_state_name(state);
    if (rest == name || (rest.size() > name.size() && rest.substr(0, name.size()) == name &&
                         rest.substr(name.size(), 2) == " ("))
      return state;
  }
  return std::nullopt;
}

} // namespace

ScreenLine summary_line(const std::string &text, int columns, const std::string &separator) {
  LineBuilder line(columns);
  auto add = [&](std::string_view part, bool first) {
    // The first part carries the count of GPUs ("8 GPUs: 3 free", "24 GPUs on 5 hosts: 3 free"),
    // a line broken by dotted_lines its indent: what comes before the state's count is plain.
    std::size_t colon = first ? part.find(": ") : std::string_view::npos;
    std::size_t lead = colon == std::string_view::npos ? part.find_first_not_of(' ') : colon + 2;
    if (lead == std::string_view::npos)
      lead = part.size();
    line.add(std::string(part.substr(0, lead)));
    std::optional<GpuState> state = counted_state(part.substr(lead));
    line.add(std::string(part.substr(lead)), state ? state_tone(*state) : Tone::normal);
  };
  std::string_view rest = text;
  for (bool first = true;; first = false) {
    std::size_t at = rest.find(separator);
    if (!first)
      line.add(separator);
    add(rest.substr(0, at), first);
    if (at == std::string_view::npos)
      break;
    rest.remove_prefix(at + separator.size());
  }
  ScreenLine spans = line.take();
  for (Span &span : spans)
    span.strong = true;
  return spans;
}

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
                       : summary_of(*latest, columns, unicode));
    GpuColumns gpu_cols = gpu_columns(columns, compact);
    if (!compact)
      body.push_back(gpu_heading(gpu_cols, columns));
    for (const Gpu &gpu : latest->gpus) {
      if (targets) {
        targets->gpus.resize(body.size());
        targets->gpus.push_back(gpu.index);
      }
      body.push_back(
          gpu_line(gpu, model.utilization_history(gpu.index), gpu_cols, columns, late, unicode));
      if (gpu.mig_devices)
        for (const MigDevice &mig : *gpu.mig_devices)
          body.push_back(mig_line(gpu, mig, columns, late, unicode));
      any_process_list = any_process_list || gpu.processes.has_value();
    }
    for (const LostGpu &gpu : model.lost_gpus()) {
      LineBuilder line(columns);
      line.add(std::to_string(gpu.index) + "  ", 4, Tone::normal, Align::right);
      line.add(printable_text(gpu.name.value_or("-"), unicode), gpu_cols.name);
      line.add("lost: not in the latest sample", Tone::alarm);
      body.push_back(line.take());
    }
    rows = model.process_rows();
  }
  if (model.message())
    body.push_back(text_line(printable_text(*model.message(), unicode), columns, Tone::alarm));

  // What is left under the GPUs, less the footer: the history chart (a blank line, its title, its
  // rows, its scale), then the process table (a blank line, its heading, its rows) down to the
  // footer. The chart's size is fixed first: two rows per GPU with history where the whole table
  // still fits under it, one where at least least_table_rows of it do, else no chart; the table
  // takes every line left.
  int room = lines - 1 - static_cast<int>(body.size());
  Chart chart;
  int chart_height = 0, chart_lines = 0;
  if (latest && !late && !compact) {
    chart = chart_of(model, columns);
    int charted = static_cast<int>(chart.gpus.size());
    int count = any_process_list ? std::max(1, static_cast<int>(rows.size())) : 1;
    int whole_table = 2 + count;
    int least_table = 2 + std::min(count, least_table_rows) + (count > least_table_rows ? 1 : 0);
    if (charted > 0 && chart.width >= least_chart_width) {
      for (int height : {2, 1})
        if (!chart_height && room - (3 + charted * height) >= whole_table)
          chart_height = height;
      if (!chart_height && room - (3 + charted) >= least_table)
        chart_height = 1;
    }
    if (chart_height)
      chart_lines = 3 + charted * chart_height;
  }
  if (chart_height) {
    body.emplace_back();
    for (ScreenLine &line : history_chart(model, chart, columns, chart_height, unicode))
      body.push_back(std::move(line));
  }
  room -= chart_lines;
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
  body.resize(static_cast<std::size_t>(lines - 1));
  body.push_back(footer_line(model, columns, unicode));
  if (targets) {
    targets->process_rows.resize(body.size());
    targets->gpus.resize(body.size());
  }
  return body;
}

ScreenLine fleet_gpu_heading(int columns) {
  if (columns < compact_below.columns)
    return {};
  return gpu_heading(fleet_columns(columns), columns);
}

std::vector<ScreenLine> fleet_gpu_rows(const Snapshot &snapshot, int columns, bool unicode) {
  static const std::deque<HistoryPoint> no_history;
  GpuColumns c = fleet_columns(columns);
  std::vector<ScreenLine> out;
  for (const Gpu &gpu : snapshot.gpus) {
    out.push_back(gpu_line(gpu, no_history, c, columns, false, unicode));
    if (gpu.mig_devices)
      for (const MigDevice &mig : *gpu.mig_devices)
        out.push_back(mig_line(gpu, mig, columns, false, unicode));
  }
  return out;
}

std::string line_text(const ScreenLine &line) {
  std::string text;
  for (const Span &span : line)
    text += span.text;
  return text;
}

} // namespace nvsmi
