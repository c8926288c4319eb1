// `snapshot`'s table through the built agent: the default on a real terminal (a pseudo-terminal
// from util-linux `script`), the legacy document unchanged on a pipe and with --output, colour
// and NO_COLOR, the terminal's width, and real processes' users through the stand-in.
#include "process_support.hpp"
#include "support.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <memory>
#include <pwd.h>
#include <sstream>
#include <unistd.h>

#include "nvsmi/utf8.hpp"

namespace test_table_cli {

using test::quote;
using test::Run;
using test::run_agent;
using test::run_shell;

namespace {

const std::string states = quote(test::fixture_path("xml/h100-8gpu-states-v12.xml"));
const std::string fake = quote(SCRIPTS_DIR "/fake-nvidia-smi");

// `command` (a shell command line) run with its stdout on a pseudo-terminal of `columns` (0: as
// `script` makes it, no size), the terminal's CR LF made LF again.
Run on_terminal(const std::string &command, int columns = 0) {
  std::string inner = (columns > 0 ? "stty cols " + std::to_string(columns) + "; " : "") + command;
  Run run = run_shell("script -qec " + quote(inner) + " /dev/null </dev/null");
  std::string out;
  for (char c : run.out)
    if (c != '\r')
      out += c;
  run.out = out;
  return run;
}

bool terminal_available() {
  if (test::installed("script"))
    return true;
  WARN("no `script` (util-linux) here: the terminal tests are skipped");
  return false;
}

using test::lines_of;

// Columns on screen: escapes take none, every other code point one (the tables here have no
// wide characters).
std::size_t columns(const std::string &line) {
  std::size_t count = 0;
  for (std::size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '\x1b') {
      i = line.find('m', i);
      continue;
    }
    if ((static_cast<unsigned char>(line[i]) & 0xC0) != 0x80)
      ++count;
  }
  return count;
}

// How many lines of a table are a GPU's row ("[N] ...").
std::size_t gpu_rows(const std::string &table) {
  std::size_t rows = 0;
  for (const std::string &line : lines_of(table))
    rows += line.rfind("[", 0) == 0 ? 1 : 0;
  return rows;
}

void check_width(const std::string &table, std::size_t width) {
  for (const std::string &line : lines_of(table)) {
    INFO(line);
    CHECK(columns(line) <= width);
  }
}

} // namespace

TEST_CASE("snapshot on a terminal prints the table, coloured unless NO_COLOR", "[table]") {
  if (!terminal_available())
    return;
  Run run = on_terminal(AGENT_BIN " snapshot --fixture " + states);
  INFO(run.out << run.err);
  REQUIRE(run.exit_code == 0);
  std::vector<std::string> lines = lines_of(run.out);
  REQUIRE(lines.size() == 11); // GPU 3's holders on the line under its row
  CHECK_THAT(lines[0], Catch::Contains("8 GPUs: 3 free"));
  CHECK_THAT(lines[1], Catch::Contains("recording"));
  CHECK_THAT(lines[4], Catch::Contains("\x1b[31mhot\x1b[0m"));
  CHECK_THAT(lines[8], Catch::Contains("at power limit"));
  check_width(run.out, 80); // `script` gives its terminal no size: 80

  Run no_colour = on_terminal("NO_COLOR=1 " AGENT_BIN " snapshot --fixture " + states);
  CHECK(no_colour.out.find('\x1b') == std::string::npos);
  CHECK(lines_of(no_colour.out).size() == 11);
  // NO_COLOR set but empty asks for nothing (https://no-color.org).
  Run empty = on_terminal("NO_COLOR= " AGENT_BIN " snapshot --fixture " + states);
  CHECK(empty.out.find("\x1b[31m") != std::string::npos);
}

TEST_CASE("snapshot's table takes the terminal's width, at least 40 columns", "[table]") {
  if (!terminal_available())
    return;
  Run wide = on_terminal(AGENT_BIN " snapshot --fixture " + states, 160);
  REQUIRE(wide.exit_code == 0);
  // Room for the whole name and the processes' entries.
  CHECK_THAT(wide.out, Catch::Contains("NVIDIA H100 80GB HBM3"));
  CHECK_THAT(wide.out, Catch::Contains("?:torchrun(40990MiB)  ?:python3(40000MiB)"));
  check_width(wide.out, 160);
  Run narrow = on_terminal(AGENT_BIN " snapshot --fixture " + states, 50);
  REQUIRE(gpu_rows(narrow.out) == 8);
  check_width(narrow.out, 50);
  Run tiny = on_terminal(AGENT_BIN " snapshot --fixture " + states, 20);
  REQUIRE(gpu_rows(tiny.out) == 8);
  check_width(tiny.out, 40);
}

