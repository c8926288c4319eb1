// `nvsmi-agent report`: exact figures on small logs whose answer is known, and the built binary
// on the hand-made logs in fixtures/logs.
#include "report/report.hpp"
#include "report/report_series.hpp"
#include "support.hpp"

#include "nvsmi/timestamp.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <vector>

using nlohmann::json;
using test::quote;
using test::Run;

namespace {

const std::string header =
    "timestamp,index,uuid,name,pstate,temperature.gpu,utilization.gpu [%],"
    "utilization.memory [%],memory.total [MiB],memory.free [MiB],memory.used [MiB],"
    "memory.used_percent [%],power.draw [W]\n";

// One watch-log row of GPU 0, `seconds` after 2024-03-14T10:00:00+01:00. An empty string is an
// unknown reading.
struct Row {
  double seconds;
  std::string utilization = "50", used = "2048", power = "100.00", temperature = "40",
              pstate = "P0";
};

std::string stamp(double seconds) {
  int whole = static_cast<int>(seconds);
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "2024-03-14T%02d:%02d:%02d.%03d+01:00", 10 + whole / 3600,
                whole / 60 % 60, whole % 60, static_cast<int>((seconds - whole) * 1000 + 0.5));
  return buffer;
}

std::string log_of(const std::vector<Row> &rows) {
  std::string out = header;
  for (const Row &row : rows)
    out += stamp(row.seconds) + ",0,GPU-00000000-0000-0000-0000-000000000000,NVIDIA H100," +
           row.pstate + "," + row.temperature + "," + row.utilization + ",1,81559,," + row.used +
           ",," + row.power + "\n";
  return out;
}

// The report (through the library) of a log written to a temporary file.
nvsmi::Report report_of(const std::string &log, nvsmi::ReportOptions options = {}) {
  std::string path = test::temporary_folder() + "/gpu-log.csv";
  test::write_file(path, log);
  options.files = {path};
  return nvsmi::make_report(options);
}

std::vector<Row> every_second(int count, const std::function<void(Row &, int)> &shape) {
  std::vector<Row> rows;
  for (int i = 0; i < count; ++i) {
    Row row{static_cast<double>(i)};
    shape(row, i);
    rows.push_back(row);
  }
  return rows;
}

std::string fixture(const std::string &name) { return quote(test::fixture_path("logs/" + name)); }

json report_json(const std::string &arguments) {
  Run run = test::run_agent("report --format json " + arguments);
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  return json::parse(run.out);
}

} // namespace

TEST_CASE("report: a constant 100 W for one hour is 100 Wh") {
  json report = report_json(fixture("constant-100w.csv"));
  const json &gpu = report["gpus"][0];
  CHECK(gpu["time"]["samples"] == 61);
  CHECK(gpu["time"]["interval_s"] == 60.0);
  CHECK(gpu["time"]["covered_s"] == 3600.0);
  CHECK(gpu["power_w"]["energy_wh"] == 100.0);
  CHECK(gpu["power_w"]["mean"] == 100.0);
  CHECK(gpu["power_w"]["max"] == 100.0);
}

TEST_CASE("report: each sample stands for the time since the one before") {
  // Readings 0, 0, 0, 100, 100 at 1 s: the first reading stands for no time (before the log),
  // so 2 of the 4 covered seconds are idle.
  std::vector<Row> rows =
      every_second(5, [](Row &row, int i) { row.utilization = i < 3 ? "0" : "100"; });
  nvsmi::Report report = report_of(log_of(rows));
  REQUIRE(report.gpus.size() == 1);
  const nvsmi::GpuSummary &gpu = report.gpus[0];
  CHECK(gpu.samples == 5);
  CHECK(gpu.covered_seconds == Approx(4));
  CHECK(*gpu.idle.percent() == Approx(50));
  CHECK(*gpu.utilization_mean == Approx(50));
  CHECK(*gpu.utilization_max == 100);
}

