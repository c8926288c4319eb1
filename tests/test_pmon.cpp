#include "nvsmi/compute_apps.hpp"
#include "nvsmi/csv_reader.hpp"
#include "nvsmi/pmon.hpp"
#include "nvsmi/stream_readings.hpp"
#include "support.hpp"

#include <catch2/catch.hpp>

namespace test_pmon {

using namespace nvsmi;

namespace {

std::string fixture(const std::string &name) {
  return test::read_file(test::fixture_path("processes/" + name));
}

// pmon -c 1 on a 595 driver without -s: utilization only.
const char *header_595 =
    "# gpu         pid   type     sm    mem    enc    dec    jpg    ofa    command \n"
    "# Idx           #    C/G      %      %      %      %      %      %    name \n";

const char *header_old = "# gpu        pid  type    sm   mem   enc   dec   command\n"
                         "# Idx          #   C/G     %     %     %     %   name\n";

// Feeds every line, gathering the samples and the errors.
struct Fed {
  std::vector<std::vector<PmonRow>> samples;
  std::vector<std::string> errors, dropped;
};
Fed feed(PmonReader &reader, const std::string &text) {
  Fed fed;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos)
      end = text.size();
    PmonReader::Outcome outcome =
        reader.add_line(std::string_view(text).substr(start, end - start));
    if (outcome.sample)
      fed.samples.push_back(std::move(*outcome.sample));
    if (outcome.error)
      fed.errors.push_back(*outcome.error);
    if (outcome.dropped)
      fed.dropped.push_back(*outcome.dropped);
    start = end + 1;
  }
  return fed;
}

} // namespace

TEST_CASE("pmon -s um (595): columns by name, fb in MiB, ccpm ignored, - is nullopt") {
  std::vector<std::vector<PmonRow>> samples = read_pmon(fixture("pmon-um-8gpu.txt"));
  REQUIRE(samples.size() == 3);
  for (const std::vector<PmonRow> &sample : samples)
    CHECK(sample.size() == 9); // one row per process, one `-` row per idle GPU

  const std::vector<PmonRow> &first = samples[0];
  const PmonRow &xorg = first[0];
  CHECK(xorg.gpu_index == 0);
  CHECK(xorg.pid == 2210);
  CHECK(xorg.type == std::string("G"));
  CHECK_FALSE(xorg.sm_percent); // `-`: unknown, not 0
  CHECK_FALSE(xorg.memory_percent);
  CHECK(xorg.fb_mib == 4);
  CHECK(xorg.command == std::string("Xorg")); // trailing spaces trimmed

  const PmonRow &idle = first[1];
  CHECK(idle.gpu_index == 1);
  CHECK_FALSE(idle.pid);
  CHECK_FALSE(idle.type);
  CHECK_FALSE(idle.fb_mib);
  CHECK_FALSE(idle.command);

  const PmonRow &python = first[2];
  CHECK(python.gpu_index == 2);
  CHECK(python.pid == 4242);
  CHECK(python.type == std::string("C"));
  CHECK(python.sm_percent == 87);
  CHECK(python.memory_percent == 41);
  CHECK_FALSE(python.encoder_percent);
  CHECK_FALSE(python.decoder_percent);
  CHECK_FALSE(python.jpeg_percent);
  CHECK_FALSE(python.ofa_percent);
  CHECK(python.fb_mib == 40950);

  // Sample 2 reads 0 where pmon printed 0, and nullopt where it printed `-`.
  CHECK(samples[1][0].sm_percent == 0);
  CHECK_FALSE(samples[1][3].sm_percent);
  CHECK(samples[1][3].pid == 5001);
  // The header printed again before sample 3 changes nothing.
  CHECK(samples[2][2].sm_percent == 89);
  REQUIRE(samples[2].size() == 9);
  CHECK(samples[2][8].gpu_index == 7);
}

TEST_CASE("pmon: an older driver's columns (fb first, no jpg/ofa)") {
  PmonReader reader;
  Fed fed = feed(reader, fixture("pmon-um-old-driver.txt"));
  CHECK(fed.errors.empty());
  CHECK(reader.columns() ==
        std::vector<std::string>{"gpu", "pid", "type", "fb", "sm", "mem", "enc", "dec", "command"});
  REQUIRE(fed.samples.size() == 1);
  std::optional<std::vector<PmonRow>> last = reader.finish();
  REQUIRE(last);
  CHECK(last->size() == 3);
  const PmonRow &python = fed.samples[0][1];
  CHECK(python.pid == 27785);
  CHECK(python.fb_mib == 10773);
  CHECK(python.sm_percent == 97);
  CHECK(python.memory_percent == 38);
  CHECK_FALSE(python.jpeg_percent); // no such column: unknown
  CHECK(python.command == std::string("python"));
  CHECK((*last)[1].sm_percent == 96);
  CHECK_FALSE(reader.finish()); // finish forgets what it returned
}