TEST_CASE("snapshot on a pipe, to a file or with --output keeps the legacy document", "[table]") {
  Run legacy = run_agent("snapshot --format legacy --fixture " + states);
  REQUIRE(legacy.exit_code == 0);
  CHECK_THAT(legacy.out, Catch::StartsWith("{\"temp\":"));
  Run piped = run_agent("snapshot --fixture " + states);
  CHECK(piped.out == legacy.out);
  if (!terminal_available())
    return;
  std::string file = test::temporary_folder() + "/gpus.json";
  Run to_output =
      on_terminal(AGENT_BIN " snapshot --output " + quote(file) + " --fixture " + states);
  REQUIRE(to_output.exit_code == 0);
  CHECK(to_output.out.empty());
  CHECK(test::read_file(file) == legacy.out);
  std::string redirected = test::temporary_folder() + "/gpus.json";
  on_terminal(AGENT_BIN " snapshot --fixture " + states + " >" + quote(redirected));
  CHECK(test::read_file(redirected) == legacy.out);
}

TEST_CASE("snapshot --format table on a pipe: the table, no colour, 80 columns", "[table]") {
  Run run = run_agent("snapshot --format table --fixture " + states);
  REQUIRE(run.exit_code == 0);
  CHECK(run.out.find('\x1b') == std::string::npos);
  std::vector<std::string> lines = lines_of(run.out);
  REQUIRE(lines.size() == 11);
  CHECK(lines[1] == "recording  2024-03-12 14:03:27  driver 550.54.15  CUDA 12.4");
  check_width(run.out, 80);
  Run unknown = run_agent("snapshot --format table --fixture " +
                          quote(test::fixture_path("xml/rtx4090-all-unknown-v13.xml")));
  CHECK_THAT(unknown.out, Catch::Contains("[0] NVIDIA GeForce RTX 4090  - -  -  -  lost"));
  Run mig = run_agent("snapshot --format table --fixture " +
                      quote(test::fixture_path("xml/a100-mig-v12.xml")));
  CHECK_THAT(mig.out,
             Catch::Contains("\n    MIG 1  GI 2 CI 0  4020/19968MiB  in use  ?:python(4000MiB)\n"));
  // Into --output from a terminal: the same 80 columns without colour, not the terminal's.
  if (!terminal_available())
    return;
  std::string file = test::temporary_folder() + "/table.txt";
  on_terminal(AGENT_BIN " snapshot --format table --output " + quote(file) + " --fixture " + states,
              132);
  CHECK(test::read_file(file) == run.out);
}

TEST_CASE("snapshot --help tells when the table is the default", "[table]") {
  Run help = run_agent("snapshot --help");
  CHECK(help.exit_code == 0);
  CHECK_THAT(help.out, Catch::Contains("table") && Catch::Contains("NO_COLOR") &&
                           Catch::Contains("Default: table"));
}

TEST_CASE("watch --format table is refused, pointing to top", "[table]") {
  Run run = run_agent("watch --format table --fixture " + states);
  CHECK(run.exit_code == 2);
  CHECK(run.out.empty());
  CHECK_THAT(run.err, Catch::Contains("nvsmi-agent top"));
}