TEST_CASE("report: median and p95 from the histogram are exact") {
  // 101 samples 1 s apart with utilization 0..100: the covered seconds hold 1..100, one each.
  std::vector<Row> rows =
      every_second(101, [](Row &row, int i) { row.utilization = std::to_string(i); });
  const nvsmi::GpuSummary gpu = report_of(log_of(rows)).gpus.at(0);
  CHECK(*gpu.utilization_median == 50);
  CHECK(*gpu.utilization_p95 == 95);
  CHECK(*gpu.utilization_mean == Approx(50.5));
  CHECK(*gpu.idle.percent() == Approx(4)); // 1, 2, 3, 4 are under 5 %
}

TEST_CASE("report: a gap is neither busy nor idle, and draws no energy") {
  // 11 samples 1 s apart at 100 W, nothing for 60 s, 11 more: 20 s covered, one 60 s gap.
  std::vector<Row> rows;
  for (int i = 0; i <= 10; ++i)
    rows.push_back({static_cast<double>(i), "0"});
  for (int i = 0; i <= 10; ++i)
    rows.push_back({70.0 + i, "100"});
  const nvsmi::GpuSummary gpu = report_of(log_of(rows)).gpus.at(0);
  CHECK(*gpu.interval == Approx(1));
  CHECK(gpu.gaps == 1);
  CHECK(gpu.gap_seconds == Approx(60));
  CHECK(gpu.covered_seconds == Approx(20));
  CHECK(*gpu.energy_wh == Approx(100.0 * 20 / 3600));
  CHECK(*gpu.idle.percent() == Approx(50));
  // Up to 3 intervals without a sample is not a gap.
  std::vector<Row> late = every_second(10, [](Row &, int) {});
  late.push_back({12.0});
  CHECK(report_of(log_of(late)).gpus.at(0).gaps == 0);
}

TEST_CASE("report: starved is memory held with utilization under 30 %") {
  // 30 GiB held throughout; 10 % for the first 10 covered seconds, 90 % for the last 10.
  std::vector<Row> rows = every_second(21, [](Row &row, int i) {
    row.used = "30720";
    row.utilization = i <= 10 ? "10" : "90";
  });
  const nvsmi::GpuSummary gpu = report_of(log_of(rows)).gpus.at(0);
  CHECK(*gpu.starved.percent() == Approx(50));
  CHECK(*gpu.starved_memory_mean_mib == Approx(30720));
  CHECK(*gpu.idle.percent() == Approx(0));
  CHECK(gpu.finding == "starved 50% of the time while holding 30 GiB: check the data loader");

  // The same utilization with no memory held is an idle-ish GPU, not a starved job.
  std::vector<Row> empty = every_second(21, [](Row &row, int i) {
    row.used = "0";
    row.utilization = i <= 10 ? "10" : "90";
  });
  CHECK(*report_of(log_of(empty)).gpus.at(0).starved.percent() == Approx(0));
}

TEST_CASE("report: an unknown reading is left out, never taken as 0") {
  // Power unknown in half of the covered seconds: mean stays 200 W, energy counts what is known.
  std::vector<Row> rows = every_second(11, [](Row &row, int i) {
    row.power = i % 2 ? "" : "200.00";
    row.utilization = i % 2 ? "" : "80";
    row.temperature = i % 2 ? "" : "60";
  });
  const nvsmi::GpuSummary gpu = report_of(log_of(rows)).gpus.at(0);
  CHECK(gpu.covered_seconds == Approx(10));
  CHECK(gpu.power_known_seconds == Approx(5));
  CHECK(*gpu.power_mean_w == Approx(200));
  CHECK(*gpu.energy_wh == Approx(200.0 * 5 / 3600));
  CHECK(*gpu.utilization_mean == Approx(80));
  CHECK(gpu.idle.known_seconds == Approx(5));
  CHECK(*gpu.temperature_mean_c == Approx(60));

  // No power reading at all: unknown, not 0 W.
  std::vector<Row> none = every_second(5, [](Row &row, int) { row.power = ""; });
  const nvsmi::GpuSummary unknown = report_of(log_of(none)).gpus.at(0);
  CHECK_FALSE(unknown.power_mean_w);
  CHECK_FALSE(unknown.energy_wh);
  CHECK_FALSE(unknown.power_max_w);
}

