// `top` without a terminal: the model (sorting, filters, history, lateness), the layout of a
// screen of a given size, and the text that goes on it.
#include "core/screen_text.hpp"
#include "core/tone.hpp"
#include "snapshot_builders.hpp"
#include "support.hpp"
#include "terminal/top_layout.hpp"
#include "terminal/top_model.hpp"

#include "nvsmi/xml_reader.hpp"

#include <catch2/catch.hpp>

#include "host/process_signal.hpp"
#include "host/process_tree.hpp"
#include "process_support.hpp"

#include <cctype>
#include <clocale>
#include <csignal>
#include <grp.h>
#include <sys/wait.h>
#include <unistd.h>

namespace test_top_model {

using namespace nvsmi;
using std::chrono::milliseconds;
using std::chrono::seconds;

namespace {

Snapshot states_fixture() { return test::xml_fixture("xml/h100-8gpu-states-v12.xml"); }

// Two users on GPUs 0 and 1 of the fixture, with everything /proc would say.
Snapshot with_users() {
  Snapshot s = states_fixture();
  for (Gpu &gpu : s.gpus)
    gpu.processes = std::vector<Process>{};
  s.gpus[0].processes->push_back(test::observed_process(100, "alice", 1000));
  s.gpus[0].processes->push_back(test::observed_process(300, "bob", 3000));
  s.gpus[1].processes->push_back(test::observed_process(200, "alice", 2000));
  Process unknown; // nvidia-smi knows only the pid: every other reading unknown
  unknown.pid = 50;
  s.gpus[1].processes->push_back(unknown);
  (*s.gpus[1].processes)[0].cpu_percent = 5;
  (*s.gpus[0].processes)[1].cpu_percent = 250;
  s.host = test::observed_host();
  return s;
}

std::vector<std::int64_t> pids(const TopModel &model) {
  std::vector<std::int64_t> out;
  for (const ProcessRow &row : model.process_rows())
    out.push_back(row.pid.value_or(-1));
  return out;
}

std::vector<std::string> screen_text(const TopModel &model, TopClock::time_point now, int columns,
                                     int lines) {
  std::vector<std::string> out;
  for (const ScreenLine &line : layout_screen(model, now, {columns, lines}, true))
    out.push_back(line_text(line));
  return out;
}

bool screen_has(const std::vector<std::string> &screen, const std::string &text) {
  for (const std::string &line : screen)
    if (line.find(text) != std::string::npos)
      return true;
  return false;
}

// The style of the first span of `line` whose text holds `text`.
std::optional<Tone> tone_of(const ScreenLine &line, const std::string &text) {
  for (const Span &span : line)
    if (span.text.find(text) != std::string::npos)
      return span.style;
  return std::nullopt;
}

struct Utf8Locale {
  Utf8Locale() { std::setlocale(LC_ALL, "C.UTF-8"); }
  ~Utf8Locale() { std::setlocale(LC_ALL, "C"); }
};

} // namespace

TEST_CASE("top sorts processes by GPU memory first, largest first, unknown last") {
  TopModel model(milliseconds(1000));
  model.add_sample(with_users(), TopClock::now());
  CHECK(pids(model) == std::vector<std::int64_t>{300, 200, 100, 50});
  model.sort_by(SortKey::gpu_memory); // again: reversed, unknown still last
  CHECK(pids(model) == std::vector<std::int64_t>{100, 200, 300, 50});
  model.sort_by(SortKey::pid);
  CHECK(pids(model) == std::vector<std::int64_t>{50, 100, 200, 300});
  model.sort_by(SortKey::cpu);
  CHECK(pids(model) == std::vector<std::int64_t>{300, 100, 200, 50});
  model.sort_by(SortKey::user); // alice's two by GPU, then bob, then the unknown user
  CHECK(pids(model) == std::vector<std::int64_t>{100, 200, 300, 50});
  model.sort_by(SortKey::user);
  CHECK(pids(model) == std::vector<std::int64_t>{300, 100, 200, 50});
}

TEST_CASE("top's filters cycle through the GPUs and the users of the latest sample") {
  TopModel model(milliseconds(1000));
  model.add_sample(with_users(), TopClock::now());
  model.cycle_gpu_filter();
  CHECK(model.gpu_filter() == 0);
  CHECK(pids(model) == std::vector<std::int64_t>{300, 100});
  model.cycle_gpu_filter();
  CHECK(model.gpu_filter() == 1);
  CHECK(pids(model) == std::vector<std::int64_t>{200, 50});
  for (int i = 2; i < 8; ++i)
    model.cycle_gpu_filter();
  CHECK(model.gpu_filter() == 7);
  model.cycle_gpu_filter();
  CHECK_FALSE(model.gpu_filter());

  model.cycle_user_filter();
  CHECK(model.user_filter() == "alice");
  CHECK(pids(model) == std::vector<std::int64_t>{200, 100});
  model.cycle_user_filter();
  CHECK(model.user_filter() == "bob");
  model.cycle_gpu_filter(); // both at once: bob on GPU 0
  CHECK(pids(model) == std::vector<std::int64_t>{300});
  model.clear_filters();
  CHECK_FALSE(model.gpu_filter());
  CHECK_FALSE(model.user_filter());
  CHECK(pids(model).size() == 4);
}

TEST_CASE("top keeps a bounded utilization history per GPU and marks a vanished GPU lost") {
  TopModel model(milliseconds(100));
  TopClock::time_point now = TopClock::now();
  Snapshot s = states_fixture();
  for (std::size_t i = 0; i < TopModel::history_length + 20; ++i) {
    s.gpus[2].utilization_gpu_percent = static_cast<std::int64_t>(i % 100);
    model.add_sample(s, now);
  }
  const std::deque<HistoryPoint> &history = model.utilization_history(2);
  REQUIRE(history.size() == TopModel::history_length);
  CHECK(history.back().utilization ==
        static_cast<std::int64_t>((TopModel::history_length + 19) % 100));
  CHECK(model.lost_gpus().empty());

  s.gpus.erase(s.gpus.begin() + 4);
  model.add_sample(s, now);
  REQUIRE(model.lost_gpus().size() == 1);
  CHECK(model.lost_gpus()[0].index == 4);
  std::vector<std::string> screen = screen_text(model, now, 80, 24);
  CHECK(screen_has(screen, "lost"));
}

TEST_CASE("top calls a sample late after three intervals, and never under three seconds") {
  TopClock::time_point start = TopClock::now();
  TopModel fast(milliseconds(100));
  CHECK(fast.late(start)); // nothing yet
  fast.add_sample(states_fixture(), start);
  CHECK_FALSE(fast.late(start + milliseconds(2900)));
  CHECK(fast.late(start + milliseconds(3100)));

  TopModel slow(milliseconds(5000));
  slow.add_sample(states_fixture(), start);
  CHECK_FALSE(slow.late(start + seconds(14)));
  CHECK(slow.late(start + seconds(16)));
}

TEST_CASE("top's screen at 80x24 holds every GPU, the table and the keys, none past the edge") {
  Utf8Locale utf8;
  TopModel model(milliseconds(1000));
  TopClock::time_point now = TopClock::now();
  Snapshot s = with_users();
  // More processes than fit: the table says how many more.
  for (int pid = 1000; pid < 1030; ++pid)
    s.gpus[5].processes->push_back(test::observed_process(pid, "carol", pid));
  model.add_sample(s, now);
  std::vector<ScreenLine> lines = layout_screen(model, now, {80, 24}, true);
  REQUIRE(lines.size() == 24);
  for (const ScreenLine &line : lines)
    CHECK(text_columns(line_text(line)) <= 80);
  std::vector<std::string> screen = screen_text(model, now, 80, 24);
  CHECK(screen[0].find("host gpu07") != std::string::npos);
  for (const char *state : {"free", "in use", "hot", "idle but held", "at power limit"})
    CHECK(screen_has(screen, state));
  CHECK(screen_has(screen, "COMMAND"));
  CHECK_FALSE(screen_has(screen, "CONTAINER")); // the first column to go at 80
  CHECK(screen_has(screen, "HOST MEM"));
  CHECK(screen_has(screen, "more"));
  CHECK(screen.back().find("q quit") != std::string::npos);

  std::vector<std::string> wide = screen_text(model, now, 200, 50);
  CHECK(screen_has(wide, "CONTAINER"));
  CHECK(screen_has(wide, "aaaaaaaaaaaa"));
  CHECK(screen_has(wide, "NVIDIA H100 80GB HBM3"));
}

TEST_CASE("top's header says what --cpu-budget gave up to keep to it: its latest step, in amber") {
  Utf8Locale utf8;
  TopModel model(milliseconds(1000));
  TopClock::time_point now = TopClock::now();
  Snapshot s = with_users();
  AgentCost cost;
  cost.core_percent = 4.2;
  cost.window_seconds = 60;
  cost.budget_percent = 1;
  s.agent = cost;
  model.add_sample(s, now);
  // No step taken: nothing said of the budget.
  CHECK_FALSE(screen_has(screen_text(model, now, 200, 50), "budget"));
  cost.budget_steps = {"pmon every 10 s", "dmon stopped (GPU activity and PCIe traffic unknown)"};
  s.agent = cost;
  model.add_sample(s, now);
  std::string header = screen_text(model, now, 200, 50)[0];
  CHECK(header.find("monitor 4.2% of a core  budget 1%: dmon stopped (GPU activity and PCIe "
                    "traffic unknown)") != std::string::npos);
  CHECK(tone_of(layout_screen(model, now, {200, 50}, true)[0], "budget 1%") == Tone::warning);
  // A step's words are the agent's own, yet they pass the printable filter like any text.
  cost.budget_steps = {"pmon\x1b[2J stopped"};
  s.agent = cost;
  model.add_sample(s, now);
  header = screen_text(model, now, 200, 50)[0];
  CHECK(header.find('\x1b') == std::string::npos);
  CHECK(header.find("budget 1%: pmon") != std::string::npos);
}

TEST_CASE("top's header says the monitor's share of a core once ten seconds of it are known, "
          "and keeps it between readings") {
  Utf8Locale utf8;
  TopModel model(milliseconds(1000));
  TopClock::time_point now = TopClock::now();
  Snapshot s = with_users();
  AgentCost cost;
  cost.core_percent = 0.4213;
  cost.window_seconds = 5; // mostly the cost of starting nvidia-smi: not said
  s.agent = cost;
  model.add_sample(s, now);
  CHECK_FALSE(screen_has(screen_text(model, now, 200, 50), "monitor"));
  cost.window_seconds = 30;
  s.agent = cost;
  model.add_sample(s, now);
  std::vector<std::string> screen = screen_text(model, now, 200, 50);
  CHECK(screen[0].find("monitor 0.42% of a core") != std::string::npos);
  s.agent.reset(); // a sample without a reading: the last one stays
  model.add_sample(s, now);
  CHECK(screen_text(model, now, 200, 50)[0].find("monitor 0.42% of a core") != std::string::npos);
  cost.core_percent = 3.14159;
  s.agent = cost;
  model.add_sample(s, now);
  CHECK(screen_text(model, now, 200, 50)[0].find("monitor 3.1% of a core") != std::string::npos);
  // Whole parts only: at 80 columns it goes before anything is cut.
  std::string narrow = screen_text(model, now, 80, 24)[0];
  CHECK(narrow.find("monitor") == std::string::npos);
  CHECK(text_columns(narrow) <= 80);
}

TEST_CASE("top shows unknown readings as -, never 0") {
  Utf8Locale utf8;
  TopModel model(milliseconds(1000));
  TopClock::time_point now = TopClock::now();
  Snapshot s = with_users();
  Gpu &gpu = s.gpus[0];
  gpu.utilization_gpu_percent.reset();
  gpu.temperature_c.reset();
  gpu.power_draw_w.reset();
  model.add_sample(s, now);
  std::vector<std::string> screen = screen_text(model, now, 200, 50);
  REQUIRE(screen.size() > 2);
  const std::string &row = screen[3]; // GPU 0
  CHECK(row.find(" -/700W") != std::string::npos);
  CHECK(row.find(" 0%") == std::string::npos);
  CHECK(row.find(" 0C") == std::string::npos);
  // The pid alone: every other reading of it is -.
  for (const std::string &line : screen)
    if (line.find("     50 ") != std::string::npos)
      CHECK(line.find(" 0 ") == std::string::npos);
}

TEST_CASE("a late sample hides its readings and says how old it is") {
  TopModel model(milliseconds(1000));
  TopClock::time_point start = TopClock::now();
  model.add_sample(with_users(), start);
  std::vector<std::string> fresh = screen_text(model, start, 80, 24);
  CHECK(screen_has(fresh, "698/700W"));
  std::vector<std::string> late = screen_text(model, start + seconds(10), 80, 24);
  CHECK(late[0].find("LATE: no sample for 10 s") != std::string::npos);
  CHECK_FALSE(screen_has(late, "698/700W"));
  CHECK_FALSE(screen_has(late, "at power limit"));
  CHECK_FALSE(screen_has(late, "alice"));
  int stale = 0;
  for (const std::string &line : late)
    stale += line.find("stale") != std::string::npos;
  CHECK(stale == 8);
}

TEST_CASE("screen text drops control characters and cuts by columns, not bytes") {
  Utf8Locale utf8;
  CHECK(printable_text("\x1b[2Jevil\x07\tname\x9b", true) == "[2Jevil name\xEF\xBF\xBD");
  CHECK(printable_text("caf\xC3\xA9 \xC2\x9B", true) == "caf\xC3\xA9 ");
  CHECK(printable_text("caf\xC3\xA9", false) == "caf?");
  // A right-to-left override (or an isolate) would show the rest of the line reversed.
  CHECK(printable_text("evil\xE2\x80\xAEtxt.exe \xE2\x81\xA7x", true) == "eviltxt.exe x");
  CHECK(printable_text("\xE2\x80\x8Fname", false) == "name");
  CHECK(text_columns("\xE6\x97\xA5\xE6\x9C\xAC") == 4);              // two wide characters
  CHECK(fit_text("\xE6\x97\xA5\xE6\x9C\xAC", 3) == "\xE6\x97\xA5 "); // the second would split
  CHECK(fit_text("abc", 5, Align::right) == "  abc");
  CHECK(fit_text("abcdef", 4) == "abcd");
}

TEST_CASE("top's first lines: the fleet summary, then each GPU with the users on it") {
  Utf8Locale utf8;
  TopModel model(milliseconds(1000));
  TopClock::time_point now = TopClock::now();
  Snapshot s = with_users();
  model.add_sample(s, now);
  for (ScreenSize size : {ScreenSize{80, 24}, ScreenSize{160, 45}}) {
    std::vector<std::string> screen = screen_text(model, now, size.columns, size.lines);
    INFO(size.columns << "x" << size.lines);
    // Whole where it fits, else as much as fits.
    std::string summary = fleet_summary_text(fleet_summary(s));
    CHECK(screen[1].find(size.columns >= 160 ? summary : summary.substr(0, 60)) == 0);
    CHECK(screen[3].find(" 0  ") == 0);
    CHECK(screen[3].find("alice,bob") != std::string::npos); // GPU 0, in the order listed
    CHECK(screen[4].find("alice,?") != std::string::npos);   // GPU 1: pid 50's user unknown
    CHECK(screen[5].find("alice") == std::string::npos);     // GPU 2: no process
  }
  // A source without process lists says nothing of users: "-", not an empty column.
  Snapshot bare = states_fixture();
  for (Gpu &gpu : bare.gpus)
    gpu.processes.reset();
  model.add_sample(bare, now);
  CHECK(screen_text(model, now, 80, 24)[3].find(" - ") != std::string::npos);
  // The summary names users: hostile bytes in them are dropped, and without UTF-8 the line is
  // ASCII.
  Snapshot hostile = with_users();
  for (Gpu &gpu : hostile.gpus)
    gpu.utilization_gpu_percent = 0;
  (*hostile.gpus[0].processes)[0].user = "ev\x1b[2Jil";
  model.add_sample(hostile, now);
  std::string summary = line_text(layout_screen(model, now, {160, 45}, false)[1]);
  INFO(summary);
  CHECK(summary.find("ev[2Jil") != std::string::npos);
  CHECK(summary.find(" | ") != std::string::npos);
  for (char c : summary)
    CHECK((c >= 0x20 && c < 0x7f));
}

TEST_CASE("top: a row per MIG instance under its GPU, with its profile, state and users; the "
          "summary counts the instances") {
  Utf8Locale utf8;
  TopModel model(milliseconds(1000));
  TopClock::time_point now = TopClock::now();
  Snapshot s = test::xml_fixture("xml/a100-mig-v12.xml");
  std::vector<MigDevice> &devices = *s.gpus[0].mig_devices;
  devices[0].profile = "3g.40gb";
  devices[1].profile = "2g\x1b[2J.20gb"; // as a hostile -L could print it
  (*s.gpus[0].processes)[0].user = "alice";
  model.add_sample(s, now);
  std::vector<ScreenLine> lines = layout_screen(model, now, {120, 30}, true);
  std::vector<std::string> screen;
  for (const ScreenLine &line : lines)
    screen.push_back(line_text(line));
  INFO(screen[1] << "\n" << screen[3] << "\n" << screen[4] << "\n" << screen[5]);
  CHECK(screen[1].find("1 GPU, 2 MIG instances: 1 free \u00b7 1 in use") == 0);
  CHECK(screen[4].find("\u2514 MIG 0  3g.40gb  GI 1 CI 0  free  memory 13M/39.2G") !=
        std::string::npos);
  CHECK(screen[5].find("\u2514 MIG 1  2g[2J.20gb  GI 2 CI 0  in use  memory 3.9G/19.5G  alice") !=
        std::string::npos);
  CHECK(tone_of(lines[5], "in use") == state_tone(GpuState::in_use));
  CHECK(screen[5].find('\x1b') == std::string::npos);
  // A late sample: the instance's name stays, its state and readings go.
  std::vector<std::string> late = screen_text(model, now + seconds(30), 120, 30);
  CHECK(screen_has(late, "MIG 1  2g[2J.20gb  GI 2 CI 0"));
  CHECK_FALSE(screen_has(late, "in use  memory"));
}

TEST_CASE("top colours memory, power and temperature at the thresholds' values") {
  Utf8Locale utf8;
  TopModel model(milliseconds(1000));
  TopClock::time_point now = TopClock::now();
  Snapshot s = states_fixture(); // GPU 2 at 89 C, GPU 3's memory 79.1 of 79.6G, GPU 5 698/700W
  model.add_sample(s, now);
  std::vector<ScreenLine> lines = layout_screen(model, now, {160, 45}, true);
  CHECK(tone_of(lines[5], "89C") == Tone::alarm);
  CHECK(tone_of(lines[6], "79.1/79.6G") == Tone::alarm);
  CHECK(tone_of(lines[8], "698/700W") == Tone::alarm);
  CHECK(tone_of(lines[3], "68/700W") == Tone::normal);
  CHECK(tone_of(lines[5], "40.0/79.6G") == Tone::normal);
  // Just under each threshold: normal.
  s.gpus[3].memory_used_mib =
      static_cast<std::int64_t>(static_cast<double>(*s.gpus[3].memory_total_mib) *
                                gpu_thresholds::memory_full_fraction) -
      1;
  s.gpus[2].temperature_c = gpu_thresholds::hot_c - 1;
  model.add_sample(s, now);
  lines = layout_screen(model, now, {160, 45}, true);
  CHECK(tone_of(lines[5], std::to_string(gpu_thresholds::hot_c - 1) + "C") == Tone::normal);
  CHECK(tone_of(lines[6], "/79.6G") == Tone::normal);
}

TEST_CASE("top's help screen names every key and the colours' thresholds") {
  Utf8Locale utf8;
  TopModel model(milliseconds(1000));
  TopClock::time_point now = TopClock::now();
  model.add_sample(with_users(), now);
  model.toggle_help();
  for (ScreenSize size : {ScreenSize{80, 24}, ScreenSize{160, 45}}) {
    std::vector<ScreenLine> lines = layout_screen(model, now, size, true);
    REQUIRE(lines.size() == static_cast<std::size_t>(size.lines));
    std::vector<std::string> screen;
    for (const ScreenLine &line : lines) {
      CHECK(text_columns(line_text(line)) <= static_cast<std::size_t>(size.columns));
      screen.push_back(line_text(line));
    }
    INFO(size.columns << "x" << size.lines);
    for (const char *key :
         {"? h ", "q ", "m c s p u", "g ", "f ", "a Esc", "↑ ↓ j k", "T K I", "t ", "z "})
      CHECK(screen_has(screen, "  " + std::string(key)));
    CHECK(screen_has(screen, "SIGTERM, SIGKILL or SIGINT"));
    CHECK(screen_has(screen, "hot (" + std::to_string(gpu_thresholds::hot_c) + " C"));
    CHECK(screen_has(screen, "memory 95% full"));
    CHECK_FALSE(screen_has(screen, "COMMAND")); // the help instead of the tables
  }
  model.toggle_help();
  CHECK(screen_has(screen_text(model, now, 80, 24), "COMMAND"));
}

// The display column at which `text` starts in `line` (each character one column here).
std::size_t column_of(const std::string &line, const std::string &text) {
  std::size_t at = line.find(text);
  return at == std::string::npos ? std::string::npos : text_columns(line.substr(0, at));
}

TEST_CASE("top draws the history a column a sample, its scale the span the columns hold") {
  Utf8Locale utf8;
  TopModel model(milliseconds(1000));
  TopClock::time_point start = TopClock::now();
  Snapshot s = with_users();
  for (int second = 0; second <= 600; ++second) {
    s.gpus[2].utilization_gpu_percent = second % 2 ? 100 : 0;
    s.gpus[3].utilization_gpu_percent.reset(); // unknown all along: no chart of its own
    model.add_sample(s, start + seconds(second));
  }
  TopClock::time_point now = start + seconds(600);
  std::vector<std::string> screen = screen_text(model, now, 160, 45);
  INFO(Catch::Detail::stringify(screen));
  std::size_t title = 0;
  while (title < screen.size() && screen[title].find("UTILIZATION  one column per sample") != 0)
    ++title;
  REQUIRE(title + 16 < screen.size());
  CHECK(screen[title] == "UTILIZATION  one column per sample, every 1 s");
  // Two rows for each GPU with history: 0, 1, 2, 4, 5, 6, 7 (GPU 3 never gave a reading).
  std::vector<std::string> labels;
  for (std::size_t at = title + 1; at < title + 15; at += 2)
    labels.push_back(screen[at].substr(0, 6));
  CHECK(labels == std::vector<std::string>{"GPU 0 ", "GPU 1 ", "GPU 2 ", "GPU 4 ", "GPU 5 ",
                                           "GPU 6 ", "GPU 7 "});
  CHECK(screen[title + 6].find("█ █ █") != std::string::npos); // GPU 2's bottom row: 100, 0, ..
  // 152 columns = the last 152 samples: the oldest drawn 151 s before the newest, a corner at
  // its column (the first after the axis), one in the middle, `now` at the newest.
  const std::string &scale = screen[title + 15];
  CHECK(scale.find("        └-151 s ") == 0);
  CHECK(column_of(scale, "└-75 s") == 84);
  CHECK(scale.size() >= 6);
  CHECK(scale.substr(scale.size() - 6) == "now┘");
  CHECK(text_columns(scale) == 160);
  // The process table is under the chart, whole.
  CHECK(screen[title + 16].empty());
  CHECK(screen[title + 17].find("COMMAND") != std::string::npos);
  // Wider: more history, as far as it goes back.
  std::vector<std::string> wider = screen_text(model, now, 400, 45);
  CHECK(screen_has(wider, "└-391 s"));
  // At 80x24 there is no room: no chart, and the table is whole.
  CHECK_FALSE(screen_has(screen_text(model, now, 80, 24), "UTILIZATION  one column"));
}

TEST_CASE("top's chart of a short history labels only the columns it holds") {
  Utf8Locale utf8;
  TopModel model(milliseconds(1000));
  TopClock::time_point start = TopClock::now();
  Snapshot s = with_users();
  s.gpus[6].utilization_gpu_percent = 99;
  auto chart_of = [&](int columns) {
    TopClock::time_point newest = model.sample_times().back();
    std::vector<std::string> screen = screen_text(model, newest, columns, 50);
    std::size_t title = 0;
    while (title < screen.size() && screen[title].find("UTILIZATION  one column") != 0)
      ++title;
    REQUIRE(title + 17 < screen.size());
    // GPU 6's bottom row, the scale.
    return std::pair<std::string, std::string>{screen[title + 14], screen[title + 17]};
  };
  // One sample: it is now.
  model.add_sample(s, start);
  auto [row, scale] = chart_of(200);
  CHECK(column_of(row, "█") == 199);
  CHECK(scale.find("now") == 197);
  CHECK(scale.find("-") == std::string::npos);
  // Four more, a second apart: five columns at the right edge, the oldest 4 s before the newest
  // (read where it ends, at its column), never the screen's width.
  for (int second = 1; second <= 4; ++second)
    model.add_sample(s, start + seconds(second));
  std::tie(row, scale) = chart_of(200);
  INFO(row << "\n" << scale);
  CHECK(column_of(row, "█████") == 195);
  CHECK(column_of(scale, "-4 s┘") == 191);
  CHECK(scale.find("now") == std::string::npos); // no room beside the corner
  CHECK(text_columns(scale) == 200);
  // Twenty: the oldest's age after its column, `now` under the newest.
  for (int second = 5; second < 20; ++second)
    model.add_sample(s, start + seconds(second));
  std::tie(row, scale) = chart_of(200);
  CHECK(column_of(row, "█") == 180);
  CHECK(column_of(scale, "└-19 s") == 180);
  CHECK(column_of(scale, "now┘") == 196);
  CHECK(text_columns(scale) == 200);
  // Samples that came late are as far apart as their time: the label is their true age.
  model.add_sample(s, start + seconds(40));
  std::tie(row, scale) = chart_of(200);
  CHECK(column_of(scale, "└-40 s") == 179);
}

TEST_CASE("top's chart leaves a GPU blank where it was missing from a sample, in step") {
  Utf8Locale utf8;
  TopModel model(milliseconds(1000));
  TopClock::time_point start = TopClock::now();
  Snapshot s = with_users();
  for (Gpu &gpu : s.gpus)
    gpu.utilization_gpu_percent = 100;
  for (int second = 0; second < 20; ++second) {
    Snapshot sample = s;
    if (second == 10) // GPU 5 fell off the bus for one sample
      sample.gpus.erase(sample.gpus.begin() + 5);
    model.add_sample(sample, start + seconds(second));
  }
  std::vector<std::string> screen = screen_text(model, start + seconds(20), 100, 50);
  INFO(Catch::Detail::stringify(screen));
  std::size_t title = 0;
  while (title < screen.size() && screen[title].find("UTILIZATION  one column") != 0)
    ++title;
  REQUIRE(title + 16 < screen.size());
  const std::string &gpu4 = screen[title + 9], &gpu5 = screen[title + 11];
  CHECK(gpu4.find("GPU 4 ") == 0);
  CHECK(gpu5.find("GPU 5 ") == 0);
  CHECK(column_of(gpu4, "████████████████████") == 80);
  CHECK(column_of(gpu5, "██████████ █████████") == 80); // the missing sample's column blank
}

TEST_CASE("top's chart takes two rows per GPU with history, one where the table needs them") {
  Utf8Locale utf8;
  TopModel model(milliseconds(1000));
  TopClock::time_point now = TopClock::now();
  Snapshot s = with_users();
  model.add_sample(s, now - seconds(1));
  model.add_sample(s, now);
  auto rows_of = [&](const std::vector<std::string> &screen) {
    std::size_t chart = 0;
    for (const std::string &line : screen)
      chart += (line.find("GPU ") == 0 && std::isdigit(static_cast<unsigned char>(line[4]))) ||
               line.find("       │") == 0;
    return chart;
  };
  // 200x50, four processes: 8 GPUs x 2 rows, and the whole table.
  std::vector<std::string> roomy = screen_text(model, now, 200, 50);
  CHECK(rows_of(roomy) == 16);
  CHECK_FALSE(screen_has(roomy, "more"));

  // Forty processes: a row per GPU, and every other line to the table, down to the keys.
  for (int pid = 1000; pid < 1036; ++pid)
    s.gpus[5].processes->push_back(test::observed_process(pid, "carol", pid));
  model.add_sample(s, now);
  std::vector<std::string> busy = screen_text(model, now, 200, 50);
  INFO(Catch::Detail::stringify(busy));
  CHECK(rows_of(busy) == 8);
  std::size_t heading = 0;
  while (heading < busy.size() && busy[heading].find("COMMAND") == std::string::npos)
    ++heading;
  CHECK(heading ==
        11 + 1 + 1 + 8 + 1 + 1); // the GPUs, the chart (blank, title, rows, scale), a blank
  CHECK(busy[48].find(" more, 0 above") != std::string::npos);
  for (std::size_t at = heading + 1; at < 48; ++at)
    CHECK_FALSE(busy[at].empty());

  // Fewer lines: the table keeps at least five rows, the chart goes.
  std::vector<std::string> short_screen = screen_text(model, now, 200, 30);
  CHECK(rows_of(short_screen) == 0);
  CHECK(screen_has(short_screen, "more"));
}

TEST_CASE("top selects a GPU process by GPU and pid, and asks before a signal") {
  Utf8Locale utf8;
  TopModel model(milliseconds(1000));
  TopClock::time_point now = TopClock::now();
  Snapshot s = with_users();
  Lineages lineages;
  lineages[300].start_ticks = 4242;
  model.add_sample(s, now, lineages);
  CHECK_FALSE(model.selected_process());
  model.ask_signal(SIGTERM); // nothing selected: nothing asked
  CHECK_FALSE(model.pending_signal());
  REQUIRE(model.status());
  CHECK(model.status()->second);

  model.move_selection(1); // the first row: pid 300, the largest GPU memory
  REQUIRE(model.selected_process());
  CHECK(model.selected_process()->pid == 300);
  CHECK(model.selected_process()->start_ticks == std::uint64_t{4242});
  model.move_selection(1);
  CHECK(model.selected_process()->pid == 200);
  model.move_selection(-5); // clamped at the first
  CHECK(model.selected_process()->pid == 300);
  model.sort_by(SortKey::pid); // the selection follows the process, not the line
  CHECK(model.selected_process()->pid == 300);
  std::vector<ScreenLine> lines = layout_screen(model, now, {80, 24}, true);
  int selected = 0;
  for (const ScreenLine &line : lines)
    if (!line.empty() && line.front().selected) {
      ++selected;
      CHECK(line_text(line).find("    300 bob") != std::string::npos);
    }
  CHECK(selected == 1);

  model.ask_signal(SIGKILL);
  REQUIRE(model.pending_signal());
  std::string question = line_text(layout_screen(model, now, {160, 45}, true).back());
  CHECK(question.find("send SIGKILL to pid 300 (bob: train.py)? y: send") == 0);
  std::optional<PendingSignal> taken = model.take_pending_signal();
  REQUIRE(taken);
  CHECK(taken->process.start_ticks == std::uint64_t{4242});
  CHECK_FALSE(model.pending_signal());

  // The process gone from the next sample: nothing selected, nothing can be signalled.
  (*s.gpus[0].processes).pop_back();
  model.add_sample(s, now);
  CHECK_FALSE(model.selected_process());
  model.ask_signal(SIGTERM);
  CHECK_FALSE(model.pending_signal());
}

TEST_CASE("top's tree view puts each process under its parent, where the chains part") {
  Utf8Locale utf8;
  TopModel model(milliseconds(1000));
  TopClock::time_point now = TopClock::now();
  // 100 and 200 are torchrun's workers, torchrun (90) and 300 run under one bash (80), under
  // sshd (70) alone; 50's ancestors are not known.
  Lineages lineages;
  lineages[100].ancestors = {{90, "torchrun"}, {80, "bash"}, {70, "sshd"}};
  lineages[200].ancestors = {{90, "torchrun"}, {80, "bash"}, {70, "sshd"}};
  lineages[300].ancestors = {{80, "bash"}, {70, "sshd"}};
  model.add_sample(with_users(), now, lineages);
  model.toggle_tree();
  std::vector<ProcessRow> rows = model.process_rows();
  std::vector<std::pair<std::int64_t, int>> shape;
  for (const ProcessRow &row : rows)
    shape.emplace_back(row.pid.value_or(-1), row.depth);
  CHECK(shape == std::vector<std::pair<std::int64_t, int>>{
                     {80, 0}, {300, 1}, {90, 1}, {200, 2}, {100, 2}, {50, 0}});
  CHECK_FALSE(rows[0].listed); // bash: shown for the tree, not a GPU process
  CHECK(rows[1].listed);
  // Only GPU processes can be selected: the ancestors are passed over.
  model.move_selection(1);
  CHECK(model.selected_process()->pid == 300);
  model.move_selection(1);
  CHECK(model.selected_process()->pid == 200);
  std::vector<std::string> screen = screen_text(model, now, 80, 24);
  CHECK(screen_has(screen, "     80 "));
  CHECK(screen_has(screen, "└ torchrun"));
  CHECK(screen_has(screen, "  └ train.py"));
  CHECK_FALSE(screen_has(screen, "sshd"));
  model.toggle_tree();
  CHECK(model.process_rows().size() == 4);
}

TEST_CASE("top's compact view keeps every GPU and the table on a small terminal") {
  Utf8Locale utf8;
  TopModel model(milliseconds(1000));
  TopClock::time_point now = TopClock::now();
  model.add_sample(with_users(), now);
  std::vector<std::string> small = screen_text(model, now, 60, 16);
  INFO(Catch::Detail::stringify(small));
  REQUIRE(small.size() == 16);
  CHECK(small[0].find("nvsmi-agent top") == 0);
  CHECK(small[2].find(" 0  idle but held") == 0); // no column heading: the GPUs come at once
  CHECK(small[9].find(" 7  free") == 0);
  CHECK(screen_has(small, "COMMAND"));
  CHECK(screen_has(small, "    300 bob"));
  CHECK(screen_has(small, "alice,bob"));
  for (const std::string &line : small)
    CHECK(text_columns(line) <= 60);
  // The same view on a large screen by its key.
  model.toggle_compact();
  std::vector<std::string> asked = screen_text(model, now, 160, 45);
  CHECK(asked[2].find(" 0  idle but held") == 0);
  CHECK_FALSE(screen_has(asked, "HOST MEM"));
  CHECK_FALSE(screen_has(asked, "now"));
}

TEST_CASE("a signal goes only to the process shown: a reused pid or an unknown start is refused") {
  test::Background sleeper("exec sleep 300");
  pid_t pid = sleeper.pid();
  std::optional<std::uint64_t> start = process_start_ticks(pid);
  REQUIRE(start);
  // Another process now has the pid: its start differs from the one shown.
  SignalResult reused = signal_process(pid, *start + 1, SIGTERM);
  CHECK(reused.outcome == SignalOutcome::reused);
  CHECK(reused.message.find("not sent: pid " + std::to_string(pid) + " is now another process") ==
        0);
  SignalResult unknown = signal_process(pid, std::nullopt, SIGKILL);
  CHECK(unknown.outcome == SignalOutcome::start_unknown);
  CHECK(::kill(pid, 0) == 0);
  CHECK_FALSE(sleeper.exit_code());

  if (::geteuid() == 0) {
    // Another user (nobody) may not signal root's process: the kernel says so, and the
    // message names the owner.
    int report[2];
    REQUIRE(::pipe(report) == 0);
    pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      ::close(report[0]);
      int outcome = -1;
      if (::setgroups(0, nullptr) == 0 && ::setgid(65534) == 0 && ::setuid(65534) == 0)
        outcome = static_cast<int>(signal_process(pid, start, SIGTERM).outcome);
      (void)!::write(report[1], &outcome, sizeof outcome);
      ::_exit(0);
    }
    ::close(report[1]);
    int outcome = -2;
    CHECK(::read(report[0], &outcome, sizeof outcome) == sizeof outcome);
    ::close(report[0]);
    ::waitpid(child, nullptr, 0);
    CHECK(outcome == static_cast<int>(SignalOutcome::not_permitted));
    CHECK(::kill(pid, 0) == 0);
  }