TEST_CASE("snapshot's table names who runs each process and its program", "[table]") {
  if (!terminal_available())
    return;
  test::Background sleeper("exec sleep 300");
  // One process each (exec all the way), so that killing it at the end leaves nothing behind.
  test::Background other("exec setpriv --reuid=nobody --regid=nogroup --clear-groups "
                         "tail -f /dev/null");
  std::string folder = test::temporary_folder();
  // nvidia-smi's name for the second is not its program: the command line wins.
  test::write_file(folder + "/apps", "GPU-00000000-0000-0000-0000-000000000000, " +
                                         std::to_string(sleeper.pid()) +
                                         ", 1024 MiB, /usr/bin/sleep\n" +
                                         "GPU-00000000-0000-0000-0000-000000000001, " +
                                         std::to_string(other.pid()) + ", 2048 MiB, python3\n");
  // The command line is tail's once setpriv has run it.
  REQUIRE(test::wait_until([&] {
    return test::read_file("/proc/" + std::to_string(other.pid()) + "/cmdline").rfind("tail", 0) ==
           0;
  }));
  // 120 columns: room for the entries beside the readings (80 is tested on the formatter).
  Run run = on_terminal("NO_COLOR=1 FAKE_NVSMI_APPS=" + quote(folder + "/apps") + " " AGENT_BIN +
                            " snapshot --source csv --nvidia-smi " + fake,
                        120);
  INFO(run.out << run.err);
  REQUIRE(run.exit_code == 0);
  std::vector<std::string> lines = lines_of(run.out);
  REQUIRE(lines.size() == 10);
  const passwd *me = ::getpwuid(::getuid());
  REQUIRE(me);
  CHECK_THAT(lines[2], Catch::Contains("  " + std::string(me->pw_name) + ":sleep(1024MiB)"));
  CHECK_THAT(lines[3], Catch::Contains("  nobody:tail(2048MiB)"));
  // A live sample: the host's name and memory, not `recording`.
  char hostname[256] = {};
  ::gethostname(hostname, sizeof hostname - 1);
  CHECK_THAT(lines[1], Catch::StartsWith(std::string(hostname).substr(0, 20)) &&
                           Catch::Contains(" mem ") && Catch::Contains(" GiB"));
  CHECK_THAT(lines[1], !Catch::Contains("recording"));
  check_width(run.out, 120);
}

TEST_CASE("the README's table is what the agent prints", "[table]") {
  std::string readme = test::read_file(SCRIPTS_DIR "/../README.md");
  std::string start = "```\n8 GPUs: 3 free";
  std::size_t begin = readme.find(start);
  REQUIRE(begin != std::string::npos);
  begin += 4;
  std::string shown = readme.substr(begin, readme.find("```", begin) - begin);
  CHECK(run_agent("snapshot --format table --fixture " + states).out == shown);
}

TEST_CASE(
    "snapshot's table fits 80 columns with a 60-character GPU name and a hostile 300-character "
    "command",
    "[table]") {
  // A recording whose GPUs carry a 60-character name.
  std::string folder = test::temporary_folder();
  std::string xml = test::read_file(test::fixture_path("xml/h100-8gpu-states-v12.xml"));
  std::string long_name = "NVIDIA " + std::string(53, 'L');
  for (std::size_t at = xml.find("NVIDIA H100 80GB HBM3"); at != std::string::npos;
       at = xml.find("NVIDIA H100 80GB HBM3", at))
    xml.replace(at, 21, long_name);
  test::write_file(folder + "/long-name.xml", xml);
  Run recording =
      run_agent("snapshot --format table --fixture " + quote(folder + "/long-name.xml"));
  REQUIRE(recording.exit_code == 0);
  REQUIRE(lines_of(recording.out).size() == 11); // GPU 3's holders under its row
  check_width(recording.out, 80);
  CHECK_THAT(recording.out, Catch::Contains("[5] LLLLLLLLLLL\u2026"));

  // A real process whose command line (argv[0] first) is 300 characters of escapes, bytes that
  // are not UTF-8 and a right-to-left override.
  std::string argv0 = "/opt/\x1b[2J\x1b]0;owned\x07\xff\xe2\x80\xae" + std::string(300, 'y');
  test::write_file(folder + "/argv0", argv0);
  test::Background hostile("exec bash -c 'exec -a \"$(cat " + quote(folder + "/argv0") +
                           ")\" sleep 300'");
  REQUIRE(test::wait_until([&] {
    return test::read_file("/proc/" + std::to_string(hostile.pid()) + "/cmdline")
               .rfind("/opt/", 0) == 0;
  }));
  test::write_file(folder + "/apps", "GPU-00000000-0000-0000-0000-000000000000, " +
                                         std::to_string(hostile.pid()) + ", 1024 MiB, sleep\n");
  for (int columns : {80, 200}) {
    INFO("columns " << columns);
    Run live = on_terminal("FAKE_NVSMI_APPS=" + quote(folder + "/apps") + " " AGENT_BIN +
                               " snapshot --source csv --nvidia-smi " + fake,
                           columns);
    INFO(live.out << live.err);
    REQUIRE(live.exit_code == 0);
    REQUIRE(gpu_rows(live.out) == 8);
    check_width(live.out, static_cast<std::size_t>(columns));
    CHECK(nvsmi::is_valid_utf8(live.out));
    // Colour escapes only: no other control character, and none of the process's own.
    for (char c : live.out)
      CHECK((static_cast<unsigned char>(c) >= 0x20 || c == '\n' || c == '\x1b'));
    CHECK(live.out.find("\x1b[2J") == std::string::npos);
    CHECK(live.out.find("\x1b]") == std::string::npos);
    CHECK(live.out.find("\xe2\x80\xae") == std::string::npos);
  }
}

