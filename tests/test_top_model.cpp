// `top` without a terminal: the model (sorting, filters, history, lateness), the layout of a
// screen of a given size, and the text that goes on it.
#include "core/screen_text.hpp"
#include "snapshot_builders.hpp"
#include "support.hpp"
#include "terminal/top_layout.hpp"
#include "terminal/top_model.hpp"

#include "nvsmi/xml_reader.hpp"

#include <catch2/catch.hpp>

#include <clocale>

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
  const std::deque<Reading> &history = model.utilization_history(2);
  REQUIRE(history.size() == TopModel::history_length);
  CHECK(history.back() == static_cast<std::int64_t>((TopModel::history_length + 19) % 100));
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
  const std::string &row = screen[2]; // GPU 0
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