  SignalResult sent = signal_process(pid, start, SIGTERM);
  CHECK(sent.outcome == SignalOutcome::sent);
  CHECK(sent.message == "sent SIGTERM to pid " + std::to_string(pid));
  CHECK(test::wait_until([&] { return sleeper.exit_code().has_value(); }));
  CHECK(sleeper.exit_code() == 128 + SIGTERM);
  SignalResult again = signal_process(pid, start, SIGTERM);
  CHECK(again.outcome == SignalOutcome::gone);
  CHECK(again.message == "pid " + std::to_string(pid) + " has already gone");
}

TEST_CASE("top keeps the selected process on the screen when the table is longer than it") {
  Utf8Locale utf8;
  TopModel model(milliseconds(1000));
  TopClock::time_point now = TopClock::now();
  Snapshot s = with_users();
  for (int pid = 1000; pid < 1030; ++pid)
    s.gpus[5].processes->push_back(test::observed_process(pid, "carol", pid));
  model.add_sample(s, now);
  model.move_selection(1);
  model.move_selection(20); // the 21st row, far below the 80x24 screen's table
  REQUIRE(model.selected_process());
  std::int64_t pid = *model.selected_process()->pid;
  std::vector<ScreenLine> lines = layout_screen(model, now, {80, 24}, true);
  bool shown = false;
  for (const ScreenLine &line : lines)
    if (!line.empty() && line.front().selected)
      shown = line_text(line).find(" " + std::to_string(pid) + " carol") != std::string::npos;
  CHECK(shown);
  std::vector<std::string> screen = screen_text(model, now, 80, 24);
  CHECK_FALSE(screen_has(screen, " 0 above"));
  CHECK(screen_has(screen, "above (↑↓ select)"));
}

