#include "nvidia_smi/stream_decoder.hpp"

#include "nvsmi/dmon.hpp"
#include "nvsmi/quantity.hpp"
#include "support.hpp"

#include <catch2/catch.hpp>

namespace test_dmon {

using namespace nvsmi;

namespace {

std::string recorded(const std::string &name) {
  return test::read_file(test::fixture_path("recorded/nvidia-h200__580.159.04/" + name));
}

constexpr std::int64_t mib = 1024 * 1024;

std::string error_of(const std::string &text) {
  DmonReader reader;
  std::string last;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos)
      end = text.size();
    DmonReader::Outcome outcome =
        reader.add_line(std::string_view(text).substr(start, end - start));
    CHECK_FALSE(outcome.row.has_value());
    if (outcome.error)
      last = *outcome.error;
    start = end + 1;
  }
  return last;
}

} // namespace

TEST_CASE("dmon --gpm-metrics (H200, 580): GPM columns by name, `-` until GPM has two readings") {
  std::vector<DmonRow> rows = read_dmon(recorded("dmon-gpm.txt"));
  REQUIRE(rows.size() == 3);
  for (int i = 0; i < 2; ++i) {
    CHECK(rows[i].gpu_index == 0);
    CHECK_FALSE(rows[i].sm_active_percent.has_value()); // `-`: unknown, never 0
    CHECK_FALSE(rows[i].tensor_active_percent.has_value());
    CHECK_FALSE(rows[i].fp32_active_percent.has_value());
  }
  // gract smutil smocc intutil mmaact dfmat hmmat immat dram fp64 fp32 fp16
  //    21     18     2       0     14     0    14     0    3    0    2    0
  CHECK(rows[2].sm_active_percent == 18);
  CHECK(rows[2].sm_occupancy_percent == 2);
  CHECK(rows[2].tensor_active_percent == 14);
  CHECK(rows[2].dram_active_percent == 3);
  CHECK(rows[2].fp64_active_percent == 0);
  CHECK(rows[2].fp32_active_percent == 2);
  CHECK(rows[2].fp16_active_percent == 0);
  // No column for traffic was asked for: unknown, not 0.
  CHECK_FALSE(rows[2].pcie_rx_bytes_per_second.has_value());
  CHECK_FALSE(rows[2].nvlink_rx_bytes_per_second.has_value());

  std::vector<DmonRow> idle = read_dmon(recorded("idle-dmon-gpm.txt"));
  REQUIRE(idle.size() == 2);
  CHECK_FALSE(idle[1].sm_active_percent.has_value());
}

TEST_CASE("dmon: PCIe MB/s and GPM NVLink MiB/s are bytes per second") {
  std::vector<DmonRow> all = read_dmon(recorded("dmon-all.txt"));
  REQUIRE(all.size() == 3);
  CHECK(all[1].pcie_rx_bytes_per_second == 14139 * mib);
  CHECK(all[1].pcie_tx_bytes_per_second == 1 * mib);
  CHECK(all[2].pcie_tx_bytes_per_second == 15569 * mib);
  CHECK_FALSE(all[2].sm_active_percent.has_value()); // no GPM asked for

  std::vector<DmonRow> pcie = read_dmon(recorded("dmon-pcie.txt"));
  REQUIRE(pcie.size() == 3);
  CHECK(pcie[0].pcie_rx_bytes_per_second == 0);
  CHECK(pcie[1].pcie_rx_bytes_per_second == 738 * mib);

  // A GPU without NVLink peers: 0 once GPM has two readings (the driver measured nothing moved).
  std::vector<DmonRow> nvlink = read_dmon(recorded("dmon-gpm-nvlink.txt"));
  REQUIRE(nvlink.size() == 3);
  CHECK_FALSE(nvlink[0].nvlink_rx_bytes_per_second.has_value());
  CHECK(nvlink[2].nvlink_rx_bytes_per_second == 0);
  CHECK(nvlink[2].nvlink_tx_bytes_per_second == 0);
}

