#include "formats/format_table.hpp"
#include "formats/dotted_lines.hpp"

#include "core/command_text.hpp"
#include "core/mig_text.hpp"
#include "core/number_text.hpp"
#include "core/screen_text.hpp"
#include "core/tone.hpp"

#include "nvsmi/gpu_state.hpp"
#include "nvsmi/thresholds.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <vector>

namespace nvsmi {
namespace {

// The colours follow the state's own thresholds where there is one, so that a red temperature
// and the word `hot` never disagree.
const GpuStateThresholds state_thresholds;
constexpr std::int64_t temperature_yellow_c = 70;
constexpr std::int64_t utilization_high_percent = 50;
// Memory turns red where a GPU is full (nvsmi/thresholds.hpp, as in `top`, `check` and the
// dashboard), yellow from three quarters.
constexpr double memory_red_percent = gpu_thresholds::memory_full_fraction * 100;
constexpr double memory_yellow_percent = 75;
constexpr double power_yellow_fraction = 0.80;
// Longest shown parts of a process entry, so that one long name leaves room for the others; a
// name keeps at least 8 characters and its `…` before its user gives way (holders_text).
constexpr std::size_t user_columns = 12, program_columns = 20, least_program_columns = 9;
// A GPU name is not cut shorter than this to make room: "H100 80GB", "GTX 1080 Ti" fit.
constexpr std::size_t least_name_columns = 12;
// A lost or failing GPU's reason counts up to this against the names' room, and is shown only
// where at least a few of its letters fit.
constexpr std::size_t note_columns = 32, least_note_columns = 6;

const char *sgr(Tone tone) {
  switch (tone) {
  case Tone::normal:
    return "";
  case Tone::heading:
    return "\x1b[1m";
  case Tone::dim:
    return "\x1b[2m";
  case Tone::alarm:
    return "\x1b[31m";
  case Tone::warning:
    return "\x1b[33m";
  case Tone::good:
    return "\x1b[32m";
  case Tone::busy: // in use, as in `top`
    return "\x1b[36m";
  }
  return "";
}

// A line as pieces of screen text, each in one tone: measured and cut before any escape is in it.
class Line {
public:
  void add(std::string text, Tone tone = Tone::normal) {
    columns_ += text_columns(text);
    pieces_.push_back({std::move(text), tone});
  }
  void gap(std::size_t columns) { add(std::string(columns, ' ')); }
  void add_right_aligned(std::string text, std::size_t width, Tone tone) {
    std::size_t columns = text_columns(text);
    gap(width > columns ? width - columns : 0);
    add(std::move(text), tone);
  }
  void add_left_aligned(std::string text, std::size_t width, Tone tone) {
    std::size_t columns = text_columns(text);
    add(std::move(text), tone);
    gap(width > columns ? width - columns : 0);
  }
  std::size_t columns() const { return columns_; }

