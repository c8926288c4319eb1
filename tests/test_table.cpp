// The `table` format as a function: what each line says, its colours, and that hostile text and
// long names never make a line longer than the width.
#include "core/screen_text.hpp"
#include "formats/formats.hpp"
#include "nvsmi/utf8.hpp"
#include "nvsmi/xml_reader.hpp"
#include "snapshot_builders.hpp"
#include "support.hpp"

#include <catch2/catch.hpp>

#include <clocale>
#include <cwchar>
#include <locale.h>
#include <sstream>

namespace test_table {

using namespace nvsmi;

namespace {

// The users named on GPU `index`'s row and the line under it, if that is its holders'.
std::string holders_of(const std::vector<std::string> &lines, int index) {
  std::string prefix = "[" + std::to_string(index) + "] ";
  for (std::size_t i = 0; i < lines.size(); ++i)
    if (lines[i].rfind(prefix, 0) == 0)
      return lines[i] + (i + 1 < lines.size() && lines[i + 1].rfind("    ", 0) == 0 &&
                                 lines[i + 1].rfind("    MIG", 0) != 0
                             ? "\n" + lines[i + 1]
                             : "");
  return {};
}

// The states fixture's fleet, as fleet_summary_text says it.
const std::string states_summary = "8 GPUs: 3 free \u00b7 2 in use \u00b7 1 idle but held \u00b7 "
                                   "1 at power limit \u00b7 1 hot";

// The table's lines: a table is whole lines, each ended by '\n'.
std::vector<std::string> table_lines(const std::string &text) {
  REQUIRE(!text.empty());
  REQUIRE(text.back() == '\n');
  return test::lines_of(text);
}

// What a terminal under a UTF-8 locale gives `text` (printable UTF-8): glibc's wcswidth, asked
// here on its own so that the table's measure is held to the terminal's and not to itself.
std::size_t terminal_columns(const std::string &text) {
  locale_t utf8 = ::newlocale(LC_CTYPE_MASK, "C.UTF-8", static_cast<locale_t>(0));
  REQUIRE(utf8 != static_cast<locale_t>(0));
  locale_t previous = ::uselocale(utf8);
  std::wstring wide(text.size() + 1, L'\0');
  std::size_t length = std::mbstowcs(wide.data(), text.c_str(), wide.size());
  int columns = length == static_cast<std::size_t>(-1) ? -1 : ::wcswidth(wide.c_str(), length);
  ::uselocale(previous);
  ::freelocale(utf8);
  REQUIRE(columns >= 0);
  return static_cast<std::size_t>(columns);
}

bool has(const std::string &text, const std::string &part) {
  return text.find(part) != std::string::npos;
}

// Every line fits `width`, is valid UTF-8 and holds no control character (but the colour escapes
// when `colour`).
void check_screen_safe(const std::string &table, std::size_t width, bool colour) {
  for (const std::string &line : table_lines(table)) {
    INFO(line);
    CHECK(is_valid_utf8(line));
    std::string visible;
    for (std::size_t i = 0; i < line.size(); ++i) {
      if (colour && line[i] == '\x1b') {
        std::size_t end = line.find('m', i);
        REQUIRE(end != std::string::npos);
        i = end;
        continue;
      }
      CHECK(static_cast<unsigned char>(line[i]) >= 0x20);
      CHECK(line[i] != 0x7f);
      visible += line[i];
    }
    CHECK(terminal_columns(visible) <= width);
  }
}

} // namespace

TEST_CASE("table: a header, then one line per GPU with its readings and state word", "[table]") {
  std::string table = format_table(test::xml_fixture("xml/h100-8gpu-states-v12.xml"));
  std::vector<std::string> all = table_lines(table);
  REQUIRE(all.size() == 11);
  // GPU 3's holders do not fit beside its state at 80 columns: the line under its row.
  CHECK(all[6] == "    ?:torchrun(40990MiB)  ?:python3(40000MiB)");
  std::vector<std::string> lines = all;
  lines.erase(lines.begin() + 6);
  CHECK(lines[0] == states_summary);
  // A recording has no host: it says so, with no host readings (never zeros).
  CHECK(lines[1] == "recording  2024-03-12 14:03:27  driver 550.54.15  CUDA 12.4");
  const char *states[] = {"free", "in use",         "hot",    "idle but held",
                          "free", "at power limit", "in use", "free"};
  for (int gpu = 0; gpu < 8; ++gpu) {
    const std::string &line = lines[static_cast<std::size_t>(gpu) + 2];
    INFO(line);
    CHECK_THAT(line, Catch::StartsWith("[" + std::to_string(gpu) + "] "));
    CHECK_THAT(line, Catch::StartsWith("[" + std::to_string(gpu) + "] H100 80GB  ")); // shortened
    CHECK(has(line, std::string("  ") + states[gpu]));
    CHECK(has(line, "/81559MiB"));
    CHECK(has(line, "/700W"));
  }
  CHECK(has(lines[4], "89\u00b0C 95%  40960/81559MiB  148/700W  hot  89\u00b0C \u2265 85\u00b0C  "
                      "?:python3"));
  CHECK(has(lines[5], "idle but held"));
  CHECK(has(lines[5], "81000/81559MiB"));
  CHECK(has(lines[7], "698/700W  at power limit  99.6% \u2265 95%"));
  check_screen_safe(table, 80, false);
}

TEST_CASE("table: unknown readings are -, never 0", "[table]") {
  std::vector<std::string> lines =
      table_lines(format_table(test::xml_fixture("xml/rtx4090-all-unknown-v13.xml")));
  REQUIRE(lines.size() == 3);
  CHECK(lines[0] == "1 GPU: 1 lost");
  INFO(lines[2]);
  // Its readings include [GPU is lost]: nvidia-smi says the GPU is gone.
  CHECK_THAT(lines[2], Catch::StartsWith("[0] NVIDIA GeForce RTX 4090  - -  -  -  lost"));
  CHECK_FALSE(has(lines[2], "0%"));
  CHECK_FALSE(has(lines[2], "0\u00b0C"));
  CHECK_FALSE(has(lines[2], "MiB"));
  CHECK_FALSE(has(lines[2], "W"));
}

TEST_CASE("table: MIG instances under their GPU, each with its own processes", "[table]") {
  std::vector<std::string> lines =
      table_lines(format_table(test::xml_fixture("xml/a100-mig-v12.xml")));
  REQUIRE(lines.size() == 5);
  CHECK_THAT(lines[2], Catch::StartsWith("[0] NVIDIA A100-SXM4-80GB"));
  CHECK(has(lines[2], "4033/81920MiB"));
  CHECK_FALSE(has(lines[2], "python")); // shown under its instance instead
  // Each with its state (mig_state); without -L (a recording) no profile, and no room kept for one.
  CHECK(lines[3] == "    MIG 0  GI 1 CI 0  13/40192MiB    free");
  CHECK(lines[4] == "    MIG 1  GI 2 CI 0  4020/19968MiB  in use  ?:python(4000MiB)");
}

TEST_CASE("table: colours by threshold only when asked", "[table]") {
  Snapshot snapshot = test::xml_fixture("xml/h100-8gpu-states-v12.xml");
  std::string plain = format_table(snapshot, {false, 80});
  CHECK_FALSE(has(plain, "\x1b"));
  std::string coloured = format_table(snapshot, {true, 80});
  std::vector<std::string> lines = table_lines(coloured);
  CHECK(has(lines[4], "\x1b[31m89\u00b0C\x1b[0m")); // hot: red
  CHECK(has(lines[4], "\x1b[31mhot\x1b[0m  \x1b[31m89\u00b0C \u2265 85\u00b0C\x1b[0m"));
  CHECK(has(lines[5], "\x1b[31m81000/81559MiB\x1b[0m")); // 99 % of memory: red
  CHECK(has(lines[5], "\x1b[33midle but held\x1b[0m"));  // held, not used: yellow
  CHECK(has(lines[8], "\x1b[31m698/700W\x1b[0m"));       // at its power limit: red
  CHECK(has(lines[8], "\x1b[31mat power limit\x1b[0m"));
  CHECK(has(lines[9], "\x1b[36m99%\x1b[0m")); // busy: cyan, as `in use` (green is `free`)
  CHECK(has(lines[10], "\x1b[2m0%\x1b[0m"));  // idle: dim
  CHECK(has(lines[2], "30\u00b0C"));          // cool: no colour
  CHECK_FALSE(has(lines[2], "\x1b[31m"));
  check_screen_safe(coloured, 80, true);
}

TEST_CASE("table: who runs each process, as user:name(MiB), biggest first", "[table]") {
  Snapshot snapshot = test::xml_fixture("xml/h100-8gpu-states-v12.xml");
  Gpu &gpu = snapshot.gpus[0];
  gpu.processes = std::vector<Process>{
      test::observed_process(11, "alice", 100, "/opt/conda/bin/python3 train.py --epochs 90"),
      test::observed_process(12, "bob", 2000, "torchrun --nproc 8 x.py")};
  Process by_uid = test::observed_process(13, "carol", 50);
  by_uid.user.reset();
  by_uid.uid = 1234;
  by_uid.command.reset();
  by_uid.name = "/usr/bin/ollama";
  Process unseen; // another machine's, or gone: nvidia-smi's name alone, no size
  unseen.pid = 14;
  unseen.name = "python3";
  gpu.processes->push_back(by_uid);
  gpu.processes->push_back(unseen);
  snapshot.host = test::observed_host();
  std::vector<std::string> lines = table_lines(format_table(snapshot, {false, 200}));
  CHECK(lines[1] ==
        "gpu07  2024-03-12 14:03:27  driver 550.54.15  CUDA 12.4  CPU 12%  mem 120.6/502.9 GiB  "
        "load 3.25");
  // Each by the script or program launched (the command line's, else nvidia-smi's name).
  CHECK(has(lines[2], "idle but held  bob:x.py(2000MiB)  alice:train.py(100MiB)  "
                      "1234:ollama(50MiB)  ?:python3(-)"));
  // At 80 columns the holders are still all named: the details go first, the names stay.
  std::vector<std::string> narrow = table_lines(format_table(snapshot, {false, 80}));
  std::string row = holders_of(narrow, 0);
  INFO(row);
  // Not beside the readings: on a line of their own under them, with room for their programs.
  CHECK_THAT(row, Catch::EndsWith("idle but held\n    bob:x.py(2000MiB)  alice:train.py(100MiB)  "
                                  "1234:ollama(50MiB)  ?:python3(-)"));
  check_screen_safe(format_table(snapshot, {false, 80}), 80, false);
}

TEST_CASE("table: hostile names and commands never break the screen", "[table]") {
  Snapshot snapshot = test::xml_fixture("xml/h100-8gpu-states-v12.xml");
  std::string long_command = "/usr/bin/" + std::string(280, 'x') + "\x1b[2J\x07\xff\xfe" +
                             "\xe6\xbc\xa2\xe5\xad\x97 --flag";
  snapshot.gpus[1].name = std::string(60, 'N');
  snapshot.gpus[2].name = "GPU \x1b]0;owned\x07 \xe2\x80\xae" + std::string(40, 'R');
  Process hostile = test::observed_process(7,
                                           "m\xe2\x80\xae"
                                           "allory\x1b[31m",
                                           10, long_command);
  Process wide = test::observed_process(8, "\xe7\x94\xb0\xe4\xb8\xad", 20,
                                        std::string(30, '\xe5') + " x"); // broken bytes
  snapshot.gpus[1].processes = std::vector<Process>{hostile, wide, hostile, hostile};
  snapshot.host = test::observed_host();
  snapshot.host->hostname = std::string(70, 'h') + "\x1b[H";
  for (std::size_t width : {40, 60, 79, 80, 81, 100, 132, 300}) {
    INFO("width " << width);
    check_screen_safe(format_table(snapshot, {false, width}), width, false);
    check_screen_safe(format_table(snapshot, {true, width}), width, true);
  }
  std::vector<std::string> lines = table_lines(format_table(snapshot, {false, 300}));
  CHECK_FALSE(has(lines[3], "\x1b"));
  CHECK(has(lines[3], "mallory"));
  CHECK_FALSE(has(lines[3], "\xe2\x80\xae")); // the right-to-left override is gone
}

// The table once had its own hand table of widths and its own filter, and `top` glibc's wcwidth:
// an emoji outside the hand table's blocks (U+26A1, U+231A) took one column in the table and two
// on screen, a combining accent one in the table and none on screen, and a tab was dropped in the
// table ("ab") but a space in `top` ("a b").
TEST_CASE("table: text is measured as the terminal shows it and filtered as top filters it",
          "[table]") {
  Snapshot snapshot = test::xml_fixture("xml/h100-8gpu-states-v12.xml");
  snapshot.gpus[0].name = std::string("GPU ") + std::string(20, 'N');
  for (int i = 0; i < 12; ++i)
    *snapshot.gpus[0].name += "\u26a1\u231a";
  snapshot.gpus[1].name = "GPU\tcafe\u0301";
  snapshot.gpus[1].processes = std::vector<Process>{
      test::observed_process(7, "eve\tadmin", 10, "/usr/bin/x\u26a1\u26a1\u26a1 --flag")};
  for (std::size_t width : {40, 60, 79, 80, 100}) {
    INFO("width " << width);
    for (const std::string &line : table_lines(format_table(snapshot, {false, width}))) {
      INFO(line);
      CHECK(terminal_columns(line) <= width);
    }
  }
  std::vector<std::string> lines = table_lines(format_table(snapshot, {false, 300}));
  CHECK(has(lines[3], "GPU cafe\u0301"));
  CHECK(has(lines[3], "eve admin:x\u26a1\u26a1\u26a1(10MiB)"));
  CHECK(text_columns("\u26a1\u231a") == 4);
  CHECK(text_columns("cafe\u0301") == 4);
  CHECK(printable_text("a\tb") == "a b");
}

TEST_CASE("table: columns of text are counted in characters, cut between them", "[table]") {
  CHECK(text_columns("abc") == 3);
  CHECK(text_columns("\u00b0C") == 2);
  CHECK(text_columns("\u6f22\u5b57") == 4); // wide
  CHECK(printable_text("a\x1b[31mb\tc\xff") == "a[31mb c\ufffd");
  CHECK(cut_to_columns("abcdef", 4) == "abc\u2026");
  CHECK(cut_to_columns("abcdef", 6) == "abcdef");
  // A wide character that does not fit whole is left out, never cut in half.
  CHECK(cut_to_columns("a\u6f22\u5b57", 4) == "a\u6f22\u2026");
  CHECK(cut_to_columns("a\u6f22\u5b57", 3) == "a\u2026");
  CHECK(cut_to_columns("\u00e9\u00e9\u00e9", 2) == "\u00e9\u2026");
}

TEST_CASE("table is a format by name", "[table]") {
  CHECK(format_from_name("table") == Format::table);
  Snapshot snapshot = test::xml_fixture("xml/h100-8gpu-states-v12.xml");
  CHECK(format_snapshot(snapshot, Format::table, {true, 90}) == format_table(snapshot, {true, 90}));
}

TEST_CASE("table: the fleet's summary first, broken between its states on a narrow screen",
          "[table]") {
  Snapshot snapshot = test::xml_fixture("xml/h100-8gpu-states-v12.xml");
  CHECK(table_lines(format_table(snapshot, {false, 80}))[0] == states_summary);
  std::vector<std::string> narrow = table_lines(format_table(snapshot, {false, 40}));
  INFO(format_table(snapshot, {false, 40}));
  // Every state's count is still there, no line wider than the screen, none cut.
  CHECK(narrow[0] == "8 GPUs: 3 free \u00b7 2 in use");
  CHECK(narrow[1] == "  1 idle but held \u00b7 1 at power limit");
  CHECK(narrow[2] == "  1 hot");
  CHECK(narrow[3].rfind("recording", 0) == 0);
  check_screen_safe(format_table(snapshot, {false, 40}), 40, false);
  // Who holds the idle GPUs is outside text: made printable.
  snapshot.gpus[3].processes = std::vector<Process>{
      test::observed_process(5, "eve\x1b[2J\xe2\x80\xae", 10, "/usr/bin/python3")};
  std::string hostile = table_lines(format_table(snapshot, {false, 120}))[0];
  CHECK(has(hostile, "1 idle but held (eve[2J)"));
}

namespace {

// Five GPUs held by three users, two of them with several processes each; the three others free.
Snapshot shared_machine() {
  Snapshot snapshot = test::xml_fixture("xml/h100-8gpu-states-v12.xml");
  snapshot.host = test::observed_host();
  auto process = [](std::int64_t pid, const std::string &user, std::int64_t mib) {
    return test::observed_process(pid, user, mib, "/opt/conda/bin/python3 train.py --epochs 90");
  };
  for (Gpu &gpu : snapshot.gpus)
    gpu.processes = std::vector<Process>{};
  snapshot.gpus[1].processes = {{process(11, "alice", 30000), process(12, "alice", 20000)}};
  snapshot.gpus[2].processes = {
      {process(13, "bob", 40000), process(14, "carol", 100), process(15, "alice", 50)}};
  snapshot.gpus[3].processes = {{process(16, "carol", 81000)}};
  snapshot.gpus[5].processes = {
      {process(17, "bob", 10000), process(18, "bob", 10000), process(19, "bob", 480)}};
  snapshot.gpus[6].processes = {{process(20, "alice", 65000), process(21, "carol", 500)}};
  return snapshot;
}

} // namespace

TEST_CASE("table: every holder's program is named at any width; details then users give way",
          "[table]") {
  Snapshot snapshot = shared_machine();
  const std::vector<std::vector<std::string>> users = {
      {}, {"alice"}, {"bob", "carol", "alice"}, {"carol"}, {}, {"bob"}, {"alice", "carol"}, {}};
  for (std::size_t width : {40, 60, 80, 100, 120, 200}) {
    std::string table = format_table(snapshot, {false, width});
    INFO("width " << width << "\n" << table);
    check_screen_safe(table, width, false);
    std::vector<std::string> lines = table_lines(table);
    for (int gpu = 0; gpu < 8; ++gpu) {
      std::string held = holders_of(lines, gpu);
      INFO(held);
      const std::vector<std::string> &holders = users[static_cast<std::size_t>(gpu)];
      if (!holders.empty())
        CHECK(has(held, "train.py")); // `python3 train.py` by its script, whole
      // From 80 columns every user too: the line under the row holds them where the row does not.
      if (width >= 80)
        for (const std::string &user : holders)
          CHECK(has(held, user + ":train.py"));
      CHECK_FALSE(has(held, " more"));
    }
  }
  // Wide: each process in full, biggest first.
  std::string wide = holders_of(table_lines(format_table(snapshot, {false, 200})), 5);
  CHECK(has(wide, "bob:train.py(10000MiB)  bob:train.py(10000MiB)  bob:train.py(480MiB)"));
  // 80 columns: a pipe's width. A user's processes of one program as one, `user:name×N`.
  std::vector<std::string> at80 = table_lines(format_table(snapshot, {false, 80}));
  CHECK_THAT(holders_of(at80, 1), Catch::EndsWith("in use  alice:train.py\u00d72"));
  CHECK_THAT(holders_of(at80, 2), Catch::EndsWith("hot  89\u00b0C \u2265 85\u00b0C\n    "
                                                  "bob:train.py(40000MiB)  "
                                                  "carol:train.py(100MiB)  alice:train.py(50MiB)"));
  // 40 columns: the readings fill the row; the state, its reason and the holders take the line
  // under it.
  std::vector<std::string> at40 = table_lines(format_table(snapshot, {false, 40}));
  CHECK_THAT(holders_of(at40, 2),
             Catch::EndsWith("\n    hot  89\u00b0C \u2265 85\u00b0C  train.py\u00d73"));
  const char *states[] = {"free", "in use",         "hot",    "idle but held",
                          "free", "at power limit", "in use", "free"};
  for (int gpu = 0; gpu < 8; ++gpu)
    CHECK(has(holders_of(at40, gpu), states[gpu]));
}

TEST_CASE("table: only programs past the screen's width are counted, as +N more", "[table]") {
  Snapshot snapshot = shared_machine();
  std::vector<Process> many;
  for (int i = 0; i < 12; ++i)
    many.push_back(test::observed_process(100 + i, "user" + std::to_string(i), 10,
                                          "python3 job" + std::to_string(i) + "-long-name.py"));
  snapshot.gpus[0].processes = many;
  std::vector<std::string> lines = table_lines(format_table(snapshot, {false, 80}));
  std::string held = holders_of(lines, 0);
  INFO(held);
  // Each name keeps its first 8 columns; the users gave way.
  CHECK(has(held, "\n    job0-lon\u2026  job1-lon\u2026  "));
  CHECK_FALSE(has(held, "user0"));
  CHECK_THAT(held, Catch::EndsWith("  +6 more"));
  check_screen_safe(format_table(snapshot, {false, 80}), 80, false);
}

} // namespace test_table