TEST_CASE("pmon: the default 595 columns and the older ones without fb") {
  std::vector<std::vector<PmonRow>> now = read_pmon(
      std::string(header_595) +
      "    0      20037     C      2      0     24      -      -      -    ffmpeg         \n");
  REQUIRE(now.size() == 1);
  REQUIRE(now[0].size() == 1);
  CHECK(now[0][0].encoder_percent == 24);
  CHECK_FALSE(now[0][0].fb_mib); // not asked for with -s u

  std::vector<std::vector<PmonRow>> old = read_pmon(
      std::string(header_old) + "    0      27785     C    97    38     -     -   python\n");
  REQUIRE(old.size() == 1);
  CHECK(old[0][0].sm_percent == 97);
  CHECK(old[0][0].command == std::string("python"));
}

TEST_CASE("pmon: a command with spaces is the rest of the line; `-` command is nullopt") {
  std::vector<std::vector<PmonRow>> samples = read_pmon(
      std::string(header_595) +
      "    0       4680   C+G      -      -      -      -      -      -    NVIDIA Share.exe\n"
      "    0      20372   C+G      -      -      -      -      -      -    NZXT CAM.exe   \r\n"
      "    0      12444   C+G      -      -      -      -      -      -    TextInputHost.ex\n"
      "    0      12445     C      -      -      -      -      -      -    -              \n");
  REQUIRE(samples.size() == 1);
  REQUIRE(samples[0].size() == 4);
  CHECK(samples[0][0].command == std::string("NVIDIA Share.exe"));
  CHECK(samples[0][0].type == std::string("C+G"));
  CHECK(samples[0][1].command == std::string("NZXT CAM.exe"));
  CHECK(samples[0][2].command == std::string("TextInputHost.ex"));
  CHECK_FALSE(samples[0][3].command);
}

TEST_CASE("pmon: a sample completes when a (gpu, pid) pair repeats, the `-` row too") {
  PmonReader reader;
  const std::string rows =
      "    0          -     -      -      -      -      -      -      -    -\n"
      "    1       7001     C     10      5      -      -      -      -    a\n";
  Fed fed = feed(reader, std::string(header_595) + rows);
  CHECK(fed.samples.empty()); // nothing repeated yet: the sample may still grow
  // The same pid on another GPU is another pair.
  fed = feed(reader, "    0       7001     C     10      5      -      -      -      -    a\n");
  CHECK(fed.samples.empty());
  fed = feed(reader, rows);
  REQUIRE(fed.samples.size() == 1);
  CHECK(fed.samples[0].size() == 3);
  std::optional<std::vector<PmonRow>> rest = reader.finish();
  REQUIRE(rest);
  CHECK(rest->size() == 2);
}

TEST_CASE("pmon: a header printed again inside a sample does not cut it") {
  std::string text = std::string(header_595) +
                     "    0        101     C      1      1      -      -      -      -    a\n"
                     "    0        102     C      2      2      -      -      -      -    b\n"
                     "    0        101     C      3      3      -      -      -      -    a\n" +
                     header_595 +
                     "    0        102     C      4      4      -      -      -      -    b\n"
                     "    0        101     C      5      5      -      -      -      -    a\n";
  std::vector<std::vector<PmonRow>> samples = read_pmon(text);
  REQUIRE(samples.size() == 3);
  CHECK(samples[1].size() == 2);
  CHECK(samples[1][1].sm_percent == 4);
  CHECK(samples[2][0].sm_percent == 5);
}

TEST_CASE("pmon: a bad row is an error and skipped, never a crash or a sample") {
  PmonReader reader;
  Fed fed =
      feed(reader, std::string(header_595) +
                       "    0       4242     C     8x      5      -      -      -      -    a\n"
                       "    0       4244     C\n"
                       "    0       4245     C      1      1      -      -      -      -    c\n");
  REQUIRE(fed.errors.size() == 2);
  CHECK_THAT(fed.errors[0], Catch::Contains("sm"));
  CHECK_THAT(fed.errors[1], Catch::Contains("sm"));
  std::optional<std::vector<PmonRow>> rest = reader.finish();
  REQUIRE(rest);
  REQUIRE(rest->size() == 1);
  CHECK(rest->at(0).pid == 4245);
}

