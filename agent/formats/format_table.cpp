#include "formats/format_table.hpp"
#include "formats/dotted_lines.hpp"

#include "core/number_text.hpp"
#include "core/screen_text.hpp"
#include "core/tone.hpp"

#include "nvsmi/gpu_state.hpp"
#include "nvsmi/thresholds.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

namespace nvsmi {
namespace {

// The colours follow the state's own thresholds where there is one, so that a red temperature
// and the word `hot` never disagree.
const GpuStateThresholds state_thresholds;
constexpr std::int64_t temperature_yellow_c = 70;
constexpr std::int64_t utilization_high_percent = 50;
// Memory turns red where the table says a GPU is full (as in `top`), yellow from three quarters.
constexpr double memory_red_percent = gpu_thresholds::memory_full_fraction * 100;
constexpr double memory_yellow_percent = 75;
constexpr double power_yellow_fraction = 0.80;
// Longest shown parts of a process entry, so that one long name leaves room for the others.
constexpr std::size_t user_columns = 12, program_columns = 20;
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
  case Tone::busy: // in use is the table's plain text: its readings carry the colours
    break;
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
    for (const Piece &piece : pieces) {
      std::size_t left = style.width > used ? style.width - used : 0;
      std::string text = cut_to_columns(piece.text, left);
      used += text_columns(text);
      std::string escape = sgr(piece.tone);
      if (style.colour && !escape.empty() && !text.empty())
        out += escape + text + "\x1b[0m";
      else
        out += text;
      if (text.size() < piece.text.size())
        break;
    }
    return out + "\n";
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
  if (*percent >= utilization_high_percent)
    return Tone::good;
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

// nvidia-smi on Windows names a process by its path with backslashes.
std::string_view basename_of(std::string_view path) {
  std::size_t slash = path.find_last_of("/\\");
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// A process entry's parts, `user:program(MiB)`: the user, else the uid, else `?`; the program the
// command's first word names, else nvidia-smi's name for the process.
// Several processes of one user and program may be one entry, `user:program×N(MiB)`, with their
// memory summed.
struct ProcessEntry {
  std::string user, program;
  Reading memory_mib;
  std::size_t count = 1;

  std::string text(std::size_t program_room = program_columns) const {
    return without_memory(program_room) + "(" + or_dash(memory_mib, "MiB") + ")";
  }
  std::string without_memory(std::size_t program_room = program_columns) const {
    return user + ":" + cut_to_columns(program, program_room) +
           (count > 1 ? "\u00d7" + std::to_string(count) : "");
  }
};

ProcessEntry process_entry(const Process &process) {
  std::string user = process.user  ? printable_text(*process.user)
                     : process.uid ? std::to_string(*process.uid)
                                   : "";
  std::string program;
  if (process.command) {
    std::string_view command = *process.command;
    program = printable_text(basename_of(command.substr(0, command.find(' '))));
  }
  if (program.empty() && process.name)
    program = printable_text(basename_of(*process.name));
  return {cut_to_columns(user.empty() ? "?" : user, user_columns), program.empty() ? "?" : program,
          process.used_memory_mib};
}

// The entries with each user's processes of one program as one, in the order of the first (the
// biggest); their memory summed where each is known.
std::vector<ProcessEntry> grouped_entries(const std::vector<ProcessEntry> &entries) {
  std::vector<ProcessEntry> grouped;
  for (const ProcessEntry &entry : entries) {
    auto same = std::find_if(grouped.begin(), grouped.end(), [&](const ProcessEntry &group) {
      return group.user == entry.user && group.program == entry.program;
    });
    if (same == grouped.end()) {
      grouped.push_back(entry);
      continue;
    }
    ++same->count;
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

// Each user once, in the order of their biggest process, `alice×2` for two processes of alice's.
std::vector<std::string> grouped_users(const std::vector<ProcessEntry> &entries) {
  std::vector<std::pair<std::string, std::size_t>> users;
  for (const ProcessEntry &entry : entries) {
    auto found = std::find_if(users.begin(), users.end(),
                              [&](const auto &user) { return user.first == entry.user; });
    if (found == users.end())
      users.emplace_back(entry.user, 1);
    else
      ++found->second;
  }
  std::vector<std::string> texts;
  for (const auto &[user, count] : users)
    texts.push_back(count == 1 ? user : user + "×" + std::to_string(count));
  return texts;
}

// Who holds a GPU, said in at most `room` columns, naming every holder while any way does: each
// process as `user:program(MiB)`; then a user's processes of one program as one
// (`alice:python3×4(40960MiB)`), the program cut to no fewer than four columns; then the same
// without the MiB; then each user once (`alice×2`). Only when even that does not fit, as many
// users as fit and `+N more` for the users not named. Empty for no processes.
std::string holders_text(const std::vector<ProcessEntry> &entries, std::size_t room) {
  if (entries.empty())
    return {};
  constexpr std::size_t least_program_columns = 4;
  std::vector<ProcessEntry> grouped = grouped_entries(entries);
  for (bool with_memory : {true, false}) {
    auto said = [&](const std::vector<ProcessEntry> &each, std::size_t program) {
      std::vector<std::string> texts;
      for (const ProcessEntry &entry : each)
        texts.push_back(with_memory ? entry.text(program) : entry.without_memory(program));
      return joined(texts);
    };
    if (std::string text = said(entries, program_columns); text_columns(text) <= room)
      return text;
    for (std::size_t program = program_columns; program >= least_program_columns; --program)
      if (std::string text = said(grouped, program); text_columns(text) <= room)
        return text;
  }
  std::vector<std::string> users = grouped_users(entries);
  std::string all = joined(users);
  if (text_columns(all) <= room)
    return all;
  for (std::size_t shown = users.size() - 1; shown > 0; --shown) {
    std::string text =
        joined(std::vector<std::string>(users.begin(), users.begin() + static_cast<long>(shown))) +
        "  " + more_text(users.size() - shown);
    if (text_columns(text) <= room)
      return text;
  }
  return cut_to_columns(more_text(users.size()), room);
}

// The holders in full (each process's user, program and MiB), the room the GPU names give way to:
// a vendor's prefix is worth less than who holds the GPU and with what.
std::size_t full_holders_columns(const std::vector<ProcessEntry> &entries) {
  std::vector<std::string> texts;
  for (const ProcessEntry &entry : entries)
    texts.push_back(entry.text(program_columns));
  return text_columns(joined(texts));
}

// The shortest text that still names every holder: each user once.
std::size_t least_holders_columns(const std::vector<ProcessEntry> &entries) {
  return text_columns(joined(grouped_users(entries)));
}

std::vector<ProcessEntry> process_entries(const std::vector<const Process *> &processes) {
  std::vector<ProcessEntry> entries;
  for (const Process *process : processes)
    entries.push_back(process_entry(*process));
  return entries;
}

bool in_instance(const Process &process, const MigDevice &device) {
  return process.gpu_instance_id && process.gpu_instance_id == device.gpu_instance_id &&
         process.compute_instance_id && process.compute_instance_id == device.compute_instance_id;
}

bool in_any_instance(const Process &process, const Gpu &gpu) {
  if (!gpu.mig_devices)
    return false;
  return std::any_of(gpu.mig_devices->begin(), gpu.mig_devices->end(),
                     [&](const MigDevice &device) { return in_instance(process, device); });
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
    line.add(cut_to_columns(printable_text(snapshot.host->hostname.value_or("-")), 24),
             Tone::heading);
  else
    line.add("recording", Tone::heading); // another machine's output: no host readings to show
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

void add_mig_lines(std::string &out, const Gpu &gpu, std::size_t indent, const TableStyle &style) {
  if (!gpu.mig_devices)
    return;
  for (const MigDevice &device : *gpu.mig_devices) {
    Line line;
    line.gap(indent);
    line.add("MIG " + or_dash(device.index) + "  GI " + or_dash(device.gpu_instance_id) + " CI " +
             or_dash(device.compute_instance_id));
    line.gap(2);
    line.add(used_of(or_dash(device.memory_used_mib), or_dash(device.memory_total_mib), "MiB"),
             memory_tone(used_percent(device.memory_used_mib, device.memory_total_mib)));
    std::vector<const Process *> processes;
    if (gpu.processes)
      for (const Process &process : *gpu.processes)
        if (in_instance(process, device))
          processes.push_back(&process);
    std::vector<ProcessEntry> holders = process_entries(by_memory(std::move(processes)));
    if (!holders.empty() && line.columns() + 2 < style.width) {
      line.gap(2);
      line.add(holders_text(holders, style.width - line.columns()));
    }
    out += line.render(style);
  }
}

} // namespace

std::string dotted_lines(const std::string &raw, const TableStyle &style) {
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
      line.add(separator);
    }
    line.add(part);
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
  return dotted_lines(fleet_summary_text(fleet_summary(snapshot, state_thresholds)), style);
}

} // namespace

std::string format_table(const Snapshot &snapshot, const TableStyle &style) {
  std::string out = summary_lines(snapshot, style) + header(snapshot, style);
  std::vector<GpuRow> rows;
  for (const Gpu &gpu : snapshot.gpus)
    rows.push_back(gpu_row(gpu));

  std::size_t index_w = 0, temperature_w = 0, utilization_w = 0, memory_w = 0, power_w = 0,
              state_w = 0, after_state_w = 0;
  for (const GpuRow &row : rows) {
    index_w = std::max(index_w, text_columns(row.index));
    temperature_w = std::max(temperature_w, text_columns(row.temperature));
    utilization_w = std::max(utilization_w, text_columns(row.utilization));
    memory_w = std::max(memory_w, text_columns(row.memory));
    power_w = std::max(power_w, text_columns(row.power));
    state_w = std::max(state_w, gpu_state_name(row.state).size());
    std::size_t after_state =
        row.note.empty() ? 0 : 2 + std::min(text_columns(row.note), note_columns);
    if (!row.holders.empty())
      after_state += 2 + full_holders_columns(row.holders);
    after_state_w = std::max(after_state_w, after_state);
  }
  // The readings and the state always, then each GPU's reason and its holders in full: the names
  // give way to them (shown_name), down to least_name_columns; the holders then drop their
  // details in what is left (holders_text), never their users.
  std::size_t readings_w =
      index_w + 1 + 2 + temperature_w + 1 + utilization_w + 2 + memory_w + 2 + power_w;
  std::size_t taken = readings_w + 2 + state_w + after_state_w;
  std::size_t name_room =
      std::max(style.width > taken ? style.width - taken : 0, least_name_columns);
  std::size_t name_w = 0;
  for (GpuRow &row : rows) {
    row.name = shown_name(row.name, name_room);
    name_w = std::max(name_w, text_columns(row.name));
  }

  for (const GpuRow &row : rows) {
    const Gpu &gpu = *row.gpu;
    Line line;
    line.add_left_aligned(row.index, index_w, Tone::normal);
    line.gap(1);
    line.add_left_aligned(row.name, name_w, Tone::heading);
    line.gap(2);
    line.add_right_aligned(row.temperature, temperature_w, temperature_tone(gpu.temperature_c));
    line.gap(1);
    line.add_right_aligned(row.utilization, utilization_w,
                           utilization_tone(gpu.utilization_gpu_percent));
    line.gap(2);
    line.add_right_aligned(row.memory, memory_w, memory_tone(gpu.memory_used_percent()));
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
    // Who holds it comes before how much detail: when even each user once does not fit beside
    // the state, the holders take the line under the row rather than `+N more`.
    std::size_t left = style.width > at.columns() ? style.width - at.columns() : 0;
    std::size_t least_holders = row.holders.empty() ? 0 : 2 + least_holders_columns(row.holders);
    bool holders_here = least_holders <= left || !state_here;
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