  // Newline-terminated, no blanks at its end, cut with `…` where it would pass style.width.
  std::string render(const TableStyle &style) const {
    std::vector<Piece> pieces = pieces_;
    while (!pieces.empty()) {
      std::string &last = pieces.back().text;
      last.erase(last.find_last_not_of(' ') + 1);
      if (!last.empty())
        break;
      pieces.pop_back();
    }
    std::string out;
    std::size_t used = 0;
    std::optional<Tone> open; // the tone whose escape is in effect: one per run of pieces
    for (const Piece &piece : pieces) {
      std::size_t left = style.width > used ? style.width - used : 0;
      std::string text = cut_to_columns(piece.text, left);
      used += text_columns(text);
      std::string escape = style.colour ? sgr(piece.tone) : "";
      if (open && *open != piece.tone && !text.empty()) {
        out += "\x1b[0m";
        open.reset();
      }
      if (!open && !escape.empty() && !text.empty()) {
        out += escape;
        open = piece.tone;
      }
      out += text;
      if (text.size() < piece.text.size())
        break;
    }
    return out + (open ? "\x1b[0m\n" : "\n");
  }

private:
  struct Piece {
    std::string text;
    Tone tone;
  };
  std::vector<Piece> pieces_;
  std::size_t columns_ = 0;
};

std::string or_dash(const Reading &reading, const char *unit = "") {
  return reading ? std::to_string(*reading) + unit : "-";
}

std::string whole_or_dash(const RealReading &reading) {
  return reading ? std::to_string(std::llround(*reading)) : "-";
}

// "used/total unit", or "-" when neither is known.
std::string used_of(const std::string &used, const std::string &total, const char *unit) {
  return used == "-" && total == "-" ? "-" : used + "/" + total + unit;
}

std::string time_text(const std::optional<Timestamp> &timestamp) {
  if (!timestamp)
    return "-";
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%04d-%02d-%02d %02d:%02d:%02d", timestamp->year,
                timestamp->month, timestamp->day, timestamp->hour, timestamp->minute,
                timestamp->second);
  return buffer;
}

RealReading used_percent(const Reading &used, const Reading &total) {
  if (!used || !total || *total <= 0)
    return std::nullopt;
  return static_cast<double>(*used) * 100.0 / static_cast<double>(*total);
}

Tone temperature_tone(const Reading &celsius) {
  if (!celsius)
    return Tone::normal;
  if (*celsius >= state_thresholds.hot_at_c)
    return Tone::alarm;
  return *celsius >= temperature_yellow_c ? Tone::warning : Tone::normal;
}

Tone utilization_tone(const Reading &percent) {
  if (!percent)
    return Tone::normal;
  if (*percent >= utilization_high_percent) // busy as `in use` is, not green as `free` is
    return Tone::busy;
  return static_cast<double>(*percent) < state_thresholds.idle_below_percent ? Tone::dim
                                                                             : Tone::normal;
}

Tone memory_tone(const RealReading &percent) {
  if (!percent)
    return Tone::normal;
  if (*percent >= memory_red_percent)
    return Tone::alarm;
  return *percent >= memory_yellow_percent ? Tone::warning : Tone::normal;
}

Tone power_tone(const Gpu &gpu) {
  if (!gpu.power_draw_w || !gpu.power_limit_w || *gpu.power_limit_w <= 0)
    return Tone::normal;
  double fraction = *gpu.power_draw_w / *gpu.power_limit_w;
  if (fraction >= state_thresholds.power_limit_fraction)
    return Tone::alarm;
  return fraction >= power_yellow_fraction ? Tone::warning : Tone::normal;
}

// A process entry's parts, `user:name(MiB)`: the user, else the uid, else `?`; the name every
// screen gives the process (core/command_text's process_name: `train.py` for `python3 -u
// train.py`), else `?`. Several processes of one user and name may be one entry,
// `user:name×N(MiB)`, with their memory summed; where the users give way, every process of one
// name is one entry, `name×N`.
struct ProcessEntry {
  std::string user, program;
  Reading memory_mib;
  std::size_t count = 1;