namespace {

// `table` kept as BUILD/artifacts/NAME, for people to look at.
} // namespace

TEST_CASE("snapshot's table: the fleet's summary and each state's reason at 80, 120 and 40 "
          "columns",
          "[table]") {
  Run piped = run_agent("snapshot --format table --fixture " + states);
  REQUIRE(piped.exit_code == 0);
  test::keep_artifact("table-states-80.txt", piped.out);
  std::vector<std::string> lines = lines_of(piped.out);
  CHECK(lines[0] == "8 GPUs: 3 free \u00b7 2 in use \u00b7 1 idle but held \u00b7 1 at power limit "
                    "\u00b7 1 hot");
  CHECK_THAT(lines[4], Catch::Contains("  hot  89\u00b0C \u2265 85\u00b0C  ?:python3"));
  check_width(piped.out, 80);
  if (!terminal_available())
    return;
  for (int width : {120, 40}) {
    Run run = on_terminal("NO_COLOR=1 " AGENT_BIN " snapshot --fixture " + states, width);
    INFO(run.out << run.err);
    REQUIRE(run.exit_code == 0);
    test::keep_artifact("table-states-" + std::to_string(width) + ".txt", run.out);
    check_width(run.out, static_cast<std::size_t>(width));
    CHECK(gpu_rows(run.out) == 8);
    // Every state's count, on a line or two of its own.
    for (const char *state : {"3 free", "2 in use", "1 idle but held", "1 at power limit", "1 hot"})
      CHECK_THAT(run.out.substr(0, run.out.find("recording")), Catch::Contains(state));
  }
  // At 40 the readings fill the row: the state and its reason go under it.
  Run narrow = on_terminal("NO_COLOR=1 " AGENT_BIN " snapshot --fixture " + states, 40);
  CHECK_THAT(narrow.out, Catch::Contains("\n    hot  89\u00b0C \u2265 85\u00b0C"));
  CHECK_THAT(narrow.out, Catch::Contains("\n    idle but held"));
  Run wide = on_terminal("NO_COLOR=1 " AGENT_BIN " snapshot --fixture " + states, 120);
  CHECK_THAT(wide.out, Catch::Contains("at power limit  99.6% \u2265 95%"));
}