TEST_CASE("dmon --format csv reads as the table does") {
  std::vector<DmonRow> rows = read_dmon(recorded("dmon-csv.txt"));
  REQUIRE(rows.size() == 3);
  CHECK(rows[0].gpu_index == 0);
  CHECK(rows[1].pcie_rx_bytes_per_second == 14143 * mib);
  CHECK(rows[1].pcie_tx_bytes_per_second == 1035 * mib);
  CHECK(rows[2].pcie_tx_bytes_per_second == 9 * mib);
}

TEST_CASE("dmon: the default columns of another driver (L40S, 595) read, with no activity") {
  std::string text =
      "# gpu    pwr  gtemp  mtemp     sm    mem    enc    dec    jpg    ofa   mclk   pclk \n"
      "# Idx      W      C      C      %      %      %      %      %      %    MHz    MHz \n"
      "    0     66     57      -      0      0      0      0      0      0   9001    210 \n"
      "    1    109     53      -     10      2     67      0      0      0   9001   2520 \n";
  std::vector<DmonRow> rows = read_dmon(text);
  REQUIRE(rows.size() == 2);
  CHECK(rows[1].gpu_index == 1);
  CHECK_FALSE(rows[1].sm_active_percent.has_value()); // `sm` is utilization, not SM activity
  CHECK_FALSE(rows[1].pcie_rx_bytes_per_second.has_value());
}

TEST_CASE("dmon: a header it does not know is refused by name, and its rows are not read") {
  std::string unknown = "# gpu    pwr  pcitx\n# Idx      W  GPM:MiB/s\n    0     77     12\n";
  std::string message = error_of(unknown);
  CHECK_THAT(error_of("# gpu    pwr  pcitx\n# Idx      W  GPM:MiB/s\n"),
             Catch::Contains("\"pcitx\"") && Catch::Contains("not one this reader knows"));
  CHECK_THAT(message, Catch::Contains("without a header it knows"));
  CHECK_THROWS_AS(read_dmon(unknown), ParseError);

  // A known name in another unit is not guessed at either.
  CHECK_THAT(error_of("# gpu  rxpci\n# Idx  KB/s\n"),
             Catch::Contains("\"rxpci\"") && Catch::Contains("knows it in MB/s"));
  CHECK_THAT(error_of("# gpu  pwr\n# Idx  W  C\n"), Catch::Contains("2 names but 3 units"));
  CHECK_THAT(error_of("    0     77\n"), Catch::Contains("without a header it knows"));
  CHECK_THAT(error_of("# Idx  W\n"), Catch::Contains("units line without its names line"));

  // A known header after a refused one is read again.
  std::vector<DmonRow> rows;
  DmonReader reader;
  for (const char *line :
       {"# gpu pcitx", "# Idx GPM:MiB/s", "0 5", "# gpu rxpci", "# Idx MB/s", "0 5"}) {
    DmonReader::Outcome outcome = reader.add_line(line);
    if (outcome.row)
      rows.push_back(*outcome.row);
  }
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].pcie_rx_bytes_per_second == 5 * mib);
}

TEST_CASE("dmon: bad rows are errors and skipped, never a crash or a reading") {
  DmonReader reader;
  REQUIRE_FALSE(reader.add_line("# gpu  rxpci  smutil").error);
  REQUIRE_FALSE(reader.add_line("# Idx   MB/s   GPM:%").error);
  for (const char *line : {"0 1", "0 1 2 3", "0 x 2", "0 -N/A 2", "0 --5 2", "- 1 2",
                           "0 99999999999999 2", "\xff\xfe 1 2"}) {
    INFO(line);
    DmonReader::Outcome outcome = reader.add_line(line);
    CHECK(outcome.error.has_value());
    CHECK_FALSE(outcome.row.has_value());
  }
  CHECK(reader.add_line(std::string(5000, '0')).error.has_value());
  DmonReader::Outcome fine = reader.add_line("0 N/A 7");
  REQUIRE(fine.row.has_value());
  CHECK_FALSE(fine.row->pcie_rx_bytes_per_second.has_value());
  CHECK(fine.row->sm_active_percent == 7);
}

