// `nvsmi-agent top` through the real binary, in a private tmux server per test: what the screen
// shows at 80x24 and 200x50, what the keys change, a late sample, a hostile process name, and the
// terminal given back on `q`.
#include "host/process_tree.hpp"
#include "process_support.hpp"
#include "support.hpp"
#include "tmux_session.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <optional>
#include <regex>
#include <sstream>
#include <unistd.h>

namespace test_top {

using test::quote;
using test::run_shell;

namespace {

const std::string states_fixture = test::fixture_path("xml/h100-8gpu-states-v12.xml");
const std::string fake = quote(SCRIPTS_DIR "/fake-nvidia-smi");
const std::string gpu0 = "GPU-00000000-0000-0000-0000-000000000000";
const std::string gpu1 = "GPU-00000000-0000-0000-0000-000000000001";

// The command line that runs top in the pane and then says how it ended, and whether it left the
// terminal's input blocking as it found it (O_NONBLOCK, 04000, left on would break the shell).
std::string top_command(const std::string &arguments, const std::string &environment = "") {
  return environment + "LC_ALL=C.UTF-8 " AGENT_BIN " top " + arguments +
         "; echo top-exit=$? stdin-blocking=$(awk '/^flags/ { digit = substr($2, length($2) - 3, "
         "1);"
         " print ((digit % 8 >= 4) ? \"no\" : \"yes\") }' /proc/$$/fdinfo/0)";
}

using test::lines_of;

// The rows of the process table: the lines after its heading, up to the first blank one.
std::vector<std::string> process_rows(const std::string &screen) {
  std::vector<std::string> rows;
  bool in_table = false;
  for (const std::string &line : lines_of(screen)) {
    if (in_table && (line.empty() || line.find("q quit") != std::string::npos))
      break;
    if (in_table)
      rows.push_back(line);
    if (line.find("COMMAND") != std::string::npos)
      in_table = true;
  }
  return rows;
}

bool pid_order(const std::string &screen, const std::vector<std::string> &pids) {
  std::vector<std::string> rows = process_rows(screen);
  if (rows.size() != pids.size())
    return false;
  for (std::size_t i = 0; i < rows.size(); ++i)
    if (rows[i].find(" " + pids[i] + " ") == std::string::npos)
      return false;
  return true;
}

bool have_tmux() {
  if (test::installed("tmux"))
    return true;
  WARN("tmux is not installed (scripts/install-deps installs it): top's screen is not tested");
  return false;
}

// The characters of a line of the pane, one a column (what top's chart and its scale hold: ASCII,
// box drawing and block elements, each one column wide).
std::vector<std::string> cells_of(const std::string &line) {
  std::vector<std::string> cells;
  for (std::size_t at = 0; at < line.size();) {
    std::size_t length = 1;
    unsigned char lead = static_cast<unsigned char>(line[at]);
    if (lead >= 0xf0)
      length = 4;
    else if (lead >= 0xe0)
      length = 3;
    else if (lead >= 0xc0)
      length = 2;
    cells.push_back(line.substr(at, length));
    at += length;
  }
  return cells;
}

// top's history chart as the pane shows it: the GPUs it draws, in order, each GPU's rows, the
// scale under them, and the lines after it.
struct ChartOnScreen {
  std::vector<int> gpus;
  std::vector<std::vector<std::string>> rows; // per GPU, top row first
  std::string scale;
  std::size_t after = 0; // the line after the scale
};

std::optional<ChartOnScreen> chart_on(const std::string &screen) {
  std::vector<std::string> lines = lines_of(screen);
  // Its first line: "GPU N" and the axis.
  std::size_t at = 0;
  while (at < lines.size() && (lines[at].find("GPU ") != 0 || lines[at].find("\u2502") != 7))
    ++at;
  if (at == lines.size())
    return std::nullopt;
  ChartOnScreen chart;
  for (; at < lines.size(); ++at) {
    const std::string &line = lines[at];
    if (line.find("GPU ") == 0) {
      chart.gpus.push_back(std::atoi(line.c_str() + 4));
      chart.rows.emplace_back();
    } else if (line.find("       \u2502") != 0) {
      break;
    }
    if (chart.rows.empty())
      return std::nullopt;
    chart.rows.back().push_back(line);
  }
  if (at == lines.size() || chart.rows.empty())
    return std::nullopt;
  chart.scale = lines[at];
  chart.after = at + 1;
  return chart;
}

// Whether the chart's scale tells the time its columns hold: the bars of `gpu` (busy in every
// sample) fill the columns from the oldest drawn sample to the newest, at least `least` of them;
// the scale's corner under the oldest names its age, about a sample's interval (`interval_s`)
// for each column after it, and `now` ends under the newest. `why` says what did not match.
bool scale_tells_time(const ChartOnScreen &chart, int gpu, std::size_t least, double interval_s,
                      std::string &why) {
  auto found = std::find(chart.gpus.begin(), chart.gpus.end(), gpu);
  if (found == chart.gpus.end())
    return (why = "GPU " + std::to_string(gpu) + " has no chart"), false;
  std::vector<std::string> bottom =
      cells_of(chart.rows[static_cast<std::size_t>(found - chart.gpus.begin())].back());
  std::size_t first = 0, last = 0;
  for (std::size_t i = 8; i < bottom.size(); ++i)
    if (bottom[i] != " ") {
      first = first ? first : i;
      last = i;
    }
  std::size_t drawn = first ? last - first + 1 : 0;
  if (drawn < least)
    return (why = std::to_string(drawn) + " columns drawn so far"), false;
  for (std::size_t i = first; i <= last; ++i)
    if (bottom[i] == " ")
      return (why = "a gap in the bars at column " + std::to_string(i)), false;
  std::vector<std::string> scale = cells_of(chart.scale);
  if (scale.size() <= last || scale[first] != "\u2514" || scale[last] != "\u2518" ||
      scale[last - 3] + scale[last - 2] + scale[last - 1] != "now")
    return (why = "the corners are not under the oldest and the newest column"), false;
  for (std::size_t i = 0; i < first; ++i)
    if (scale[i] != " ")
      return (why = "the scale labels a column left of the oldest sample"), false;
  std::string label;
  for (std::size_t i = first + 1; i < scale.size() && scale[i] != " "; ++i)
    label += scale[i];
  if (label.empty() || label[0] != '-' || scale[first + label.size() + 1] != " " ||
      scale[first + label.size() + 2] != "s")
    return (why = "no age under the oldest column"), false;
  double age = std::atof(label.c_str() + 1), expected = static_cast<double>(drawn - 1) * interval_s;
  // Samples come late on a busy machine, never early: the age may be more, by a little.
  if (age < expected - 1 || age > expected * 1.5 + 1)
    return (why = "the oldest column is labelled -" + label + " s for " + std::to_string(drawn) +
                  " samples"),
           false;
  return true;
}

// The states fixture with GPUs 0 and 7 giving no utilization (nothing to chart) and GPU 2 holding
// `processes` processes.
std::string chart_fixture(int processes) {
  std::string xml = test::read_file(states_fixture);
  const std::string zero = "<gpu_util>0 %</gpu_util>";
  xml.replace(xml.find(zero), zero.size(), "<gpu_util>N/A</gpu_util>");
  xml.replace(xml.rfind(zero), zero.size(), "<gpu_util>N/A</gpu_util>");
  std::string more;
  for (int i = 0; i < processes; ++i)
    more += "<process_info><gpu_instance_id>N/A</gpu_instance_id><compute_instance_id>N/A"
            "</compute_instance_id><pid>" +
            std::to_string(7000 + i) +
            "</pid><type>C</type><process_name>worker</process_name><used_memory>" +
            std::to_string(100 + i) + " MiB</used_memory></process_info>\n";
  std::size_t gpu2 = xml.find("<pid>4242</pid>");
  xml.insert(xml.find("</processes>", gpu2), more);
  std::string path = test::temporary_folder() + "/chart.xml";
  test::write_file(path, xml);
  return path;
}

} // namespace

TEST_CASE(
    "top's history chart: a column a sample, its scale the span it holds, the table the rest") {
  if (!have_tmux())
    return;
  {
    // 200x50, 40 processes: a row per GPU with history (not GPUs 0 and 7, which give no
    // utilization), and every line under the chart for the process table.
    test::Tmux tmux(200, 50);
    tmux.run(top_command("--interval 1 --fixture " + quote(chart_fixture(40))));
    std::string why;
    bool told = tmux.wait_for([&](const std::string &s) {
      std::optional<ChartOnScreen> chart = chart_on(s);
      return chart && scale_tells_time(*chart, 2, 12, 1.0, why);
    });
    std::string screen = tmux.screen();
    test::keep_artifact("top-chart-200x50.txt", screen);
    INFO(screen << why);
    CHECK(told);
    std::optional<ChartOnScreen> chart = chart_on(screen);
    REQUIRE(chart);
    CHECK(screen.find("\nUTILIZATION  one column per sample, every 1 s\n") != std::string::npos);
    CHECK(chart->gpus == std::vector<int>{1, 2, 3, 4, 5, 6});
    for (const auto &rows : chart->rows)
      CHECK(rows.size() == 1);
    std::vector<std::string> lines = lines_of(screen);
    REQUIRE(lines.size() >= 50);
    CHECK(lines[3].find(" 0  NVIDIA H100 80GB HBM3  free") == 0); // listed, nothing to chart
    // Under the chart: a blank line, the table's heading, then its rows down to the keys, the
    // last line saying how many more there are.
    REQUIRE(chart->after + 2 < 49);
    CHECK(lines[chart->after].empty());
    CHECK(lines[chart->after + 1].find("COMMAND") != std::string::npos);
    for (std::size_t at = chart->after + 2; at < 48; ++at)
      CHECK_THAT(lines[at], Catch::Matches("\\s+[0-9]+\\s+[0-9]+ .*"));
    CHECK_THAT(lines[48], Catch::Contains(" more, 0 above"));
    CHECK(lines[49].find("q quit") == 0);
    // The summary is the one bold line, each state's count in the state's colour; a GPU's name
    // is plain, its state in the same colour as in the summary.
    std::string styled = tmux.tmux("capture-pane -p -e").out;
    test::keep_artifact("top-chart-200x50.ansi", styled);
    std::vector<std::string> styled_lines = lines_of(styled);
    REQUIRE(styled_lines.size() >= 50);
    INFO(styled_lines[1] << "\n" << styled_lines[3]);
    CHECK(std::regex_search(styled_lines[1], std::regex("^(\x1b\\[[0-9;]*m)*\x1b\\[(0;)?1m")));
    CHECK_THAT(styled_lines[1], Catch::Contains("\x1b[32m3 free") &&
                                    Catch::Contains("\x1b[36m2 in use") &&
                                    Catch::Contains("\x1b[31m1 hot"));
    std::size_t bold = 0;
    for (const std::string &line : styled_lines)
      bold += std::regex_search(line, std::regex("\x1b\\[([0-9;]*;)?1(;[0-9;]*)?m"));
    CHECK(bold == 1);
    CHECK_THAT(styled_lines[4], Catch::Contains("NVIDIA H100 80GB HBM3  \x1b[36min use"));
    tmux.keys("q");
    CHECK(tmux.wait_for("top-exit=0 stdin-blocking=yes"));
  }
}

TEST_CASE("top's history chart at 80x24: two rows a GPU, its scale the span its columns hold") {
  if (!have_tmux())
    return;
  {
    // Two GPUs: two rows each, the busy GPU's bars as many as its samples.
    test::Tmux tmux(80, 24);
    tmux.run(top_command("--interval 1 --fixture " +
                         quote(test::fixture_path("xml/gtx1080ti-2gpu-v10-nodoctype.xml"))));
    std::string why;
    bool told = tmux.wait_for([&](const std::string &s) {
      std::optional<ChartOnScreen> chart = chart_on(s);
      return chart && scale_tells_time(*chart, 0, 12, 1.0, why);
    });
    std::string screen = tmux.screen();
    test::keep_artifact("top-chart-80x24.txt", screen);
    INFO(screen << why);
    CHECK(told);
    std::optional<ChartOnScreen> chart = chart_on(screen);
    REQUIRE(chart);
    CHECK(chart->gpus == std::vector<int>{0, 1});
    for (const auto &rows : chart->rows)
      CHECK(rows.size() == 2);
    CHECK(process_rows(screen).size() == 2);
    tmux.keys("q");
    CHECK(tmux.wait_for("top-exit=0 stdin-blocking=yes"));
  }
}

TEST_CASE("top on a fixture: every GPU with its state, the processes, keys, resize and q") {
  if (!have_tmux())
    return;
  test::Tmux tmux(80, 24);
  tmux.run(top_command("--interval 1 --fixture " + quote(states_fixture)));
  REQUIRE(tmux.wait_for("vllm serve"));
  std::string screen = tmux.screen();
  test::keep_artifact("top-80x24.txt", screen);
  INFO(screen);
  std::vector<std::string> lines = lines_of(screen);
  REQUIRE(lines.size() >= 24);
  CHECK(lines[0].find("nvsmi-agent top") == 0);
  CHECK(lines[0].find("driver 550.54.15") != std::string::npos);
  const char *states[] = {"free", "in use",         "hot",    "idle but held",
                          "free", "at power limit", "in use", "free"};
  for (int gpu = 0; gpu < 8; ++gpu) {
    const std::string &row = lines[static_cast<std::size_t>(gpu + 3)];
    CHECK(row.find(" " + std::to_string(gpu) + "  " + states[gpu]) == 0);
  }
  CHECK(lines[1].find("8 GPUs: 3 free") == 0);           // the fleet summary first
  CHECK(lines[8].find("698/700W") != std::string::npos); // GPU 5's row
  CHECK(screen.find("CONTAINER") == std::string::npos);
  CHECK(lines[23].find("q quit") == 0);
  // Largest GPU memory first, as the table starts.
  CHECK(pid_order(screen, {"6006", "5002", "4242", "5001"}));

  tmux.keys("p");
  CHECK(tmux.wait_for([](const std::string &s) {
    return pid_order(s, {"4242", "5001", "5002", "6006"});
  }));
  tmux.keys("p"); // again: reversed
  CHECK(tmux.wait_for([](const std::string &s) {
    return pid_order(s, {"6006", "5002", "5001", "4242"});
  }));
  tmux.keys("ggg"); // all -> 0 -> 1 -> 2
  CHECK(tmux.wait_for([](const std::string &s) {
    return pid_order(s, {"4242"}) && s.find("g GPU:2") != std::string::npos;
  }));
  tmux.key("Escape");
  CHECK(tmux.wait_for([](const std::string &s) { return process_rows(s).size() == 4; }));

  tmux.resize(160, 45);
  CHECK(tmux.wait_for("CONTAINER"));
  CHECK(tmux.wait_for("NVIDIA H100 80GB HBM3"));
  // The history under the GPUs, with its time scale ending now.
  CHECK(tmux.wait_for([](const std::string &s) {
    std::vector<std::string> rows = lines_of(s);
    bool scale = std::any_of(rows.begin(), rows.end(), [](const std::string &row) {
      return row.size() > 6 && row.substr(row.size() - 6) == "now\u2518";
    });
    return rows.size() >= 45 && scale && s.find("GPU 7 ") != std::string::npos;
  }));
  std::string wide = tmux.screen();
  test::keep_artifact("top-160x45.txt", wide);
  CHECK(lines_of(wide).at(44).find("q quit") == 0);

  tmux.resize(80, 24);
  CHECK(tmux.wait_for([](const std::string &s) {
    return s.find("CONTAINER") == std::string::npos && lines_of(s).size() >= 24 &&
           lines_of(s)[23].find("q quit") == 0;
  }));

  tmux.keys("q");
  CHECK(tmux.wait_for("top-exit=0 stdin-blocking=yes"));
  // The shell's own screen is back: top's screen was the alternate one.
  CHECK_FALSE(tmux.shows("q quit"));
}

TEST_CASE("top says a sample is late, stops showing its readings as the present, ends on Ctrl-C") {
  if (!have_tmux())
    return;
  test::Tmux tmux(80, 24);
  tmux.run(top_command("--interval 0.5 --stall-timeout 120 --source xml --nvidia-smi " + fake,
                       "FAKE_NVSMI_HANG_AFTER=1 FAKE_NVSMI_XML=" + quote(states_fixture) + " "));
  REQUIRE(tmux.wait_for("at power limit"));
  CHECK(tmux.shows("698/700W"));
  REQUIRE(tmux.wait_for("LATE: no sample for"));
  std::string screen = tmux.screen();
  INFO(screen);
  CHECK(screen.find("698/700W") == std::string::npos);
  CHECK(screen.find("at power limit") == std::string::npos);
  CHECK(screen.find(" 5  stale") != std::string::npos);
  CHECK(screen.find("processes hidden") != std::string::npos);
  // Ctrl-C is a stop asked for, as for watch: exit 0, the shell's screen back.
  tmux.key("C-c");
  CHECK(tmux.wait_for("top-exit=0 stdin-blocking=yes"));
  CHECK_FALSE(tmux.shows("LATE"));
}

TEST_CASE("top shows hostile process names as text, and filters the table to one user") {
  if (!have_tmux())
    return;
  // A root process whose command line is an escape sequence that would clear the screen, and a
  // process of nobody's; nvidia-smi's own name for the first is hostile too.
  test::Background hostile(
      "exec bash -c 'exec -a \"$(printf \"\\033[2J\\033[31mEVIL\\a\")\" sleep 300'");
  test::Background nobody("exec setpriv --reuid=nobody --regid=nogroup --clear-groups sleep 300");
  std::string folder = test::temporary_folder();
  std::ostringstream apps;
  apps << gpu0 << ", " << hostile.pid() << ", 1024 MiB, \x1b[H\x1b[2Jname\n"
       << gpu1 << ", " << nobody.pid() << ", 2048 MiB, sleep\n";
  test::write_file(folder + "/apps", apps.str());

  test::Tmux tmux(80, 24);
  tmux.run(top_command("--interval 0.5 --nvidia-smi " + fake,
                       "FAKE_NVSMI_APPS=" + quote(folder + "/apps") + " "));
  // Shown as text, each control marked (core/command_text: U+FFFD, `?` without UTF-8), none obeyed.
  REQUIRE(tmux.wait_for("[2J"));
  REQUIRE(tmux.wait_for("[31mEVIL"));
  REQUIRE(tmux.wait_for("nobody"));
  std::string screen = tmux.screen();
  INFO(screen);
  std::vector<std::string> lines = lines_of(screen);
  REQUIRE(lines.size() >= 24);
  CHECK(lines[0].find("nvsmi-agent top") == 0);
  CHECK(lines[23].find("q quit") == 0);
  for (const std::string &line : lines)
    CHECK(line.size() <= 80 * 3);

  tmux.keys("f"); // the first user by name: nobody
  CHECK(tmux.wait_for([](const std::string &s) {
    std::vector<std::string> rows = process_rows(s);
    return rows.size() == 1 && rows[0].find("nobody") != std::string::npos &&
           s.find("f user:nobody") != std::string::npos;
  }));
  tmux.keys("f");
  CHECK(tmux.wait_for([](const std::string &s) {
    std::vector<std::string> rows = process_rows(s);
    return rows.size() == 1 && rows[0].find("root") != std::string::npos;
  }));
  tmux.keys("a");
  CHECK(tmux.wait_for([](const std::string &s) { return process_rows(s).size() == 2; }));
  tmux.keys("q");
  CHECK(tmux.wait_for("top-exit=0 stdin-blocking=yes"));
}

// The whole of top's screen on the states fixture at `lines` rows: the heading, every GPU's row,
// the process table with its four processes, the keys' line at the bottom.
bool whole_screen(const std::string &screen, std::size_t lines) {
  std::vector<std::string> rows = lines_of(screen);
  if (rows.size() < lines || rows[0].find("nvsmi-agent top") != 0 ||
      rows[lines - 1].find("q quit") != 0 || process_rows(screen).size() != 4)
    return false;
  for (int gpu = 0; gpu < 8; ++gpu)
    if (rows[static_cast<std::size_t>(gpu + 3)].find(" " + std::to_string(gpu) + "  ") != 0)
      return false;
  return true;
}

TEST_CASE("top paints the whole screen again after each resize, smaller or larger") {
  if (!have_tmux())
    return;
  // A terminal that shrinks keeps its bottom rows, where the cursor was: top used to send only
  // what differed from the top rows it believed were left, and the GPUs and the process table
  // stayed missing for good.
  test::Tmux tmux(200, 50);
  tmux.run(top_command("--interval 1 --fixture " + quote(states_fixture)));
  REQUIRE(tmux.wait_for([](const std::string &s) { return whole_screen(s, 50); }));
  for (int round = 0; round < 2; ++round) {
    {
      tmux.resize(80, 24);
      bool small = tmux.wait_for([](const std::string &s) {
        return whole_screen(s, 24) && s.find("CONTAINER") == std::string::npos;
      });
      std::string screen = tmux.screen();
      INFO("round " << round << ", 80x24:\n" << screen);
      test::keep_artifact("top-resized-80x24.txt", screen);
      CHECK(small);
    }
    tmux.resize(200, 50);
    bool large = tmux.wait_for([](const std::string &s) {
      return whole_screen(s, 50) && s.find("CONTAINER") != std::string::npos;
    });
    INFO("round " << round << ", 200x50:\n" << tmux.screen());
    CHECK(large);
  }
  tmux.keys("q");
  CHECK(tmux.wait_for("top-exit=0 stdin-blocking=yes"));
}

// Writes a compute-apps list that puts `pid` on GPU 0, in a folder that any user may read (top
// runs as nobody in one test), and returns its path.
std::string apps_file(int pid) {
  std::string folder = test::temporary_folder();
  test::write_file(folder + "/apps", gpu0 + ", " + std::to_string(pid) + ", 4096 MiB, sleep\n");
  run_shell("chmod 755 " + quote(folder) + " && chmod 644 " + quote(folder + "/apps"));
  return folder + "/apps";
}

TEST_CASE("top sends a selected process SIGTERM after y, and shows the help and the tree") {
  if (!have_tmux())
    return;
  test::Background sleeper("exec sleep 300");
  test::Background other("exec sleep 301"); // more GPU memory: the first row, above the sleeper
  const std::string pid = std::to_string(sleeper.pid());
  std::string apps = apps_file(sleeper.pid());
  run_shell("echo " + quote(gpu1 + ", " + std::to_string(other.pid()) + ", 8192 MiB, sleep") +
            " >>" + quote(apps));
  test::Tmux tmux(100, 30);
  tmux.run(
      top_command("--interval 0.5 --nvidia-smi " + fake, "FAKE_NVSMI_APPS=" + quote(apps) + " "));
  REQUIRE(tmux.wait_for(" " + pid + " root"));
  REQUIRE(tmux.wait_for(" " + std::to_string(other.pid()) + " root"));

  tmux.keys("?");
  CHECK(tmux.wait_for("SIGTERM, SIGKILL or SIGINT"));
  tmux.keys("x"); // any key closes the help
  CHECK(tmux.wait_for([&](const std::string &s) {
    return s.find("SIGKILL or") == std::string::npos && s.find(" " + pid + " root") != s.npos;
  }));
  tmux.keys("T"); // nothing selected yet: nothing asked
  CHECK(tmux.wait_for("select a process first"));
  // A click on its row, the second, selects it (the terminal's mouse report, X10: button 1
  // pressed at a column and a line, each plus 33); a key would select the first.
  int line = 0;
  std::vector<std::string> shown = lines_of(tmux.screen());
  while (line < static_cast<int>(shown.size()) &&
         shown[static_cast<std::size_t>(line)].find(" " + pid + " root") == std::string::npos)
    ++line;
  // As a terminal reports a click: button 1 pressed, then released (button code 3).
  auto click = [&](int at) {
    tmux.keys(std::string("\x1b[M ") + static_cast<char>(33 + 10) + static_cast<char>(33 + at));
    tmux.keys(std::string("\x1b[M#") + static_cast<char>(33 + 10) + static_cast<char>(33 + at));
  };
  click(line);
  tmux.keys("T");
  REQUIRE(tmux.wait_for("send SIGTERM to pid " + pid + " (root: sleep 300)? y: send"));
  tmux.keys("n"); // anything but y cancels
  CHECK(tmux.wait_for("nothing sent"));
  CHECK_FALSE(sleeper.exit_code());
  tmux.keys("T");
  REQUIRE(tmux.wait_for("send SIGTERM to pid " + pid));
  tmux.keys("y");
  CHECK(tmux.wait_for("sent SIGTERM to pid " + pid));
  // Gone and reaped (its parent shell waited for it): killed by SIGTERM.
  CHECK(test::wait_until([&] { return sleeper.exit_code().has_value(); }));
  CHECK(sleeper.exit_code() == 128 + SIGTERM);
  CHECK_FALSE(other.exit_code());
  test::keep_artifact("top-signal-sent.txt", tmux.screen());
  // A click on GPU 1's row shows only its processes; a second click all of them again.
  auto line_of = [&](const std::string &text) {
    std::vector<std::string> now = lines_of(tmux.screen());
    for (std::size_t i = 0; i < now.size(); ++i)
      if (now[i].rfind(text, 0) == 0)
        return static_cast<int>(i);
    return -1;
  };
  const std::string other_row = " " + std::to_string(other.pid()) + " root";
  int gpu1 = line_of(" 1  "); // its index, right-aligned in four columns
  REQUIRE(gpu1 > 0);
  click(gpu1);
  bool filtered = tmux.wait_for("g GPU:1");
  INFO("clicked line " << gpu1 << ":\n" << tmux.screen());
  CHECK(filtered);
  CHECK(tmux.wait_for(other_row));
  click(gpu1);
  CHECK(tmux.wait_for("g GPU:all"));
  tmux.keys("q");
  CHECK(tmux.wait_for("top-exit=0 stdin-blocking=yes"));
}

TEST_CASE("top's tree view shows two GPU processes under the shell that started both") {
  if (!have_tmux())
    return;
  test::Background launcher("exec sh -c 'sleep 300 & sleep 300 & wait'");
  std::vector<nvsmi::Descendant> children;
  REQUIRE(test::wait_until([&] {
    children = nvsmi::process_descendants(launcher.pid());
    return children.size() == 2;
  }));
  std::string folder = test::temporary_folder();
  test::write_file(folder + "/apps", gpu0 + ", " + std::to_string(children[0].pid) +
                                         ", 4096 MiB, sleep\n" + gpu1 + ", " +
                                         std::to_string(children[1].pid) + ", 2048 MiB, sleep\n");
  test::Tmux tmux(100, 30);
  tmux.run(top_command("--interval 0.5 --nvidia-smi " + fake,
                       "FAKE_NVSMI_APPS=" + quote(folder + "/apps") + " "));
  REQUIRE(tmux.wait_for([](const std::string &s) { return process_rows(s).size() == 2; }));
  tmux.keys("t");
  const std::string parent = " " + std::to_string(launcher.pid()) + " ";
  CHECK(tmux.wait_for([&](const std::string &s) {
    std::vector<std::string> rows = process_rows(s);
    return rows.size() == 3 && rows[0].find(parent) != std::string::npos &&
           rows[0].find("sh") != std::string::npos &&
           rows[1].find("\u2514 sleep 300") != std::string::npos &&
           rows[2].find("\u2514 sleep 300") != std::string::npos;
  }));
  test::keep_artifact("top-tree.txt", tmux.screen());
  tmux.keys("t");
  CHECK(tmux.wait_for([](const std::string &s) { return process_rows(s).size() == 2; }));
  tmux.keys("q");
  CHECK(tmux.wait_for("top-exit=0 stdin-blocking=yes"));
}

TEST_CASE("top run by another user: the kernel refuses the signal, the message says whose it is") {
  if (!have_tmux())
    return;
  if (::geteuid() != 0) {
    WARN("not root: the test that runs top as nobody is skipped");
    return;
  }
  test::Background sleeper("exec sleep 300");
  const std::string pid = std::to_string(sleeper.pid());
  test::Tmux tmux(100, 30);
  tmux.run(top_command("--interval 0.5 --nvidia-smi " + fake,
                       "FAKE_NVSMI_APPS=" + quote(apps_file(sleeper.pid())) +
                           " setpriv --reuid=nobody --regid=nogroup --clear-groups env "));
  REQUIRE(tmux.wait_for(" " + pid + " root"));
  tmux.key("Down");
  tmux.keys("K");
  REQUIRE(tmux.wait_for("send SIGKILL to pid " + pid));
  tmux.keys("y");
  CHECK(tmux.wait_for("not yours: pid " + pid + " belongs to root"));
  test::keep_artifact("top-signal-refused.txt", tmux.screen());
  CHECK(::kill(sleeper.pid(), 0) == 0);
  CHECK_FALSE(sleeper.exit_code());
  tmux.keys("q");
  CHECK(tmux.wait_for("top-exit=0"));
}

TEST_CASE("top refuses to start without a terminal, with one line and the usage exit code") {
  test::Run run = run_shell(AGENT_BIN " top --fixture " + quote(states_fixture) + " </dev/null");
  CHECK(run.exit_code == 2);
  CHECK(run.err.find("top needs a terminal") != std::string::npos);
  CHECK(std::count(run.err.begin(), run.err.end(), '\n') == 1);
  CHECK(run.out.empty());

  if (!have_tmux())
    return;
  test::Tmux tmux(80, 24);
  tmux.run(top_command("--fixture " + quote(states_fixture), "TERM=no-such-terminal "));
  CHECK(tmux.wait_for("top-exit=2"));
  CHECK(tmux.shows("TERM=no-such-terminal"));
  CHECK(tmux.shows("terminfo"));
}

// Issue 39, item 1: the first frame said "8 GPUs: 4 in use · 4 idle", and "4 free" a second later:
// its sample had no process lists yet.
TEST_CASE("top's first frame already says which GPUs are free") {
  if (!have_tmux())
    return;
  std::string folder = test::temporary_folder();
  // The stand-in's demo mode with this test program on GPUs 1 and 3: six GPUs hold no process.
  std::string me = std::to_string(::getpid());
  test::write_file(folder + "/processes",
                   "1 " + me + " 30000 python3\n3 " + me + " 2000 python3\n");
  test::Tmux tmux(120, 40);
  tmux.run(top_command(
      "--interval 1 --nvidia-smi " + fake,
      "FAKE_NVSMI_MODE=demo FAKE_NVSMI_DEMO_PROCESSES=" + quote(folder + "/processes") + " "));
  // Looked at as often as tmux answers: the first frame with the GPUs on it.
  std::string first;
  REQUIRE(tmux.wait_for([&](const std::string &screen) {
    first = screen;
    return screen.find("8 GPUs: ") != std::string::npos;
  }));
  test::keep_artifact("top-first-frame.txt", first);
  INFO(first);
  std::string summary;
  for (const std::string &line : lines_of(first))
    if (line.find("8 GPUs: ") != std::string::npos)
      summary = line;
  CHECK(summary.find("6 free") != std::string::npos);
  // "idle" alone is a GPU under the threshold whose holder is unknown ("idle but held" is known).
  std::size_t idle = summary.find(" idle");
  CHECK((idle == std::string::npos || summary.compare(idle, 14, " idle but held") == 0));
  tmux.keys("q");
  CHECK(tmux.wait_for("top-exit=0"));
}

} // namespace test_top