TEST_CASE("top: a click on a GPU's row shows only its processes, a second all again") {
  Utf8Locale utf8;
  TopModel model(milliseconds(1000));
  TopClock::time_point now = TopClock::now();
  model.add_sample(with_users(), now);
  ClickTargets targets;
  std::vector<ScreenLine> lines = layout_screen(model, now, {160, 45}, true, &targets);
  REQUIRE(targets.gpus.size() == lines.size());
  REQUIRE(targets.process_rows.size() == lines.size());
  std::size_t gpu5 = 0;
  while (gpu5 < lines.size() && targets.gpus[gpu5] != 5)
    ++gpu5;
  REQUIRE(gpu5 < lines.size());
  CHECK(line_text(lines[gpu5]).rfind(" 5  ", 0) == 0); // the line that shows GPU 5
  CHECK_FALSE(targets.process_rows[gpu5]);
  model.toggle_gpu_filter(5);
  for (const ProcessRow &row : model.process_rows())
    CHECK(row.gpu == 5);
  model.toggle_gpu_filter(5);
  CHECK_FALSE(model.gpu_filter());
}

TEST_CASE("top shows SM and tensor activity beside utilization where dmon gives them") {
  Utf8Locale utf8;
  TopModel model(milliseconds(1000));
  TopClock::time_point now = TopClock::now();
  Snapshot s = with_users();
  s.gpus[0].sm_active_percent = 12;
  s.gpus[0].tensor_active_percent = 7;
  model.add_sample(s, now);
  std::vector<std::string> wide = screen_text(model, now, 160, 45);
  REQUIRE(wide.size() > 3);
  CHECK(screen_has(wide, " SM TENS "));
  CHECK(wide[3].find(" 12%   7% ") != std::string::npos); // GPU 0
  // GPU 1 has no GPM reading: a dash, never 0 or its utilization.
  CHECK(wide[4].find(" 0% ") == std::string::npos);
  CHECK(wide[4].find("   -    - ") != std::string::npos);
  // Under 110 columns the columns go, and every line still fits.
  std::vector<std::string> narrow = screen_text(model, now, 100, 30);
  CHECK_FALSE(screen_has(narrow, " TENS "));
  for (const std::string &line : narrow)
    CHECK(text_columns(line) <= 100);
}