namespace {

std::string recorded_h100(const std::string &name) {
  return test::read_file(test::fixture_path("recorded/nvidia-h100-80gb-hbm3__580.159.04/" + name));
}

} // namespace

TEST_CASE("dmon -s t --gpm-metrics as the agent asks (H100, 580): PCIe first, then GPM by name") {
  // `dmon -s t --gpm-metrics 2,3,5,10,11,12,13,60,61 -d 1 -c 4` under a PyTorch load.
  std::vector<DmonRow> rows = read_dmon(recorded_h100("dmon-t-gpm.txt"));
  REQUIRE(rows.size() == 4);
  CHECK(rows[0].pcie_rx_bytes_per_second == 14144 * mib);
  CHECK(rows[0].pcie_tx_bytes_per_second == 341 * mib);
  CHECK_FALSE(rows[0].sm_active_percent); // `-`: GPM needs two readings
  CHECK_FALSE(rows[1].tensor_active_percent);
  CHECK(rows[2].sm_active_percent == 17);
  CHECK(rows[2].sm_occupancy_percent == 2);
  CHECK(rows[2].tensor_active_percent == 13);
  CHECK(rows[2].dram_active_percent == 5);
  CHECK(rows[2].fp64_active_percent == 0);
  CHECK(rows[2].fp32_active_percent == 2);
  CHECK(rows[2].fp16_active_percent == 0);
  CHECK(rows[2].nvlink_rx_bytes_per_second == 0); // one GPU, no NVLink peer: GPM says 0
  CHECK(rows[3].pcie_tx_bytes_per_second == 5169 * mib);
  CHECK(rows[3].sm_active_percent == 18);

  // The same with --format csv and -d 2, and both on an idle GPU.
  std::vector<DmonRow> csv = read_dmon(recorded_h100("dmon-t-gpm-csv.txt"));
  REQUIRE(csv.size() == 3);
  CHECK(csv[1].pcie_rx_bytes_per_second == 2956 * mib);
  CHECK(csv[2].tensor_active_percent == 13);
  for (const char *idle : {"idle-dmon-t-gpm.txt", "idle-dmon-t-gpm-csv.txt"}) {
    INFO(idle);
    std::vector<DmonRow> quiet = read_dmon(recorded_h100(idle));
    REQUIRE(quiet.size() == 3);
    CHECK_FALSE(quiet[1].sm_active_percent);
    CHECK(quiet[2].sm_active_percent == 0);
    CHECK(quiet[2].pcie_rx_bytes_per_second == 0);
  }
}

TEST_CASE("dmon: a share past 100 % or a rate below 0 is dropped from its row, said, never read") {
  // GPU 3 as an odd driver gave it (issue 40): SM 250 %, occupancy 999 %, tensor 101 %, DRAM
  // 200 %, and a PCIe rate of -5 MB/s; its other figures are readings as ever.
  DmonReader reader;
  REQUIRE_FALSE(
      reader.add_line("# gpu  rxpci  txpci  smutil  smocc  mmaact  dram  fp32  nvlrx").error);
  REQUIRE_FALSE(
      reader.add_line("# Idx   MB/s   MB/s   GPM:%  GPM:%   GPM:%  GPM:%  GPM:%  GPM:MiB/s").error);
  DmonReader::Outcome odd =
      reader.add_line("    3    -5   650    250    999    101   200    6   300");
  REQUIRE(odd.row.has_value());
  CHECK_FALSE(odd.error.has_value());
  CHECK(odd.row->gpu_index == 3);
  for (const Reading &dropped :
       {odd.row->sm_active_percent, odd.row->sm_occupancy_percent, odd.row->tensor_active_percent,
        odd.row->dram_active_percent, odd.row->pcie_rx_bytes_per_second})
    CHECK_FALSE(dropped.has_value());
  CHECK(odd.row->pcie_tx_bytes_per_second == 650 * mib);
  CHECK(odd.row->fp32_active_percent == 6);
  CHECK(odd.row->nvlink_rx_bytes_per_second == 300 * mib);
  REQUIRE(odd.dropped.has_value());
  CHECK(*odd.dropped == "dmon GPU 3: dropped, never read: rxpci -5 MB/s (a rate is at least 0), "
                        "smutil 250 % (a share is 0-100 %), smocc 999 % (a share is 0-100 %), "
                        "mmaact 101 % (a share is 0-100 %), dram 200 % (a share is 0-100 %)");
  // The bounds themselves are readings; a negative zero is 0; nothing is said of them.
  DmonReader::Outcome edge = reader.add_line("    0    0   -0    100    0    100   0    0   0");
  REQUIRE(edge.row.has_value());
  CHECK_FALSE(edge.dropped.has_value());
  CHECK(edge.row->sm_active_percent == 100);
  CHECK(edge.row->pcie_tx_bytes_per_second == 0);
  // A negative NVLink rate and a negative share, in the CSV form too.
  DmonReader csv;
  REQUIRE_FALSE(csv.add_line("#gpu, smutil, nvltx").error);
  REQUIRE_FALSE(csv.add_line("#Idx, GPM:%, GPM:MiB/s").error);
  DmonReader::Outcome negative = csv.add_line(" 1, -1, -7");
  REQUIRE(negative.row.has_value());
  CHECK_FALSE(negative.row->sm_active_percent);
  CHECK_FALSE(negative.row->nvlink_tx_bytes_per_second);
  CHECK_THAT(*negative.dropped,
             Catch::Contains("smutil -1 %") && Catch::Contains("nvltx -7 MiB/s"));
}