  std::string text(std::size_t program_room, bool with_user, bool with_memory) const {
    std::string out = with_user ? user + ":" : std::string();
    out += cut_to_columns(program, program_room);
    if (count > 1)
      out += "\u00d7" + std::to_string(count);
    if (with_memory)
      out += "(" + or_dash(memory_mib, "MiB") + ")";
    return out;
  }
};

ProcessEntry process_entry(const Process &process) {
  std::string user = process.user  ? printable_text(*process.user)
                     : process.uid ? std::to_string(*process.uid)
                                   : "";
  std::string program = process_name(process).value_or("?"); // printable already
  return {cut_to_columns(user.empty() ? "?" : user, user_columns), program,
          process.used_memory_mib};
}

// The entries with the processes of one program (and, `by_user`, one user) as one, in the order
// of the first (the biggest); their memory summed where each is known.
std::vector<ProcessEntry> grouped_entries(const std::vector<ProcessEntry> &entries, bool by_user) {
  std::vector<ProcessEntry> grouped;
  for (const ProcessEntry &entry : entries) {
    auto same = std::find_if(grouped.begin(), grouped.end(), [&](const ProcessEntry &group) {
      return (!by_user || group.user == entry.user) && group.program == entry.program;
    });
    if (same == grouped.end()) {
      grouped.push_back(entry);
      continue;
    }
    same->count += entry.count;
    same->memory_mib = same->memory_mib && entry.memory_mib
                           ? Reading(*same->memory_mib + *entry.memory_mib)
                           : std::nullopt;
  }
  return grouped;
}

std::string more_text(std::size_t count) { return "+" + std::to_string(count) + " more"; }

// Those holding the most GPU memory first, those of unknown size last.
std::vector<const Process *> by_memory(std::vector<const Process *> processes) {
  std::stable_sort(processes.begin(), processes.end(), [](const Process *a, const Process *b) {
    return a->used_memory_mib.value_or(-1) > b->used_memory_mib.value_or(-1);
  });
  return processes;
}

std::string joined(const std::vector<std::string> &texts) {
  std::string out;
  for (const std::string &text : texts)
    out += (out.empty() ? "" : "  ") + text;
  return out;
}

std::string said(const std::vector<ProcessEntry> &entries, std::size_t program, bool with_user,
                 bool with_memory) {
  std::vector<std::string> texts;
  for (const ProcessEntry &entry : entries)
    texts.push_back(entry.text(program, with_user, with_memory));
  return joined(texts);
}

// Who holds a GPU, said in at most `room` columns, naming every process's program while any way
// does. What gives way, in order: each process on its own (`alice:train.py(30000MiB)`) for a
// user's processes of one program as one (`alice:train.py×4(40960MiB)`); the memory in
// parentheses (the row has the GPU's own); the name, cut to no fewer than least_program_columns;
// then the users (`train.py×4  eval.py`), the names again from their full length down to
// least_program_columns (format_table first gives them the line under the row). Only when even
// that does not fit, as many names as fit and `+N more` for those not named. Empty for none.
std::string holders_text(const std::vector<ProcessEntry> &entries, std::size_t room) {
  if (entries.empty())
    return {};
  if (std::string text = said(entries, program_columns, true, true); text_columns(text) <= room)
    return text;
  std::vector<ProcessEntry> grouped = grouped_entries(entries, true);
  for (bool with_memory : {true, false})
    for (std::size_t program = program_columns; program >= least_program_columns; --program)
      if (std::string text = said(grouped, program, true, with_memory); text_columns(text) <= room)
        return text;
  std::vector<ProcessEntry> names = grouped_entries(entries, false);
  for (std::size_t program = program_columns; program >= least_program_columns; --program)
    if (std::string text = said(names, program, false, false); text_columns(text) <= room)
      return text;
  for (std::size_t shown = names.size() - 1; shown > 0; --shown) {
    std::vector<ProcessEntry> first(names.begin(), names.begin() + static_cast<long>(shown));
    std::string text =
        said(first, least_program_columns, false, false) + "  " + more_text(names.size() - shown);
    if (text_columns(text) <= room)
      return text;
  }
  return cut_to_columns(more_text(names.size()), room);
}

// The holders in full (each process's user, program and MiB), the room the GPU names give way to:
// a vendor's prefix is worth less than who holds the GPU and with what.
std::size_t full_holders_columns(const std::vector<ProcessEntry> &entries) {
  return text_columns(said(entries, program_columns, true, true));
}

// The shortest text that names every holder with its program: each user's processes of one
// program once, the name cut to least_program_columns, without the memory (`with_users`); else
// each program once. Where the first does not fit beside the state, the holders take the line
// under the row, before a user gives way.
std::size_t least_holders_columns(const std::vector<ProcessEntry> &entries, bool with_users) {
  return text_columns(
      said(grouped_entries(entries, with_users), least_program_columns, with_users, false));
}

std::vector<ProcessEntry> process_entries(const std::vector<const Process *> &processes) {
  std::vector<ProcessEntry> entries;
  for (const Process *process : processes)
    entries.push_back(process_entry(*process));
  return entries;
}

bool in_any_instance(const Process &process, const Gpu &gpu) {
  if (!gpu.mig_devices)
    return false;
  return std::any_of(gpu.mig_devices->begin(), gpu.mig_devices->end(),
                     [&](const MigDevice &device) { return on_instance(process, device); });
}

// One GPU's cells, before the columns' widths are known.
struct GpuRow {
  const Gpu *gpu;
  std::string index, name, temperature, utilization, memory, power;
  GpuState state;
  std::string note;                  // why it is in its state, after the state's word
  std::vector<ProcessEntry> holders; // its processes not shown under one of its MIG instances
};

// Why a GPU is in its state, in words: lost (nvidia-smi's words), failing (gpu_failure's, "as of"
// an earlier sample where its reading is unknown now), hot (its temperature against the
// threshold), at its power limit (its draw against the limit) or unknown for its health
// (undecided_health's); else empty.
std::string state_note(const Gpu &gpu, GpuState state) {
  switch (state) {
  case GpuState::lost:
    return gpu.lost_reason ? printable_text(*gpu.lost_reason) : std::string();
  case GpuState::failing:
    if (std::optional<std::string> failure = gpu_failure(gpu))
      return printable_text(*failure);
    return {};
  case GpuState::hot:
    if (!gpu.temperature_c)
      return {};
    return std::to_string(*gpu.temperature_c) + "\u00b0C \u2265 " +
           std::to_string(state_thresholds.hot_at_c) + "\u00b0C";
  case GpuState::unknown: // free but for its health, where that is why
    return undecided_health(gpu).value_or("");
  case GpuState::at_power_limit: // its draw as a share of the limit, against the threshold
    if (!gpu.power_draw_w || !gpu.power_limit_w || *gpu.power_limit_w <= 0)
      return {};
    return fixed_text(100 * *gpu.power_draw_w / *gpu.power_limit_w, 1) + "% \u2265 " +
           fixed_text(state_thresholds.power_limit_fraction * 100, 0) + "%";
  default:
    return {};
  }
}

// Utilization, and the share of time SMs were active beside it where dmon's GPM says it: a
// kernel on one SM reads as 100 % utilization.
std::string utilization_text(const Gpu &gpu) {
  std::string text = or_dash(gpu.utilization_gpu_percent, "%");
  if (gpu.sm_active_percent)
    text += " (SM " + std::to_string(*gpu.sm_active_percent) + "%)";
  return text;
}

GpuRow gpu_row(const Gpu &gpu) {
  GpuRow row{&gpu,
             "[" + std::to_string(gpu.index) + "]",
             printable_text(gpu.name.value_or("-")),
             or_dash(gpu.temperature_c, "\u00b0C"),
             utilization_text(gpu),
             used_of(or_dash(gpu.memory_used_mib), or_dash(gpu.memory_total_mib), "MiB"),
             used_of(whole_or_dash(gpu.power_draw_w), whole_or_dash(gpu.power_limit_w), "W"),
             gpu_state(gpu),
             {},
             {}};
  row.note = state_note(gpu, row.state);
  std::vector<const Process *> processes;
  if (gpu.processes)
    for (const Process &process : *gpu.processes)
      if (!in_any_instance(process, gpu))
        processes.push_back(&process);
  row.holders = process_entries(by_memory(std::move(processes)));
  return row;
}

// The vendor's and brand's prefixes go first when a name does not fit ("NVIDIA GeForce RTX 4090"
// to "RTX 4090"), then words at its end ("H100 80GB HBM3" to "H100 80GB"); only a first word too
// long is cut.
std::string shown_name(const std::string &name, std::size_t columns) {
  if (text_columns(name) <= columns)
    return name;
  std::string_view rest = name;
  for (std::string_view prefix : {"NVIDIA ", "GeForce ", "Tesla ", "Quadro "})
    if (rest.substr(0, prefix.size()) == prefix)
      rest.remove_prefix(prefix.size());
  if (text_columns(rest) <= columns)
    return std::string(rest);
  std::size_t words_end = 0;
  for (std::size_t space = rest.find(' '); space != std::string_view::npos;
       space = rest.find(' ', space + 1))
    if (space > 0 && text_columns(rest.substr(0, space)) <= columns)
      words_end = space;
  if (words_end > 0)
    return std::string(rest.substr(0, words_end));
  return cut_to_columns(rest, columns);
}

// Host (or `recording`) and time always; the driver, CUDA, the host's CPU, memory and load while
// they fit.
std::string header(const Snapshot &snapshot, const TableStyle &style) {
  Line line;
  if (snapshot.host)
    line.add(cut_to_columns(printable_text(snapshot.host->hostname.value_or("-")), 24));
  else
    line.add("recording"); // another machine's output: no host readings to show
  line.gap(2);
  line.add(time_text(snapshot.timestamp));
  std::vector<std::pair<std::string, Tone>> rest = {
      {"driver " + cut_to_columns(printable_text(snapshot.driver_version.value_or("-")), 16),
       Tone::normal},
      {"CUDA " + cut_to_columns(printable_text(snapshot.cuda_version.value_or("-")), 8),
       Tone::normal}};
  if (snapshot.host) {
    const Host &host = *snapshot.host;
    rest.emplace_back(
        "CPU " + (host.cpu_percent ? fixed_text(*host.cpu_percent, 0) + "%" : std::string("-")),
        Tone::normal);
    auto gib = [](const Reading &mib) {
      return mib ? fixed_text(static_cast<double>(*mib) / 1024.0, 1) : std::string("-");
    };
    rest.emplace_back("mem " +
                          used_of(gib(host.memory_used_mib), gib(host.memory_total_mib), " GiB"),
                      memory_tone(used_percent(host.memory_used_mib, host.memory_total_mib)));
    rest.emplace_back("load " + (host.load1 ? fixed_text(*host.load1, 2) : std::string("-")),
                      Tone::normal);
  }
  for (auto &[text, tone] : rest)
    if (line.columns() + 2 + text_columns(text) <= style.width) {
      line.gap(2);
      line.add(std::move(text), tone);
    }
  return line.render(style);
}

// A line per MIG instance under its GPU: "MIG 0  3g.40gb  GI 1 CI 0  13/40192MiB  free", then
// its processes. The profile (where -L gave it) and the memory padded to the GPU's widest, so
// that the states line up; the state is mig_state's, in the GPU's colours.
void add_mig_lines(std::string &out, const Gpu &gpu, std::size_t indent, const TableStyle &style) {
  if (!gpu.mig_devices)
    return;
  struct Cells {
    std::string name, profile, memory;
  };
  std::vector<Cells> cells;
  std::size_t name_w = 0, profile_w = 0, memory_w = 0;
  for (const MigDevice &device : *gpu.mig_devices) {
    cells.push_back(
        {"MIG " + or_dash(device.index) + "  GI " + or_dash(device.gpu_instance_id) + " CI " +
             or_dash(device.compute_instance_id),
         device.profile ? mig_profile_text(*device.profile) : std::string(),
         used_of(or_dash(device.memory_used_mib), or_dash(device.memory_total_mib), "MiB")});
    name_w = std::max(name_w, text_columns(cells.back().name));
    profile_w = std::max(profile_w, text_columns(cells.back().profile));
    memory_w = std::max(memory_w, text_columns(cells.back().memory));
  }
  for (std::size_t i = 0; i < cells.size(); ++i) {
    const MigDevice &device = (*gpu.mig_devices)[i];
    Line line;
    line.gap(indent);
    line.add_left_aligned(std::move(cells[i].name), name_w, Tone::normal);
    if (profile_w > 0) {
      line.gap(2);
      line.add_left_aligned(std::move(cells[i].profile), profile_w, Tone::normal);
    }
    line.gap(2);
    line.add_left_aligned(
        std::move(cells[i].memory), memory_w,
        memory_tone(used_percent(device.memory_used_mib, device.memory_total_mib)));
    GpuState state = mig_state(gpu, device);
    line.gap(2);
    line.add(std::string(gpu_state_name(state)), state_tone(state));
    std::vector<ProcessEntry> holders = process_entries(by_memory(placed_on(gpu, device)));
    if (!holders.empty() && line.columns() + 2 < style.width) {
      line.gap(2);
      line.add(holders_text(holders, style.width - line.columns()));
    }
    out += line.render(style);
  }
}

} // namespace