TEST_CASE("report: memory peak and headroom; a slow pstate while busy") {
  std::vector<Row> rows = every_second(11, [](Row &row, int i) {
    row.used = i == 4 ? "80000" : "1000";
    row.pstate = i >= 6 ? "P5" : "P0";
    row.utilization = "60";
  });
  const nvsmi::GpuSummary gpu = report_of(log_of(rows)).gpus.at(0);
  CHECK(*gpu.memory_peak_mib == 80000);
  CHECK(*gpu.memory_total_mib == 81559);
  CHECK(*gpu.slow_pstate.percent() == Approx(50));
  CHECK_FALSE(gpu.power_capped.percent()); // no power.limit in a watch log
  CHECK(gpu.finding ==
        "busy in a slow pstate (P3 or lower) 50% of the time: check clocks and thermal throttling");

  std::vector<Row> full = every_second(11, [](Row &row, int) {
    row.used = "80000";
    row.utilization = "60";
  });
  CHECK(report_of(log_of(full)).gpus.at(0).finding ==
        "memory peaked at 78.1 of 79.6 GiB (1.9% headroom): close to out of memory");
}

TEST_CASE("report: --from, --to and --gpu") {
  std::vector<Row> rows = every_second(61, [](Row &, int) {});
  nvsmi::ReportOptions options;
  options.from = nvsmi::parse_iso8601_timestamp("2024-03-14T10:00:10+01:00");
  options.to = nvsmi::parse_iso8601_timestamp("2024-03-14T09:00:20Z"); // the same clock in UTC
  nvsmi::Report report = report_of(log_of(rows), options);
  CHECK(report.rows_used == 11);
  CHECK(report.rows_outside_time == 50);
  CHECK(report.gpus.at(0).covered_seconds == Approx(10));

  json all = report_json(fixture("training-2gpu.csv"));
  CHECK(all["gpus"].size() == 2);
  json one = report_json("--gpu 1 " + fixture("training-2gpu.csv"));
  REQUIRE(one["gpus"].size() == 1);
  CHECK(one["gpus"][0]["index"] == 1);
  CHECK(one["rows"]["other_gpus"] == 53);
  json by_uuid =
      report_json("--gpu GPU-00000000-0000-0000-0000-000000000000 " + fixture("training-2gpu.csv"));
  CHECK(by_uuid["gpus"][0]["index"] == 0);
  // Without an offset, --from is read in the log's own clock.
  json late = report_json("--from '2024/03/14 10:05:00' " + fixture("training-2gpu.csv"));
  CHECK(late["gpus"][0]["time"]["first"] == "2024-03-14T10:05:30.012+01:00");
}

TEST_CASE("report: the README example") {
  Run run = test::run_agent("report " + fixture("training-2gpu.csv"));
  CHECK(run.exit_code == 0);
  CHECK_THAT(run.out, Catch::Contains("8 min 30 s covered by 53 samples, every 10 s; 1 gap"));
  CHECK_THAT(run.out,
             Catch::Contains("finding      starved 41% of the time while holding 30 GiB: check the "
                             "data loader"));
  CHECK_THAT(run.out, Catch::Contains("finding      idle 100% of the time"));
}

TEST_CASE("report: rotated logs, given in any order") {
  std::string folder = test::fixture_path("logs/rotated");
  json in_order =
      report_json(quote(folder + "/gpu-log.csv.2") + " " + quote(folder + "/gpu-log.csv.1") + " " +
                  quote(folder + "/gpu-log.csv"));
  json globbed = report_json(quote(folder) + "/gpu-log.csv*"); // .csv, .csv.1, .csv.2
  for (const json &report : {in_order, globbed}) {
    CHECK(report["rows"]["used"] == 15);
    CHECK(report["rows"]["bad"]["total"] == 0);
    const json &gpu = report["gpus"][0];
    CHECK(gpu["time"]["samples"] == 15);
    CHECK(gpu["time"]["covered_s"] == 14.0);
    CHECK(gpu["time"]["gaps"] == 0);
    CHECK(gpu["memory_mib"]["peak_used"] == 30720);
    CHECK(gpu["power_w"]["max"] == 240.0);
    // 110..240 W, one second each.
    CHECK(gpu["power_w"]["energy_wh"] == Approx((110 + 240) / 2.0 * 14 / 3600).epsilon(1e-3));
  }
  CHECK(globbed["files"][0].get<std::string>().find("gpu-log.csv.2") != std::string::npos);
}