TEST_CASE("snapshot's table names what holds every GPU and whose at 80, 120 and 40 columns",
          "[table]") {
  if (!terminal_available())
    return;
  // Three users: this one with two processes, nobody with two, daemon with one; five GPUs held.
  std::vector<std::unique_ptr<test::Background>> processes;
  auto start = [&](const std::string &user) {
    std::string as =
        user.empty() ? "" : "setpriv --reuid=" + user + " --regid=nogroup --clear-groups ";
    processes.push_back(std::make_unique<test::Background>("exec " + as + "sleep 300"));
    pid_t pid = processes.back()->pid();
    REQUIRE(test::wait_until([&] {
      return test::read_file("/proc/" + std::to_string(pid) + "/cmdline").rfind("sleep", 0) == 0;
    }));
    return std::to_string(pid);
  };
  std::string me_a = start(""), me_b = start(""), nobody_a = start("nobody"),
              nobody_b = start("nobody"), daemon = start("daemon");
  auto app = [](int gpu, const std::string &pid, int mib) {
    return "GPU-00000000-0000-0000-0000-00000000000" + std::to_string(gpu) + ", " + pid + ", " +
           std::to_string(mib) + " MiB, python3\n";
  };
  std::string folder = test::temporary_folder();
  test::write_file(folder + "/apps",
                   app(0, me_a, 30000) + app(0, me_b, 20000) + app(1, nobody_a, 40000) +
                       app(2, me_a, 1000) + app(2, nobody_a, 2000) + app(2, daemon, 3000) +
                       app(3, daemon, 50000) + app(4, nobody_a, 10000) + app(4, nobody_b, 10000));
  const passwd *me = ::getpwuid(::getuid());
  REQUIRE(me);
  const std::vector<std::vector<std::string>> holders = {
      {me->pw_name}, {"nobody"}, {"daemon", "nobody", me->pw_name}, {"daemon"}, {"nobody"}};
  for (int width : {80, 120, 40}) {
    Run run = on_terminal("NO_COLOR=1 FAKE_NVSMI_APPS=" + quote(folder + "/apps") + " " AGENT_BIN +
                              " snapshot --source csv --nvidia-smi " + fake,
                          width);
    INFO("width " << width << "\n" << run.out << run.err);
    REQUIRE(run.exit_code == 0);
    test::keep_artifact("table-" + std::to_string(width) + ".txt", run.out);
    check_width(run.out, static_cast<std::size_t>(width));
    CHECK(run.out.find(" more") == std::string::npos);
    std::vector<std::string> lines = lines_of(run.out);
    for (std::size_t gpu = 0; gpu < holders.size(); ++gpu) {
      std::string prefix = "[" + std::to_string(gpu) + "] ";
      auto row = std::find_if(lines.begin(), lines.end(),
                              [&](const std::string &line) { return line.rfind(prefix, 0) == 0; });
      REQUIRE(row != lines.end());
      // Its row, and the line under it where the holders did not fit beside the readings.
      std::string shown =
          *row +
          (row + 1 != lines.end() && (row + 1)->rfind("    ", 0) == 0 ? "\n" + *(row + 1) : "");
      INFO(shown);
      CHECK_THAT(shown, Catch::Contains("sleep")); // the program, at every width
      // The users too from 80 columns; at 40 they give way before the program's name does.
      if (width >= 80)
        for (const std::string &user : holders[gpu])
          CHECK_THAT(shown, Catch::Contains(user + ":sleep"));
    }
  }
}

namespace {

// GPU `index`'s row of `table`, and the line under it where that holds the rest of the row.
std::string row_of(const std::string &table, int index) {
  std::vector<std::string> lines = lines_of(table);
  std::string prefix = "[" + std::to_string(index) + "] ";
  for (std::size_t i = 0; i < lines.size(); ++i)
    if (lines[i].rfind(prefix, 0) == 0)
      return lines[i] + (i + 1 < lines.size() && lines[i + 1].rfind("    ", 0) == 0 &&
                                 lines[i + 1].rfind("    MIG", 0) != 0
                             ? "\n" + lines[i + 1]
                             : "");
  return {};
}

// `name` as the table must keep it at least: whole, or its first 8 columns then `…`.
std::string kept(const std::string &name) { return name.size() <= 8 ? name : name.substr(0, 8); }

} // namespace