TEST_CASE("dmon: a GPM metric the driver has no name for (id=N) is read past, not refused") {
  // `dmon -s t --gpm-metrics 99 -c 2` on driver 580: a column "id=99" in GPM:%, all `-`.
  std::vector<DmonRow> rows = read_dmon(recorded_h100("dmon-gpm-unknown-id.txt"));
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].pcie_rx_bytes_per_second == 0);
  CHECK_FALSE(rows[0].sm_active_percent);
  // Only that shape: "id=" with letters, or in another unit, is still refused by name.
  CHECK_THAT(error_of("# gpu  id=x9\n# Idx  GPM:%\n"), Catch::Contains("id=x9"));
  CHECK_THAT(error_of("# gpu  id=99\n# Idx  MB/s\n"), Catch::Contains("id=99"));
}

TEST_CASE("dmon rows go to the GPU of their index; unknown traffic keeps the XML's") {
  Snapshot snapshot;
  snapshot.gpus.resize(2);
  snapshot.gpus[0].index = 0;
  snapshot.gpus[1].index = 1;
  snapshot.gpus[1].pcie_rx_bytes_per_second = 4096; // from the XML's rx_util
  DmonRow row;
  row.gpu_index = 1;
  row.sm_active_percent = 40;
  row.pcie_tx_bytes_per_second = 7 * mib;
  DmonRow stray; // a GPU the sample does not have: nothing
  stray.gpu_index = 5;
  stray.sm_active_percent = 99;
  attach_dmon(snapshot, {row, stray});
  CHECK_FALSE(snapshot.gpus[0].sm_active_percent);
  CHECK(snapshot.gpus[1].sm_active_percent == 40);
  CHECK(snapshot.gpus[1].pcie_tx_bytes_per_second == 7 * mib);
  CHECK(snapshot.gpus[1].pcie_rx_bytes_per_second == 4096);
  CHECK_FALSE(snapshot.gpus[1].tensor_active_percent); // never utilization's, never 0
}