std::string dotted_lines(const std::string &raw, const TableStyle &style, Tone tone) {
  std::string text = printable_text(raw);
  const std::string separator = " \u00b7 ";
  std::string out;
  Line line;
  bool fresh = true; // nothing on the line yet but its indent
  for (std::size_t start = 0; start <= text.size();) {
    std::size_t end = text.find(separator, start);
    std::string part = text.substr(start, end == std::string::npos ? end : end - start);
    if (!fresh && line.columns() + text_columns(separator) + text_columns(part) > style.width) {
      out += line.render(style);
      line = Line();
      line.gap(2);
    } else if (!fresh) {
      line.add(separator, tone);
    }
    line.add(part, tone);
    fresh = false;
    if (end == std::string::npos)
      break;
    start = end + separator.size();
  }
  return out + line.render(style);
}

namespace {

// fleet_summary's line, broken between its states where it is wider than the screen.
std::string summary_lines(const Snapshot &snapshot, const TableStyle &style) {
  return dotted_lines(fleet_summary_text(fleet_summary(snapshot, state_thresholds)), style,
                      Tone::heading);
}

} // namespace

namespace {

// `snapshot`'s rows (into `rows`), their names cut to make room, and its columns' widths: what
// its rows need, or `at_least`'s where that is wider.
TableColumns measure(const Snapshot &snapshot, const TableStyle &style,
                     const TableColumns &at_least, std::vector<GpuRow> &rows) {
  for (const Gpu &gpu : snapshot.gpus)
    rows.push_back(gpu_row(gpu));

  TableColumns w = at_least;
  std::size_t after_state_w = 0;
  for (const GpuRow &row : rows) {
    w.index = std::max(w.index, text_columns(row.index));
    w.temperature = std::max(w.temperature, text_columns(row.temperature));
    w.utilization = std::max(w.utilization, text_columns(row.utilization));
    w.memory = std::max(w.memory, text_columns(row.memory));
    w.power = std::max(w.power, text_columns(row.power));
    w.state = std::max(w.state, gpu_state_name(row.state).size());
    std::size_t after_state =
        row.note.empty() ? 0 : 2 + std::min(text_columns(row.note), note_columns);
    if (!row.holders.empty())
      after_state += 2 + full_holders_columns(row.holders);
    after_state_w = std::max(after_state_w, after_state);
  }
  // The readings and the state always, then each GPU's reason and its holders in full: the names
  // give way to them (shown_name), down to least_name_columns; the holders then drop their
  // details in what is left (holders_text), never a program's first least_program_columns.
  std::size_t readings_w =
      w.index + 1 + 2 + w.temperature + 1 + w.utilization + 2 + w.memory + 2 + w.power;
  std::size_t taken = readings_w + 2 + w.state + after_state_w;
  std::size_t name_room =
      std::max(style.width > taken ? style.width - taken : 0, least_name_columns);
  for (GpuRow &row : rows) {
    row.name = shown_name(row.name, name_room);
    w.name = std::max(w.name, text_columns(row.name));
  }
  return w;
}

} // namespace