TEST_CASE("pmon: a share out of 0-100 % and a type nvidia-smi does not document are dropped, the "
          "row kept") {
  PmonReader reader;
  Fed fed =
      feed(reader, std::string(header_595) +
                       "    0       4243     C     -1      5      -      -      -      -    b\n"
                       "    0       4246   C+G    250    101      0    100      -      -    c\n"
                       "    0       4247     X      3      4      -      -      -      -    d\n"
                       "    0       4248 C+G+Z      3      4      -      -      -      -    e\n"
                       "    0       4249 " +
                       std::string(300, 'C') +
                       "  3  4  -  -  -  -    f\n"
                       "    0       4250   M+C      3      4      -      -      -      -    g\n");
  CHECK(fed.errors.empty());
  REQUIRE(fed.dropped.size() == 5);
  CHECK(fed.dropped[0] == "pmon GPU 0 pid 4243: dropped, never read: sm -1 % (a share is 0-100 %)");
  CHECK(fed.dropped[1] ==
        "pmon GPU 0 pid 4246: dropped, never read: sm 250 % (a share is 0-100 %), "
        "mem 101 % (a share is 0-100 %)");
  CHECK_THAT(fed.dropped[2], Catch::Contains("type \"X\" (not one nvidia-smi documents"));
  CHECK_THAT(fed.dropped[3], Catch::Contains("type \"C+G+Z\""));
  CHECK_THAT(fed.dropped[4], Catch::Contains("type \"CCCCCCCCCCCCCCCC...\""));
  CHECK(fed.dropped[4].size() < 200);
  std::optional<std::vector<PmonRow>> rows = reader.finish();
  REQUIRE(rows);
  REQUIRE(rows->size() == 6);
  CHECK_FALSE(rows->at(0).sm_percent);
  CHECK(rows->at(0).memory_percent == 5);
  CHECK(rows->at(1).type == std::string("C+G"));
  CHECK_FALSE(rows->at(1).sm_percent);
  CHECK_FALSE(rows->at(1).memory_percent);
  CHECK(rows->at(1).encoder_percent == 0);
  CHECK(rows->at(1).decoder_percent == 100);
  for (std::size_t i : {2, 3, 4}) {
    CHECK_FALSE(rows->at(i).type);
    CHECK(rows->at(i).sm_percent == 3);
  }
  CHECK(rows->at(5).type == std::string("M+C"));
}

TEST_CASE("process types: the letters nvidia-smi documents, joined by '+', and nothing else") {
  for (const char *type : {"C", "G", "M", "O", "C+G", "M+C", "G+C", "M+C+G", " C+G "})
    CHECK(process_type(type).has_value());
  std::vector<std::string> dropped;
  for (const char *type : {"X", "c", "C+", "+C", "C+C", "CG", "C+G+Z", "C++G", "C+G+M+O+C", "",
                           "N/A", "[N/A]", "C\x1b[2J"})
    CHECK_FALSE(process_type(type, &dropped).has_value());
  // Unknown markers say nothing; the rest are said, printable.
  for (const std::string &line : dropped)
    for (char c : line)
      CHECK((c >= ' ' && c < 0x7f));
  CHECK(dropped.size() == 10);
  CHECK(has_compute_context("C+G"));
  CHECK(has_compute_context("M"));
  CHECK_FALSE(has_compute_context("G"));
}

TEST_CASE("attach_pmon: pmon's type (C+G, M+C) over compute-apps' assumed C, never a G over it") {
  // A Windows desktop process (the corpus's RTX 2080 SUPER capture: dwm.exe is C+G in pmon and
  // in -q, and compute-apps lists it, as every process with a compute context).
  Snapshot snapshot;
  snapshot.gpus.resize(1);
  snapshot.gpus[0].index = 0;
  snapshot.gpus[0].uuid = "GPU-0";
  attach_compute_apps(snapshot, {{"GPU-0", 2056, "C:\\Windows\\System32\\dwm.exe", std::nullopt},
                                 {"GPU-0", 4242, "python3", 100},
                                 {"GPU-0", 4243, "python3", 100}});
  std::vector<std::vector<PmonRow>> samples =
      read_pmon(std::string(header_595) +
                "    0       2056   C+G      -      -      -      -      -      -    dwm.exe\n"
                "    0       4242     G      1      -      -      -      -      -    python3\n"
                "    0       4243   M+C      1      -      -      -      -      -    python3\n");
  REQUIRE(samples.size() == 1);
  attach_pmon(snapshot, samples[0]);
  const std::vector<Process> &processes = *snapshot.gpus[0].processes;
  REQUIRE(processes.size() == 3);
  CHECK(processes[0].type == std::string("C+G"));
  CHECK(processes[1].type == std::string("C")); // compute-apps saw it computing
  CHECK(processes[2].type == std::string("M+C"));
  // A type the XML gave is nvidia-smi's own: pmon's does not replace it.
  Snapshot xml = snapshot;
  (*xml.gpus[0].processes)[0].type = "G";
  attach_pmon(xml, samples[0]);
  CHECK((*xml.gpus[0].processes)[0].type == std::string("G"));
}