TEST_CASE("top shows NVLink's busier direction and its share of the links' capacity at 170 "
          "columns and more") {
  Utf8Locale utf8;
  TopModel model(milliseconds(1000));
  TopClock::time_point now = TopClock::now();
  Snapshot s = with_users();
  REQUIRE(s.gpus.size() >= 3);
  // GPU 0: 410 GB/s in, 100 out, of 478 GB/s each way; GPU 1: 2.1 MB/s out, capacity unknown.
  s.gpus[0].nvlink_rx_bytes_per_second = 410'000'000'000;
  s.gpus[0].nvlink_tx_bytes_per_second = 100'000'000'000;
  s.gpus[0].nvlink_bandwidth_bytes_per_second = 478'116'000'000;
  s.gpus[1].nvlink_tx_bytes_per_second = 2'100'000;
  model.add_sample(s, now);
  std::vector<std::string> wide = screen_text(model, now, 180, 45);
  REQUIRE(wide.size() > 5);
  INFO(Catch::Detail::stringify(wide));
  CHECK(screen_has(wide, " NVLINK "));
  CHECK(wide[3].find(" 410G 86% ") != std::string::npos);
  CHECK(wide[4].find(" 2M ") != std::string::npos);
  // GPU 2 has no NVLink figure (nor SM or tensor activity): a dash, never 0.
  CHECK(wide[5].find("   -    - -         ") != std::string::npos);
  for (const std::string &line : wide)
    CHECK(text_columns(line) <= 180);
  // Under 170 columns the column goes (the history keeps its room), and every line still fits.
  std::vector<std::string> narrow = screen_text(model, now, 160, 30);
  CHECK_FALSE(screen_has(narrow, "NVLINK"));
  CHECK(screen_has(narrow, " HIST"));
  for (const std::string &line : narrow)
    CHECK(text_columns(line) <= 160);
}