TEST_CASE("snapshot's table at 80 columns keeps at least 8 columns of every process's name",
          "[table]") {
  // A recording: nvidia-smi's names (`/usr/bin/torchrun`, `vllm serve`) by their programs.
  Run fixture = run_agent("snapshot --format table --fixture " + states);
  INFO(fixture.out << fixture.err);
  REQUIRE(fixture.exit_code == 0);
  check_width(fixture.out, 80);
  CHECK_THAT(row_of(fixture.out, 2), Catch::Contains("python3"));
  CHECK_THAT(row_of(fixture.out, 3), Catch::Contains("torchrun") && Catch::Contains("python3"));
  CHECK_THAT(row_of(fixture.out, 6), Catch::Contains("vllm"));

  // The demo stand-in with its five jobs (as root: run as nobody, daemon and root).
  std::string agent_dir = AGENT_BIN;
  agent_dir.erase(agent_dir.rfind('/'));
  const std::vector<std::pair<int, std::vector<std::string>>> jobs = {
      {1, {"train.py"}}, {2, {"vllm"}}, {3, {"finetune.py", "eval.py"}}, {5, {"infer.py"}}};
  for (int width : {80, 160}) {
    Run demo =
        on_terminal("NO_COLOR=1 NVSMI_DEMO_SECONDS=120 NVSMI_DEMO_AGENT=" + quote(agent_dir) +
                        " " SCRIPTS_DIR "/demo nvsmi-agent snapshot",
                    width);
    INFO("width " << width << "\n" << demo.out << demo.err);
    REQUIRE(demo.exit_code == 0);
    test::keep_artifact("table-demo-" + std::to_string(width) + ".txt", demo.out);
    check_width(demo.out, static_cast<std::size_t>(width));
    for (const auto &[gpu, names] : jobs)
      for (const std::string &name : names)
        CHECK_THAT(row_of(demo.out, gpu), Catch::Contains(width == 80 ? kept(name) : name));
    if (width == 160 && ::getuid() == 0) { // room for each in full, with its user and memory
      CHECK_THAT(row_of(demo.out, 1), Catch::Contains("nobody:train.py(30000MiB)"));
      CHECK_THAT(row_of(demo.out, 2), Catch::Contains("daemon:vllm(20000MiB)"));
      CHECK_THAT(row_of(demo.out, 3), Catch::Contains("root:finetune.py(40000MiB)  "
                                                      "nobody:eval.py(2000MiB)"));
    }
  }
}

TEST_CASE("snapshot's table: the summary line is the bold thing; in use cyan and a full memory red",
          "[table]") {
  if (!terminal_available())
    return;
  Run run = on_terminal(AGENT_BIN " snapshot --fixture " + states);
  INFO(run.out << run.err);
  REQUIRE(run.exit_code == 0);
  std::vector<std::string> lines = lines_of(run.out);
  REQUIRE(lines.size() > 2);
  // The summary bold to its end, in one run; nothing after it bold, a GPU's name least of all.
  CHECK(lines[0] == "\x1b[1m8 GPUs: 3 free \u00b7 2 in use \u00b7 1 idle but held \u00b7 1 at "
                    "power limit \u00b7 1 hot\x1b[0m");
  for (std::size_t i = 1; i < lines.size(); ++i) {
    INFO(lines[i]);
    CHECK(lines[i].find("\x1b[1m") == std::string::npos);
  }
  CHECK_THAT(row_of(run.out, 0), Catch::StartsWith("[0] H100 80GB  "));
  // Each state in the palette of every screen (core/tone): in use cyan, as in top.
  CHECK_THAT(row_of(run.out, 1), Catch::Contains("\x1b[36min use\x1b[0m"));
  CHECK_THAT(row_of(run.out, 0), Catch::Contains("\x1b[32mfree\x1b[0m"));
  CHECK_THAT(row_of(run.out, 3), Catch::Contains("\x1b[33midle but held\x1b[0m"));
  CHECK_THAT(row_of(run.out, 2), Catch::Contains("\x1b[31mhot"));
  // GPU 3 holds 81000 of 81559 MiB (99.3 %): red.
  CHECK_THAT(row_of(run.out, 3), Catch::Contains("\x1b[31m81000/81559MiB\x1b[0m"));

  // At the threshold (thresholds.hpp's memory full, 95 %) red, as in top; just under it not,
  // though the JSON's two decimals round 77481 of 81559 MiB (94.9999 %) to 95.00.
  std::string xml = test::read_file(test::fixture_path("xml/h100-8gpu-states-v12.xml"));
  std::string folder = test::temporary_folder();
  for (const char *used : {"77481", "77482"}) {
    std::string changed = xml;
    changed.replace(changed.find("<used>81000 MiB</used>"), 22,
                    std::string("<used>") + used + " MiB</used>");
    test::write_file(folder + "/memory.xml", changed);
    Run edge = on_terminal(AGENT_BIN " snapshot --fixture " + quote(folder + "/memory.xml"));
    INFO(edge.out);
    bool red =
        row_of(edge.out, 3).find(std::string("\x1b[31m") + used + "/81559MiB") != std::string::npos;
    CHECK(red == (std::string(used) == "77482"));
    CHECK_THAT(row_of(edge.out, 3), Catch::Contains(std::string(used) + "/81559MiB"));
  }
}

} // namespace test_table_cli