TEST_CASE("pmon: rows before a header, messages, and blank lines") {
  PmonReader reader;
  Fed fed = feed(reader, "Failed to initialize NVML: Unknown Error\n\n   \n");
  REQUIRE(fed.errors.size() == 1);
  CHECK_THAT(fed.errors[0], Catch::Contains("Failed to initialize NVML"));
  CHECK_FALSE(reader.finish());
  CHECK(read_pmon("").empty());
  CHECK(read_pmon(header_595).empty());
  // Without a command column a token after the last column is not read as a value.
  PmonReader narrow;
  fed = feed(narrow, "# gpu pid sm\n0 1 2 3\n");
  REQUIRE(fed.errors.size() == 1);
  CHECK_THAT(fed.errors[0], Catch::Contains("more values"));
}

TEST_CASE("pmon: a sample that never completes is dropped past its bound") {
  PmonReader reader;
  feed(reader, header_595);
  std::size_t errors = 0, samples = 0;
  for (int pid = 1; pid <= 10000; ++pid) {
    PmonReader::Outcome outcome = reader.add_line("0 " + std::to_string(pid) + " C - - - - - - x");
    errors += outcome.error ? 1 : 0;
    samples += outcome.sample ? 1 : 0;
  }
  CHECK(samples == 0);
  CHECK(errors == 2); // at 4097 and 8193 rows
  std::optional<std::vector<PmonRow>> rest = reader.finish();
  REQUIRE(rest);
  CHECK(rest->size() == 10000 - 8192);
  // An over-long line is refused whole.
  PmonReader::Outcome outcome = reader.add_line("0 1 C - - - - - - " + std::string(100000, 'y'));
  CHECK(outcome.error);
  CHECK_FALSE(reader.finish());
}

TEST_CASE("attach_pmon: shares set by (gpu index, pid); graphics processes added from pmon") {
  Snapshot snapshot = read_csv(test::read_file(test::fixture_path("csv/h100-8gpu.csv")));
  attach_compute_apps(snapshot, read_compute_apps(fixture("compute-apps-8gpu.csv")));
  std::vector<std::vector<PmonRow>> samples = read_pmon(fixture("pmon-um-8gpu.txt"));
  REQUIRE(samples.size() == 3);
  attach_pmon(snapshot, samples[1]);

  const std::vector<Process> &zero = *snapshot.gpus[0].processes;
  REQUIRE(zero.size() == 1); // Xorg: a graphics process compute-apps does not list
  CHECK(zero[0].pid == 2210);
  CHECK(zero[0].type == std::string("G"));
  CHECK(zero[0].name == std::string("Xorg"));
  CHECK(zero[0].used_memory_mib == 4);
  CHECK(zero[0].sm_utilization_percent == 0);

  const std::vector<Process> &two = *snapshot.gpus[2].processes;
  REQUIRE(two.size() == 1);
  CHECK(two[0].sm_utilization_percent == 91);
  CHECK(two[0].memory_utilization_percent == 44);
  CHECK(two[0].name == std::string("python3"));
  CHECK(two[0].used_memory_mib == 40950); // compute-apps' figure is kept

  const std::vector<Process> &three = *snapshot.gpus[3].processes;
  REQUIRE(three.size() == 2);
  CHECK_FALSE(three[0].sm_utilization_percent); // pmon printed `-`
  CHECK(three[1].sm_utilization_percent == 60);
  CHECK(three[1].name == std::string("/usr/bin/torchrun"));

  CHECK(snapshot.gpus[1].processes->empty()); // the `-` row adds nothing
}

TEST_CASE("attach_pmon: GPUs without a list get one from pmon; unknown GPUs ignored") {
  Snapshot snapshot;
  snapshot.gpus.resize(3);
  for (int i = 0; i < 3; ++i)
    snapshot.gpus[i].index = i;
  std::vector<std::vector<PmonRow>> samples =
      read_pmon(std::string(header_595) +
                "    0        500   C+G     12      3      -      -      -      -    game.exe\n"
                "    1          -     -      -      -      -      -      -      -    -\n"
                "    9        900     C     50     50      -      -      -      -    elsewhere\n");
  REQUIRE(samples.size() == 1);
  attach_pmon(snapshot, samples[0]);
  REQUIRE(snapshot.gpus[0].processes);
  REQUIRE(snapshot.gpus[0].processes->size() == 1);
  const Process &game = snapshot.gpus[0].processes->at(0);
  CHECK(game.type == std::string("C+G"));
  CHECK(game.name == std::string("game.exe"));
  CHECK_FALSE(game.used_memory_mib); // no fb column: unknown
  CHECK(game.sm_utilization_percent == 12);
  REQUIRE(snapshot.gpus[1].processes);
  CHECK(snapshot.gpus[1].processes->empty()); // pmon says nothing runs there
  CHECK_FALSE(snapshot.gpus[2].processes);    // not in pmon's sample: still unknown
}

} // namespace test_pmon