TEST_CASE("top gives the longest state, allocated but idle, whole at every width") {
  Utf8Locale utf8;
  TopModel model(milliseconds(1000));
  TopClock::time_point now = TopClock::now();
  Snapshot s = states_fixture();
  for (Gpu &gpu : s.gpus)
    gpu.processes = std::vector<Process>{};
  s.allocations_read = true;
  Allocation held;
  held.job_id = "1234";
  held.user = "alice";
  held.held_s = 3600;
  s.gpus[7].allocation = held;
  model.add_sample(s, now);
  REQUIRE(gpu_state(s.gpus[7]) == GpuState::allocated_idle);
  for (ScreenSize size : {ScreenSize{80, 24}, ScreenSize{120, 40}, ScreenSize{200, 50}}) {
    std::vector<std::string> screen = screen_text(model, now, size.columns, size.lines);
    INFO(size.columns << "x" << size.lines << "\n" << Catch::Detail::stringify(screen));
    // GPU 7's row, with its name at 140 columns and more, then the state whole and a space.
    bool whole = false;
    for (const std::string &line : screen)
      whole = whole ||
              (line.rfind(" 7  ", 0) == 0 && line.find("allocated but idle ") != std::string::npos);
    CHECK(whole);
  }
  model.toggle_compact();
  std::vector<std::string> compact = screen_text(model, now, 60, 16);
  INFO(Catch::Detail::stringify(compact));
  CHECK(screen_has(compact, " 7  allocated but idle "));
  for (const std::string &line : compact)
    CHECK(text_columns(line) <= 60);
}