std::string format_table(const Snapshot &snapshot, const TableStyle &style) {
  return format_table(snapshot, style, TableColumns{});
}

TableColumns table_columns(const Snapshot &snapshot, const TableStyle &style) {
  std::vector<GpuRow> rows;
  return measure(snapshot, style, {}, rows);
}

std::string format_table(const Snapshot &snapshot, const TableStyle &style,
                         const TableColumns &at_least) {
  std::string out = summary_lines(snapshot, style) + header(snapshot, style);
  std::vector<GpuRow> rows;
  TableColumns columns = measure(snapshot, style, at_least, rows);
  std::size_t index_w = columns.index, name_w = columns.name, temperature_w = columns.temperature,
              utilization_w = columns.utilization, memory_w = columns.memory,
              power_w = columns.power;

  for (const GpuRow &row : rows) {
    const Gpu &gpu = *row.gpu;
    Line line;
    line.add_left_aligned(row.index, index_w, Tone::normal);
    line.gap(1);
    line.add_left_aligned(row.name, name_w, Tone::normal); // the summary line is the bold one
    line.gap(2);
    line.add_right_aligned(row.temperature, temperature_w, temperature_tone(gpu.temperature_c));
    line.gap(1);
    line.add_right_aligned(row.utilization, utilization_w,
                           utilization_tone(gpu.utilization_gpu_percent));
    line.gap(2);
    // Unrounded, as `top` reads it: the JSON's two-decimal 95.00 is red in neither below 95 %.
    line.add_right_aligned(row.memory, memory_w,
                           memory_tone(used_percent(gpu.memory_used_mib, gpu.memory_total_mib)));
    line.gap(2);
    line.add_right_aligned(row.power, power_w, power_tone(gpu));
    // Where the readings leave no room for the state's word, it starts a line of its own under
    // the row, with the reason and the holders: on a narrow screen the state and who holds the GPU
    // matter more than one more reading.
    std::string state(gpu_state_name(row.state));
    Line below;
    below.gap(index_w + 1);
    bool state_here = line.columns() + 2 + state.size() <= style.width;
    Line &at = state_here ? line : below;
    if (state_here)
      at.gap(2);
    at.add(state, state_tone(row.state));
    // Who holds it and with what come before how much detail: when even each user's programs,
    // cut, do not fit beside the state, the holders take the line under the row, where the users
    // give way only if they do not fit there either.
    std::size_t left = style.width > at.columns() ? style.width - at.columns() : 0;
    std::size_t least_holders =
        row.holders.empty() ? 0 : 2 + least_holders_columns(row.holders, true);
    bool holders_here = least_holders <= left || !state_here;
    // Where even that does not fit (the line under the row, on a narrow screen), the programs
    // alone are what the holders keep.
    if (least_holders > left)
      least_holders = std::min(left, 2 + least_holders_columns(row.holders, false));
    // The reason takes what the holders' names leave, then the holders what the reason leaves.
    std::size_t note_room = !holders_here ? left : left > least_holders ? left - least_holders : 0;
    // A lost or failing GPU's reason is worth its first words; a hot one's or one at its power
    // limit is short, its reading already in the row: whole or not at all.
    bool whole_note = row.state == GpuState::hot || row.state == GpuState::at_power_limit;
    std::size_t least_note = whole_note ? text_columns(row.note) : least_note_columns;
    if (!row.note.empty() && note_room >= 2 + least_note) {
      at.gap(2);
      at.add(cut_to_columns(row.note, note_room - 2), state_tone(row.state));
    }
    if (holders_here && !row.holders.empty() && at.columns() + 2 < style.width) {
      at.gap(2);
      at.add(holders_text(row.holders, style.width - at.columns()));
    }
    out += line.render(style);
    if (!holders_here)
      below.add(holders_text(row.holders, style.width - std::min(style.width, below.columns())));
    if (!state_here || !holders_here)
      out += below.render(style);
    add_mig_lines(out, gpu, index_w + 1, style);
  }
  return out;
}

} // namespace nvsmi