TEST_CASE("report: nvidia-smi's own log, units in header and values") {
  json report = report_json(fixture("nvidia-smi-units.csv"));
  const json &gpu = report["gpus"][0];
  CHECK(gpu["name"] == "NVIDIA L4");
  CHECK(gpu["time"]["first"] == "2024-03-14T10:21:33.123");
  CHECK(gpu["time"]["samples"] == 21);
  CHECK(gpu["utilization_percent"]["max"] == 95);
  CHECK(gpu["memory_mib"]["peak_used"] == 20480);
  CHECK(gpu["memory_mib"]["headroom"] == 23034 - 20480);
  CHECK(gpu["power_w"]["max"] == 71.8);
  // 10 busy seconds at 71.8 W of a 72 W limit, one of them with power unknown.
  CHECK(gpu["power_limit_percent"].get<double>() == Approx(100.0 * 9 / 19).epsilon(0.01));
  CHECK_THAT(gpu["finding"].get<std::string>(), Catch::StartsWith("at its power limit"));
}

TEST_CASE("report: bad rows are counted, never fatal") {
  json report = report_json(fixture("bad-rows.csv"));
  const json &bad = report["rows"]["bad"];
  CHECK(report["rows"]["read"] == 10);
  CHECK(report["rows"]["used"] == 4);
  CHECK(bad["total"] == 6);
  CHECK(bad["unparsable"] == 4); // ragged, "abc", "45 W" for a percentage, 150 %
  CHECK(bad["out_of_order"] == 1);
  CHECK(bad["no_timestamp"] == 1);
  CHECK(report["gpus"][0]["name"] == "Tesla \"T4\", rev 2"); // RFC 4180 quotes
  CHECK_THAT(bad["examples"][2].get<std::string>(),
             Catch::Contains("expected unit \"%\", got \"W\""));
}

TEST_CASE("report: no usable rows, or a file that cannot be read, is an error") {
  Run none = test::run_agent("report " + fixture("bad-header-unit.csv"));
  CHECK(none.exit_code == 6);
  CHECK(none.out.empty());
  CHECK_THAT(none.err, Catch::StartsWith("nvsmi-agent: no usable rows"));
  CHECK_THAT(none.err, Catch::Contains("memory.used: header unit [KiB], expected [MiB]"));

  std::string folder = test::temporary_folder();
  test::write_file(folder + "/empty.csv", "");
  Run empty = test::run_agent("report " + quote(folder + "/empty.csv"));
  CHECK(empty.exit_code == 6);

  Run other = test::run_agent("report --gpu 7 " + fixture("constant-100w.csv"));
  CHECK(other.exit_code == 6);
  CHECK_THAT(other.err, Catch::Contains("for GPU 7"));

  Run missing = test::run_agent("report " + quote(folder + "/missing.csv"));
  CHECK(missing.exit_code == 7);
  CHECK_THAT(missing.err, Catch::Contains("missing.csv: No such file or directory"));

  Run usage = test::run_agent("report --from yesterday " + fixture("constant-100w.csv"));
  CHECK(usage.exit_code == 2);
}

TEST_CASE("report: --output writes the file; html is self-contained") {
  std::string out = test::temporary_folder() + "/report.html";
  Run run = test::run_agent("report --format html --output " + quote(out) + " " +
                            fixture("training-2gpu.csv"));
  CHECK(run.exit_code == 0);
  CHECK(run.out.empty());
  std::string html = test::read_file(out);
  CHECK_THAT(html, Catch::StartsWith("<!DOCTYPE html>"));
  CHECK(std::count(html.begin(), html.end(), '\n') > 5);
  CHECK_THAT(html, Catch::Contains("<svg"));
  CHECK_THAT(html, Catch::Contains("starved 41% of the time while holding 30 GiB"));
  for (const char *remote : {"http:", "https:", "src=", "href=", "<script", "<link", "@import"})
    CHECK(html.find(remote) == std::string::npos);
}