TEST_CASE("top's emphasis: the summary is the bold line, each state's count in the state's tone") {
  Utf8Locale utf8;
  TopModel model(milliseconds(1000));
  TopClock::time_point now = TopClock::now();
  model.add_sample(states_fixture(), now);
  std::vector<ScreenLine> lines = layout_screen(model, now, {200, 50}, true);
  // "8 GPUs: 3 free · 2 in use · 1 idle but held · 1 at power limit · 1 hot"
  const ScreenLine &summary = lines[1];
  for (const Span &span : summary)
    CHECK(span.strong);
  CHECK(tone_of(summary, "3 free") == Tone::good);
  CHECK(tone_of(summary, "2 in use") == Tone::busy);
  CHECK(tone_of(summary, "1 idle but held") == Tone::warning);
  CHECK(tone_of(summary, "1 at power limit") == Tone::alarm);
  CHECK(tone_of(summary, "1 hot") == Tone::alarm);
  CHECK(tone_of(summary, "8 GPUs") == Tone::normal);
  // The same tone for the state on its GPU's row; nothing else on the screen is bold, the GPU's
  // name least of all.
  CHECK(tone_of(lines[3], "free") == Tone::good);
  CHECK(tone_of(lines[4], "in use") == Tone::busy);
  CHECK(tone_of(lines[6], "idle but held") == Tone::warning);
  CHECK(tone_of(lines[5], "hot") == Tone::alarm);
  CHECK(tone_of(lines[3], "NVIDIA H100 80GB HBM3") == Tone::normal);
  for (std::size_t at = 0; at < lines.size(); ++at)
    if (at != 1)
      for (const Span &span : lines[at])
        CHECK_FALSE(span.strong);
  // A part that counts no state (hosts without a sample, a user named like a state) is plain.
  ScreenLine fleet = summary_line(
      "9 GPUs on 2 hosts: 8 free \u00b7 1 idle but held (1 hot) \u00b7 1 host without a fresh "
      "sample",
      200);
  CHECK(tone_of(fleet, "8 free") == Tone::good);
  CHECK(tone_of(fleet, "1 idle but held (1 hot)") == Tone::warning);
  CHECK(tone_of(fleet, "1 host without") == Tone::normal);
  CHECK(line_text(summary_line("8 GPUs: 3 free", 9)) == "8 GPUs: 3");
}