TEST_CASE("one line decoder for dmon, pmon and the compute-apps loop: lines cut across reads, "
          "refusals said, rows handed on, everything forgotten at a run's end") {
  std::vector<std::string> skipped, messages;
  int done = 0;
  StreamDecoder::Events events{[&] { ++done; },
                               [&](const std::string &text, bool counted) {
                                 CHECK(counted);
                                 skipped.push_back(text);
                               },
                               [&](std::string_view line) { messages.emplace_back(line); }};
  std::vector<DmonRow> rows;
  std::unique_ptr<StreamDecoder> dmon = dmon_decoder([&](DmonRow row) { rows.push_back(row); });
  // The recorded table (H200, 580), cut in the middle of a header and of a row.
  std::string table = recorded("dmon-pcie.txt");
  std::size_t cut = table.find("MB/s"), cut2 = table.find("738") + 1;
  dmon->feed(table.substr(0, cut), events);
  dmon->feed(table.substr(cut, cut2 - cut), events);
  CHECK(rows.size() == 1);
  dmon->feed(table.substr(cut2), events);
  REQUIRE(rows.size() == 3);
  CHECK(rows[1].pcie_rx_bytes_per_second == 738 * mib);
  CHECK(done == 3);
  CHECK(skipped.empty());

  // The reader's refusal is said in its own words (dmon's name them), with the line kept as
  // nvidia-smi's for its exit line.
  dmon->feed("    0   abc     1\n", events);
  REQUIRE(skipped.size() == 1);
  CHECK(skipped[0].rfind("dmon column rxpci", 0) == 0);
  CHECK(messages.back() == "    0   abc     1");
  // A line past the cap is cut by the splitter, said with the stream's name.
  dmon->feed(std::string(70000, '7') + "\n", events);
  REQUIRE(skipped.size() == 2);
  CHECK(skipped[1].rfind("dmon line skipped: ", 0) == 0);
  CHECK(rows.size() == 3);

  // At a run's end the partial line and the header are forgotten: the next run's row without a
  // header of its own is refused, never read under the last run's columns.
  dmon->feed("    0     5", events);
  CHECK_FALSE(dmon->finish(events, true));
  dmon->feed("    0     5     6\n", events);
  CHECK(rows.size() == 3);
  CHECK(skipped.back().rfind("dmon row without a header it knows", 0) == 0);

  // A row with a figure out of range is handed on without it, and what was dropped said once,
  // not as a skipped line and not as nvidia-smi's words for its exit line.
  std::size_t messages_before = messages.size();
  skipped.clear();
  dmon->feed("# gpu  smutil  rxpci\n# Idx   GPM:%   MB/s\n    2   250   7\n", events);
  REQUIRE(rows.size() == 4);
  CHECK_FALSE(rows[3].sm_active_percent);
  CHECK(rows[3].pcie_rx_bytes_per_second == 7 * mib);
  REQUIRE(skipped.size() == 1);
  CHECK(skipped[0] == "dmon GPU 2: dropped, never read: smutil 250 % (a share is 0-100 %)");
  CHECK(messages.size() == messages_before);

  // pmon through the same decoder: its reader's words get the stream's name before them.
  std::vector<std::vector<PmonRow>> samples;
  std::unique_ptr<StreamDecoder> pmon =
      pmon_decoder([&](std::vector<PmonRow> sample) { samples.push_back(std::move(sample)); });
  skipped.clear();
  pmon->feed("    0   1234\n", events);
  REQUIRE(skipped.size() == 1);
  CHECK(skipped[0].rfind("pmon line skipped: ", 0) == 0);
  CHECK(samples.empty());
}

TEST_CASE("the line decoder says dropped figures at most 5 times a minute per stream, then counts "
          "them") {
  std::vector<std::string> skipped;
  StreamDecoder::Events events{[] {},
                               [&](const std::string &text, bool) { skipped.push_back(text); },
                               [](std::string_view) {}};
  std::vector<DmonRow> rows;
  std::unique_ptr<StreamDecoder> dmon = dmon_decoder([&](DmonRow row) { rows.push_back(row); });
  dmon->feed("# gpu  smutil\n# Idx   GPM:%\n", events);
  for (int second = 0; second < 20; ++second)
    dmon->feed("    3   250\n", events);
  CHECK(rows.size() == 20); // every row handed on, without the figure
  REQUIRE(skipped.size() == 6);
  for (int i = 0; i < 5; ++i)
    CHECK(skipped[i] == "dmon GPU 3: dropped, never read: smutil 250 % (a share is 0-100 %)");
  CHECK(skipped[5] == "dmon: more than 5 messages in 60 s: the rest are counted, not shown");
}

} // namespace test_dmon