TEST_CASE("report: the drawn series stays within its buckets however long the log") {
  nvsmi::Series series;
  series.start(0, 1);
  for (int i = 0; i < 1000000; ++i)
    series.add(i, {double(i % 101), 1.0, std::nullopt, 40.0}, false);
  CHECK(series.buckets().size() <= nvsmi::Series::capacity);
  CHECK(series.buckets().size() > nvsmi::Series::capacity / 2);
  std::uint64_t samples = 0;
  for (const auto &bucket : series.buckets()) {
    samples += bucket.samples;
    CHECK(bucket.stats[nvsmi::Series::power].count == 0);
  }
  CHECK(samples == 1000000);
  CHECK(series.buckets()[0].stats[nvsmi::Series::utilization].max == 100);
}

TEST_CASE("report: a pipe is read once, its first rows included") {
  // Over 64 KiB, so that looking for the first timestamp reads more than one pipe buffer.
  std::vector<Row> rows =
      every_second(6000, [](Row &row, int i) { row.utilization = std::to_string(i * 7 % 101); });
  std::string whole = log_of(rows);
  std::string folder = test::temporary_folder();
  test::write_file(folder + "/whole.csv", whole);
  std::size_t middle = whole.find(stamp(3000));
  test::write_file(folder + "/older.csv", whole.substr(0, middle));
  test::write_file(folder + "/newer.csv", header + whole.substr(middle));
  json expected = report_json(quote(folder + "/whole.csv"));
  REQUIRE(expected["rows"]["used"] == 6000);

  // As `report <(zcat log.csv.gz)` would give them; the newer file first.
  Run run = test::run_shell("bash -c " + quote(quote(AGENT_BIN) + " report --format json <(cat " +
                                               quote(folder + "/newer.csv") + ") <(cat " +
                                               quote(folder + "/older.csv") + ")"));
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  json piped = json::parse(run.out);
  CHECK(piped["rows"]["read"] == 6000);
  CHECK(piped["rows"]["used"] == 6000);
  CHECK(piped["rows"]["bad"]["total"] == 0);
  CHECK(piped["gpus"][0]["utilization_percent"] == expected["gpus"][0]["utilization_percent"]);
  CHECK(piped["gpus"][0]["time"] == expected["gpus"][0]["time"]);
}

TEST_CASE("report: a line with no end stops that file's reading, and /dev/zero ends") {
  Run zero = test::run_shell("timeout 60 " + quote(AGENT_BIN) + " report /dev/zero");
  CHECK(zero.exit_code == 6);
  CHECK_THAT(zero.err, Catch::Contains("/dev/zero:1: line longer than 65536 bytes"));

  std::string log = log_of(every_second(3, [](Row &, int) {})) + std::string(70000, 'x') + "\n" +
                    log_of(every_second(5, [](Row &, int) {})).substr(header.size());
  nvsmi::Report report = report_of(log);
  CHECK(report.rows_used == 3);
  CHECK(report.bad.counts[nvsmi::BadRows::too_long] == 1);
  CHECK(report.rows_read == 4);
}

TEST_CASE("report: a last line without its newline is not a row") {
  // A log still being written: the last row's power `100.00` cut to `1`.
  std::string log = log_of(every_second(4, [](Row &, int) {}));
  log = log.substr(0, log.rfind(",100.00\n")) + ",1";
  nvsmi::Report report = report_of(log);
  REQUIRE(report.gpus.size() == 1);
  CHECK(report.rows_used == 3);
  CHECK(report.bad.counts[nvsmi::BadRows::unfinished] == 1);
  CHECK(*report.gpus[0].power_mean_w == Approx(100));
  CHECK(*report.gpus[0].power_max_w == Approx(100));
  CHECK(report.gpus[0].samples == 3);
  CHECK_THAT(report.bad.examples.at(0), Catch::Contains("gpu-log.csv:5: last line has no newline"));
}