TEST_CASE("top's process table keeps 8 columns of the command before it drops the user") {
  Utf8Locale utf8;
  TopModel model(milliseconds(1000));
  TopClock::time_point now = TopClock::now();
  Snapshot s = with_users();
  (*s.gpus[0].processes)[1].command = "/usr/bin/python3 -u /home/bob/train.py --lr 1";
  model.add_sample(s, now);
  auto row_of = [&](int columns) {
    for (const std::string &line : screen_text(model, now, columns, 24))
      if (line.find(" 300 ") != std::string::npos && line.find("GPU") == std::string::npos)
        return line;
    return std::string();
  };
  // The one naming of a command (core/command_text): the script, not the interpreter.
  CHECK(row_of(80).find("bob") != std::string::npos);
  CHECK(row_of(80).find("train.py --lr 1") != std::string::npos);
  CHECK(row_of(80).find("python3") == std::string::npos);
  CHECK(row_of(53).find("bob") != std::string::npos); // 8 columns of the command left
  CHECK(row_of(53).find("train.py") != std::string::npos);
  CHECK(row_of(52).find("bob") == std::string::npos); // the user goes, the command keeps room
  CHECK(row_of(52).find("train.py --lr") != std::string::npos);
}

TEST_CASE("top lays out a tiny or a huge terminal without a line past its edge") {
  Utf8Locale utf8;
  TopModel model(milliseconds(1000));
  TopClock::time_point start = TopClock::now();
  Snapshot s = with_users();
  (*s.gpus[0].processes)[0].command = "\xe6\x97\xa5\xe6\x9c\xac\xcc\x81\xff\x1b[2J train.py";
  s.gpus[1].name = "\xe6\x97\xa5\xe6\x9c\xac H100\x1b]0;x\x07\xc3";
  for (int second = 0; second < 50; ++second)
    model.add_sample(s, start + seconds(second));
  TopClock::time_point now = start + seconds(49);
  for (ScreenSize size : {ScreenSize{0, 0}, ScreenSize{1, 1}, ScreenSize{3, 2}, ScreenSize{20, 5},
                          ScreenSize{79, 19}, ScreenSize{2000, 400}, ScreenSize{-5, -5}}) {
    INFO(size.columns << "x" << size.lines);
    std::vector<ScreenLine> lines = layout_screen(model, now, size, true);
    CHECK(lines.size() == static_cast<std::size_t>(std::max(size.lines, 1)));
    for (const ScreenLine &line : lines) {
      std::string text = line_text(line);
      CHECK(text_columns(text) <= static_cast<std::size_t>(std::max(size.columns, 0)));
      CHECK(printable_text(text) == text);
    }
  }
}

} // namespace test_top_model
