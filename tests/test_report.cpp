// `nvsmi-agent report`: exact figures on small logs whose answer is known, and the built binary
// on the hand-made logs in fixtures/logs.
#include "core/exit_codes.hpp"
#include "formats/formats.hpp"
#include "report/report.hpp"
#include "report/report_series.hpp"
#include "snapshot_builders.hpp"
#include "support.hpp"

#include "nvsmi/timestamp.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <regex>
#include <sstream>
#include <vector>

namespace test_report {

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

TEST_CASE("report: durations read as a person says them, a zero part left unsaid") {
  CHECK(nvsmi::describe_duration(42) == "42 s");
  CHECK(nvsmi::describe_duration(2.5) == "2.5 s");
  CHECK(nvsmi::describe_duration(40 * 60) == "40 min");
  CHECK(nvsmi::describe_duration(40 * 60 + 7) == "40 min 7 s");
  CHECK(nvsmi::describe_duration(2 * 3600) == "2 h");
  CHECK(nvsmi::describe_duration(2 * 3600 + 5 * 60) == "2 h 5 min");
  CHECK(nvsmi::describe_duration(2 * 3600 + 5 * 60 + 59.6) == "2 h 6 min");
  CHECK(nvsmi::describe_duration(86400) == "1 d");
  CHECK(nvsmi::describe_duration(86400 + 3 * 3600 + 20 * 60) == "1 d 3 h");
}

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
  // 30 GiB held throughout; 10 % for the first 10 covered half minutes, 90 % for the last 10.
  std::vector<Row> rows = every_second(21, [](Row &row, int i) {
    row.seconds *= 30;
    row.used = "30720";
    row.utilization = i <= 10 ? "10" : "90";
  });
  const nvsmi::GpuSummary gpu = report_of(log_of(rows)).gpus.at(0);
  CHECK(*gpu.starved.percent() == Approx(50));
  CHECK(*gpu.starved_memory_mean_mib == Approx(30720));
  CHECK(*gpu.idle.percent() == Approx(0));
  CHECK(gpu.finding == "starved 50% of 10 min while holding 30 GiB (host CPUs, disk reads and "
                       "network receive unknown): check the data loader");

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
        "busy in a slow pstate (P3 or lower) 50% of 10 s: check clocks and thermal throttling");

  std::vector<Row> full = every_second(11, [](Row &row, int) {
    row.used = "80000";
    row.utilization = "60";
  });
  CHECK(report_of(log_of(full)).gpus.at(0).finding ==
        "memory peaked at 78.1 of 79.6 GiB (1.9% headroom) in 10 s: close to out of memory");
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

TEST_CASE("report: --gpu takes several GPUs, by index or UUID; one with no row is exit 6") {
  json both = report_json("--gpu 0,GPU-00000000-0000-0000-0000-000000000001 " +
                          fixture("training-2gpu.csv"));
  CHECK(both["gpus"].size() == 2);
  json repeated = report_json("--gpu 1 --gpu gpu-00000000-0000-0000-0000-000000000000 " +
                              fixture("training-2gpu.csv"));
  CHECK(repeated["gpus"].size() == 2);
  // GPU 0 is in the log, GPU 5 is not: a report of GPU 0 alone would read as the whole answer.
  Run missing = test::run_agent("report --gpu 0 --gpu 5 " + fixture("training-2gpu.csv"));
  CHECK(missing.exit_code == 6);
  CHECK(missing.out.empty());
  CHECK(missing.err == "nvsmi-agent: no rows for GPU 5 in 106 rows of 1 file(s)\n");
  Run hostile =
      test::run_agent("report --gpu \"$(printf '0\\033[2J')\" " + fixture("training-2gpu.csv"));
  CHECK(hostile.exit_code == 2);
  CHECK(hostile.err.find('\x1b') == std::string::npos);
}

TEST_CASE("report: the README example") {
  Run run = test::run_agent("report " + fixture("training-2gpu.csv"));
  CHECK(run.exit_code == 0);
  CHECK_THAT(run.out,
             Catch::Contains("\n  warning   GPU 0: starved 41% of 8 min 30 s while holding "
                             "30 GiB (host CPUs, disk reads and network receive "
                             "unknown): check the data loader\n"));
  CHECK_THAT(run.out, Catch::Contains("\n  info      GPU 1: idle 100% of 8 min 30 s"));
  // Each GPU's figures with --details.
  Run details = test::run_agent("report --details " + fixture("training-2gpu.csv"));
  CHECK_THAT(details.out, Catch::Contains("8 min 30 s covered by 53 samples, every 10 s; 1 gap"));
  CHECK_THAT(details.out,
             Catch::Contains("finding      warning: starved 41% of 8 min 30 s while holding 30 GiB "
                             "(host CPUs, disk reads and network receive unknown): "
                             "check the data loader"));
  CHECK_THAT(details.out, Catch::Contains("finding      info: idle 100% of 8 min 30 s"));
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
  CHECK_THAT(html, Catch::Contains("starved 41% of 8 min 30 s while holding 30 GiB"));
  for (const char *remote : {"http:", "https:", "src=", "<script", "<link", "@import"})
    CHECK(html.find(remote) == std::string::npos);
  // Links only within the page: the summary's rows to the GPUs' sections.
  for (std::size_t at = html.find("href="); at != std::string::npos;
       at = html.find("href=", at + 1))
    CHECK(html.compare(at, 7, "href=\"#") == 0);
}

TEST_CASE("report: the drawn series stays within its buckets however long the log") {
  nvsmi::Series series;
  series.start(0, 1);
  for (int i = 0; i < 1000000; ++i)
    series.add(i, {double(i % 101), 1.0, std::nullopt, 40.0, std::nullopt}, false);
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
  // Its first bytes are NUL: refused as no log before a line is read, not read to the line cap.
  CHECK_THAT(zero.err, Catch::Contains("/dev/zero is not a log of watch or serve: it is not text"));

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

// ---- `watch --json-log` logs: the users ledger and the host's CPUs ----

namespace {

// One `watch --json-log` line of GPU 0 (an H100), `seconds` after 2024-03-14T10:00:00+01:00. A
// null `processes` or `host_cpu` is unknown, as the log writes it.
struct JsonSample {
  double seconds;
  int utilization = 50;
  std::int64_t used = 30720;
  double power = 360;
  json processes = nullptr;
  json host_cpu = nullptr;
  json disk_read = nullptr, network_receive = nullptr; // bytes a second
};

// A process; `cpu` its share of one core (null: unknown).
json process_of(const json &user, const json &used_memory_mib, const json &cpu = nullptr) {
  return {{"pid", 100},         {"type", "C"},       {"name", "python"},
          {"user", user},       {"uid", nullptr},    {"used_memory_mib", used_memory_mib},
          {"command", nullptr}, {"cpu_percent", cpu}};
}

std::string json_line(const JsonSample &sample) {
  json gpu = {{"index", 0},
              {"uuid", "GPU-00000000-0000-0000-0000-000000000000"},
              {"name", "NVIDIA H100"},
              {"pstate", "P0"},
              {"memory_total_mib", 81559},
              {"memory_used_mib", sample.used},
              {"utilization_gpu_percent", sample.utilization},
              {"power_draw_w", sample.power},
              {"processes", sample.processes}};
  json host = nullptr;
  if (!sample.host_cpu.is_null() || !sample.disk_read.is_null() ||
      !sample.network_receive.is_null())
    host = {{"hostname", "gpu7"},
            {"cpu_count", 64},
            {"cpu_percent", sample.host_cpu},
            {"disk_read_bytes_per_second", sample.disk_read},
            {"network_receive_bytes_per_second", sample.network_receive}};
  json line = {{"schema", "nvsmi-agent.snapshot/1"},
               {"source", "xml"},
               {"timestamp", stamp(sample.seconds)},
               {"gpus", json::array({gpu})},
               {"host", host}};
  return line.dump() + "\n";
}

// The path of a temporary JSON log of these samples.
std::string json_log(const std::vector<JsonSample> &samples) {
  std::string text;
  for (const JsonSample &sample : samples)
    text += json_line(sample);
  std::string path = test::temporary_folder() + "/gpu-log.jsonl";
  test::write_file(path, text);
  return quote(path);
}

// 11 samples a minute apart (10 stretches of 60 s: 1/6 h) at 360 W (60 Wh in all), every one with
// these processes: the ledger of that log, through the binary.
json ledger_of(const json &processes) {
  std::vector<JsonSample> samples;
  for (int i = 0; i <= 10; ++i) {
    JsonSample sample{60.0 * i};
    sample.processes = processes;
    samples.push_back(sample);
  }
  return report_json(json_log(samples));
}

const json *user_named(const json &report, const json &name) {
  for (const json &user : report["users"])
    if (user["user"] == name)
      return &user;
  return nullptr;
}

} // namespace

TEST_CASE("report: the JSON-log fixtures are what scripts/make-log-fixtures writes") {
  // The tests below work their figures out from the generator's description of each fixture.
  std::string folder = test::temporary_folder();
  Run run = test::run_shell(quote(SCRIPTS_DIR "/make-log-fixtures") + " " + quote(folder));
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  for (const char *name : {"shared-3users.jsonl", "cpu-bound.jsonl", "io-bound.jsonl",
                           "bad-lines.jsonl", "host-columns.csv"}) {
    INFO(name);
    CHECK(test::read_file(folder + "/" + name) ==
          test::read_file(test::fixture_path(std::string("logs/") + name)));
  }
}

TEST_CASE("report: the users ledger of a JSON log, figures worked by hand") {
  // fixtures/logs/shared-3users.jsonl (scripts/make-log-fixtures writes it): 4 GPUs, 19 samples
  // 10 min apart, so 18 stretches of 1/6 h = 3 h for each GPU (the first sample stands for no
  // time).
  json report = report_json(fixture("shared-3users.jsonl"));
  CHECK(report["rows"]["used"] == 76); // 19 lines x 4 GPUs
  REQUIRE(report["users"].size() == 4);

  // alice: GPU 0 alone (30 GiB, 95 %, 600 W), GPU 1 alone (20 GiB, 0 %, 80 W), GPU 2 with bob
  // (her 10 GiB of the 40 GiB there, 50 %, 400 W), all 3 h. Held 3 x 3 = 9 GPU-h; idle: GPU 1's
  // 3 h = 33.33 %. Memory 30x3 + 20x3 + 10x3 = 180 GiB-h. Energy 600x3 + 80x3 + 400x3x10/40 =
  // 1800 + 240 + 300 = 2340 Wh.
  const json &alice = report["users"][0];
  CHECK(alice["user"] == "alice");
  CHECK(alice["gpus"] == 3);
  CHECK(alice["held_gpu_hours"] == 9.0);
  CHECK(alice["idle_gpu_hours"] == 3.0);
  CHECK(alice["idle_percent"] == 33.33);
  CHECK(alice["memory_gib_hours"] == 180.0);
  CHECK(alice["energy_wh"] == 2340.0);
  CHECK(alice["idle_unknown_gpu_hours"] == 0.0);
  CHECK(alice["memory_unknown_gpu_hours"] == 0.0);
  CHECK(alice["energy_unknown_gpu_hours"] == 0.0);
  CHECK(alice["finding"] == "alice held 3 GPUs for 9.0 GPU-hours, 33% of it idle: 3.0 idle "
                            "GPU-hours");

  // bob: GPU 2 (30 GiB of 40) for 3 h; GPU 3 alone (8 GiB, 90 %, 500 W) in samples 1-9: 1.5 h.
  // Held 4.5 GPU-h, none idle. Memory 30x3 + 8x1.5 = 102 GiB-h. Energy 400x3x30/40 + 500x1.5 =
  // 900 + 750 = 1650 Wh.
  const json &bob = report["users"][1];
  CHECK(bob["user"] == "bob");
  CHECK(bob["gpus"] == 2);
  CHECK(bob["held_gpu_hours"] == 4.5);
  CHECK(bob["idle_gpu_hours"] == 0.0);
  CHECK(bob["memory_gib_hours"] == 102.0);
  CHECK(bob["energy_wh"] == 1650.0);
  CHECK(bob["finding"] == "bob held 2 GPUs for 4.5 GPU-hours, 0% of it idle: in use");

  // carol: GPU 3 in samples 13-18 (1 h) at 2 %: all idle; 4 GiB: 4 GiB-h. She shares it with a
  // process whose memory is unknown, so its 70 W x 1 h is not split: her energy is unknown.
  const json &carol = report["users"][2];
  CHECK(carol["user"] == "carol");
  CHECK(carol["held_gpu_hours"] == 1.0);
  CHECK(carol["idle_percent"] == 100.0);
  CHECK(carol["memory_gib_hours"] == 4.0);
  CHECK(carol["energy_wh"].is_null());
  CHECK(carol["energy_unknown_gpu_hours"] == 1.0);

  // That process's user is unknown: a row of its own, user null, memory and energy unknown.
  const json &unknown = report["users"][3];
  CHECK(unknown["user"].is_null());
  CHECK(unknown["held_gpu_hours"] == 1.0);
  CHECK(unknown["memory_gib_hours"].is_null());
  CHECK(unknown["memory_unknown_gpu_hours"] == 1.0);
  CHECK(unknown["energy_wh"].is_null());
  CHECK(unknown["finding"] == "(unknown user) held 1 GPU for 1.0 GPU-hours, 100% of it idle: 1.0 "
                              "idle GPU-hours");

  // 4 GPUs x 3 h with process lists; GPU 3 had none in samples 10-12: 0.5 h x 60 W = 30 Wh.
  const json &totals = report["users_totals"];
  CHECK(totals["process_list_gpu_hours"] == 12.0);
  CHECK(totals["no_process_list_gpu_hours"] == 0.0);
  CHECK(totals["unsplit_energy_wh"] == 70.0);
  CHECK(totals["no_process_energy_wh"] == 30.0);
  CHECK(totals["left_out_gpu_hours"] == 0.0);
}

TEST_CASE("report: the Users table in the text report") {
  Run run = test::run_agent("report " + fixture("shared-3users.jsonl"));
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  CHECK_THAT(run.out, Catch::Contains(
                          "Users (a GPU counts for a user while one of the user's processes is on "
                          "it)\n"
                          "    GPUs   held GPU-h   idle GPU-h     idle   memory GiB-h    energy Wh"
                          "  user\n"
                          "       3        9.00         3.00    33.3%         180.00      2340.00 "
                          " alice\n"
                          "          held GPU 0 3.00 h, GPU 1 3.00 h, GPU 2 3.00 h\n"
                          "       2        4.50         0.00     0.0%         102.00      1650.00 "
                          " bob\n"
                          "          held GPU 2 3.00 h, GPU 3 1.50 h\n"
                          "       1        1.00         1.00   100.0%           4.00      unknown "
                          " carol\n"
                          "          held GPU 3 1.00 h\n"
                          "       1        1.00         1.00   100.0%        unknown      unknown "
                          " (unknown user)\n"
                          "          held GPU 3 1.00 h\n"));
  CHECK_THAT(run.out, Catch::Contains("  process lists for 12.00 of 12.00 GPU-hours covered; 70.00 "
                                      "Wh of shared GPUs not split (a share unknown); 30.00 Wh "
                                      "drawn with no process\n"));
  CHECK_THAT(run.out, Catch::Contains("\n  warning   alice held 3 GPUs for 9.0 GPU-hours, "
                                      "33% of it idle: 3.0 idle GPU-hours\n"));
  CHECK(run.out.find("* counts only") == std::string::npos); // no figure is partly known

  // A CSV log has no process lists: no Users section, and the JSON's list is empty.
  Run csv = test::run_agent("report " + fixture("training-2gpu.csv"));
  CHECK(csv.out.find("Users") == std::string::npos);
  CHECK(csv.out.find("\n  host CPUs    ") == std::string::npos); // no such line; the finding
  CHECK_THAT(csv.out, Catch::Contains("host CPUs, disk reads and network receive unknown"));
  json old = report_json(fixture("training-2gpu.csv"));
  CHECK(old["users"] == json::array());
  CHECK(old["users_totals"]["process_list_gpu_hours"] == 0.0);
  CHECK(old["gpus"][0]["starved_host_cpu"].is_null());
}

TEST_CASE("report: a GPU's energy goes to its users by memory share, never by a guess") {
  // 10 stretches of 1/6 h at 360 W: 60 Wh. ann holds 6 GiB, ben 18 GiB: 1/4 and 3/4.
  json shared = ledger_of({process_of("ann", 6144), process_of("ben", 18432)});
  CHECK((*user_named(shared, "ann"))["energy_wh"] == 15.0);
  CHECK((*user_named(shared, "ben"))["energy_wh"] == 45.0);
  CHECK((*user_named(shared, "ann"))["memory_gib_hours"] == 1.0); // 6 GiB x 1/6 h
  CHECK((*user_named(shared, "ann"))["held_gpu_hours"] == Approx(0.167));
  CHECK(shared["users_totals"]["unsplit_energy_wh"] == 0.0);

  // ben's memory unknown: the shares cannot be told, so neither gets energy. ann's memory still
  // counts; ben's GiB-hours are unknown.
  json unknown = ledger_of({process_of("ann", 6144), process_of("ben", nullptr)});
  CHECK((*user_named(unknown, "ann"))["energy_wh"].is_null());
  CHECK((*user_named(unknown, "ben"))["energy_wh"].is_null());
  CHECK((*user_named(unknown, "ann"))["memory_gib_hours"] == 1.0);
  CHECK((*user_named(unknown, "ben"))["memory_gib_hours"].is_null());
  CHECK((*user_named(unknown, "ben"))["memory_unknown_gpu_hours"] == Approx(0.167));
  CHECK(unknown["users_totals"]["unsplit_energy_wh"] == 60.0);

  // A sole user takes all the energy whatever the memory; two processes hold the GPU once.
  json sole = ledger_of({process_of("ann", nullptr), process_of("ann", 6144)});
  REQUIRE(sole["users"].size() == 1);
  CHECK(sole["users"][0]["energy_wh"] == 60.0);
  CHECK(sole["users"][0]["held_gpu_hours"] == Approx(0.167));
  CHECK(sole["users"][0]["memory_gib_hours"] == 1.0);                   // the known process
  CHECK(sole["users"][0]["memory_unknown_gpu_hours"] == Approx(0.167)); // ...and one unknown
  Run text = test::run_agent("report " + json_log({{0, 50, 30720, 360, {process_of("ann", 1)}}}));
  CHECK(text.exit_code == 0);

  // An empty process list: the energy was drawn with no process. No list at all: unknown users.
  json none = ledger_of(json::array());
  CHECK(none["users"] == json::array());
  CHECK(none["users_totals"]["no_process_energy_wh"] == 60.0);
  CHECK(none["users_totals"]["process_list_gpu_hours"] == Approx(0.167));
  json unlisted = ledger_of(nullptr);
  CHECK(unlisted["users"] == json::array());
  CHECK(unlisted["users_totals"]["no_process_list_gpu_hours"] == Approx(0.167));
  CHECK(unlisted["users_totals"]["no_process_energy_wh"] == 0.0);
}

TEST_CASE("report: starved while the host CPUs are busy is CPU-bound; while they idle, I/O") {
  // 24 of the 60 stretches starved (8 % while holding 30 GiB); the host CPUs 96 % busy in them.
  json cpu = report_json(fixture("cpu-bound.jsonl"));
  const json &gpu = cpu["gpus"][0];
  CHECK(gpu["starved_percent"] == 40.0);
  CHECK(gpu["starved_host_cpu"]["mean_busy_percent"] == 96.0);
  CHECK(gpu["starved_host_cpu"]["busy_percent"] == 100.0);
  CHECK(gpu["starved_host_cpu"]["idle_percent"] == 0.0);
  CHECK(gpu["starved_host_cpu"]["known_percent"] == 100.0);
  // dave's own process used 58 of the 61.4 busy cores: his input pipeline.
  CHECK(gpu["finding"] == "starved 40% of 10 min (host CPUs 96% busy, this GPU's processes 58.0 "
                          "of 61.4 busy cores; disk reads and network receive unknown): the "
                          "input pipeline is CPU-bound; add data-loader workers or move "
                          "preprocessing to the GPU");
  Run text = test::run_agent("report --details " + fixture("cpu-bound.jsonl"));
  CHECK_THAT(text.out, Catch::Contains("  host CPUs    while starved: 96.0% busy on average; at "
                                       "least 90% busy for 100.0% of that time, under 50% for "
                                       "0.0%, not logged for 0.0%\n"));

  // The same GPU with the host CPUs 10 % busy while it waits.
  json io = report_json(fixture("io-bound.jsonl"));
  CHECK(io["gpus"][0]["finding"] ==
        "starved 40% of 10 min (host CPUs 10% busy; disk reads and network receive unknown): "
        "waiting on I/O or synchronisation, not on the CPU; check storage and network "
        "reads and waits between processes");

  // Neither where the host CPUs were 60 % busy, nor without a host CPU reading
  // (training-2gpu.csv): the starved finding as before.
  std::vector<JsonSample> middling;
  for (int i = 0; i <= 10; ++i)
    middling.push_back({60.0 * i, 10, 30720, 150, nullptr, 60.0});
  CHECK(report_json(json_log(middling))["gpus"][0]["finding"] ==
        "starved 100% of 10 min while holding 30 GiB (host CPUs 60% busy; disk reads and "
        "network receive unknown): check the data loader");
  // shared-3users.jsonl's GPU 1, held at 0 % by alice with the host CPUs 60 % busy, waits for
  // nothing: idle but held, not starved.
  json between = report_json(fixture("shared-3users.jsonl"));
  CHECK(between["gpus"][1]["finding"] ==
        "idle but held by alice for 3 h (100% of 3 h), holding 20 GiB: nobody else can "
        "use it; end the idle job or free the GPU");
  CHECK(report_json(fixture("training-2gpu.csv"))["gpus"][0]["finding"] ==
        "starved 41% of 8 min 30 s while holding 30 GiB (host CPUs, disk reads and "
        "network receive unknown): check the data loader");

  // Host CPUs busy but the GPU never starved: nothing about the CPU.
  std::vector<JsonSample> busy;
  for (int i = 0; i <= 10; ++i)
    busy.push_back({10.0 * i, 97, 30720, 600, nullptr, 99.0});
  CHECK_THAT(report_json(json_log(busy))["gpus"][0]["finding"].get<std::string>(),
             Catch::StartsWith("busy over 1 min 40 s: mean utilization 97%"));

  // "Most of that time" is of all the starved time: 96 % busy in 4 of its 10 stretches, unknown in
  // the other 6, is not enough to call it CPU-bound.
  std::vector<JsonSample> sparse;
  for (int i = 0; i <= 10; ++i)
    sparse.push_back({60.0 * i, 8, 30720, 150, nullptr, i >= 1 && i <= 4 ? json(96.0) : json()});
  json partly = report_json(json_log(sparse));
  CHECK(partly["gpus"][0]["starved_host_cpu"]["known_percent"] == 40.0);
  CHECK(partly["gpus"][0]["finding"] ==
        "starved 100% of 10 min while holding 30 GiB (host CPUs 96% busy; disk reads and "
        "network receive unknown): check the data loader");
}

namespace {

// 31 samples a minute apart (30 minutes) of GPU 0 at `utilization(i)` holding 79 GiB, held by
// these processes, with the host's CPUs 97 % busy: the report of that log, through the binary.
json held_gpu_report(const std::function<int(int)> &utilization, const json &processes) {
  std::vector<JsonSample> samples;
  for (int i = 0; i <= 30; ++i) {
    JsonSample sample{60.0 * i, utilization(i), 80896, 90};
    sample.processes = processes;
    sample.host_cpu = 97.0;
    samples.push_back(sample);
  }
  return report_json(json_log(samples));
}

} // namespace

TEST_CASE("report: a GPU held at 0 % is idle but held by its users, never starved") {
  // The issue's case: 0 % for 30 minutes, 79 GiB held, the host's CPUs busy. Memory nearly full
  // too, but the idle job holding it explains that.
  json alice = json::array({process_of("alice", 80896)});
  json report = held_gpu_report([](int) { return 0; }, alice);
  const json &gpu = report["gpus"][0];
  CHECK(gpu["finding"] == "idle but held by alice for 30 min (100% of 30 min), holding 79 "
                          "GiB: nobody else can use it; end the idle job or free the GPU");
  CHECK(gpu["severity"] == "warning");
  for (const char *wrong : {"starved", "data loader", "storage", "CPU-bound"})
    CHECK_THAT(gpu["finding"].get<std::string>(), !Catch::Contains(wrong));

  // Two users, and a stretch without a process list: each figure only where the log knows it.
  std::vector<JsonSample> samples;
  for (int i = 0; i <= 30; ++i) {
    JsonSample sample{60.0 * i, 0, 80896, 90};
    if (i > 10)
      sample.processes = json::array({process_of("bob", 40448), process_of("alice", 40448)});
    samples.push_back(sample);
  }
  CHECK(report_json(json_log(samples))["gpus"][0]["finding"] ==
        "idle but held by alice and bob for 30 min (100% of 30 min), holding 79 GiB; by "
        "whom is not logged for 10 min of it: nobody else can use it; end the idle job or "
        "free the GPU");

  // A CSV log has no process list: who is not said, never guessed.
  std::vector<Row> rows = every_second(61, [](Row &row, int) {
    row.used = "80896";
    row.utilization = "0";
  });
  CHECK(report_of(log_of(rows)).gpus.at(0).finding ==
        "idle but held for 1 min (100% of 1 min), holding 79 GiB; the log does not say by "
        "whom (no process list): nobody else can use it; end the idle job or free the GPU");

  // The text and HTML reports say the same, and nothing of starving.
  Run text = test::run_agent("report " +
                             json_log(std::vector<JsonSample>{{0, 0, 80896, 90, alice, 97.0},
                                                              {60, 0, 80896, 90, alice, 97.0},
                                                              {120, 0, 80896, 90, alice, 97.0}}));
  CHECK_THAT(text.out,
             Catch::Contains("  warning   GPU 0 (alice): idle but held by alice for 2 min"));
  CHECK_THAT(text.out, !Catch::Contains("data loader"));
}

TEST_CASE("report: who holds an idle GPU is a name from the log: printable, and bounded") {
  // Any local user picks their process's user name's bytes no more than its command, but a log
  // handed over may hold anything: a terminal escape and a line break in a user name.
  json hostile = json::array({process_of("\x1b]0;owned\x07eve\nroot held it", 80896)});
  std::vector<JsonSample> samples;
  for (int i = 0; i <= 2; ++i)
    samples.push_back({60.0 * i, 0, 80896, 90, hostile, nullptr});
  std::string log = json_log(samples);
  Run text = test::run_agent("report " + log);
  REQUIRE(text.exit_code == 0);
  CHECK(text.out.find('\x1b') == std::string::npos);
  CHECK(text.out.find('\x07') == std::string::npos);
  CHECK_THAT(text.out, Catch::Contains(": idle but held by \xEF\xBF\xBD]0;owned"));
  CHECK_THAT(text.out, !Catch::Contains("\nroot held it"));

  // 1100 users on one GPU: three named, the rest counted, memory bounded by report_max_users.
  json crowd = json::array();
  for (int u = 0; u < 1100; ++u)
    crowd.push_back(process_of("user" + std::to_string(1000 + u), 64));
  std::vector<JsonSample> crowded;
  for (int i = 0; i <= 2; ++i)
    crowded.push_back({60.0 * i, 0, 80896, 90, crowd, nullptr});
  CHECK_THAT(report_json(json_log(crowded))["gpus"][0]["finding"].get<std::string>(),
             Catch::StartsWith("idle but held by user1000, user1001, user1002 and more than 1021 "
                               "others for 2 min"));
}

TEST_CASE("report: a job that alternates between work and waiting is still starved") {
  // alice's process keeps 60 of the 64 CPUs busy.
  json alice = json::array({process_of("alice", 80896, 6000.0)});
  // 100 % one minute, 0 % the next, the host's CPUs busy: starved half the time, CPU-bound.
  json report = held_gpu_report([](int i) { return i % 2 ? 100 : 0; }, alice);
  CHECK(report["gpus"][0]["finding"] ==
        "starved 50% of 30 min (host CPUs 97% busy, this GPU's processes 60.0 of 62.1 busy "
        "cores; disk reads and network receive unknown): the input pipeline is CPU-bound; add "
        "data-loader workers or move preprocessing to the GPU");
  // Working a little all the time (10 %) is waiting most of it.
  CHECK_THAT(
      held_gpu_report([](int) { return 10; }, alice)["gpus"][0]["finding"].get<std::string>(),
      Catch::StartsWith("starved 100% of 30 min"));
  // Idle while held for most of the time, with hardly any work (1 minute in 30) between: idle but
  // held is what explains it.
  CHECK_THAT(held_gpu_report([](int i) { return i == 15 ? 100 : 0; }, alice)["gpus"][0]["finding"]
                 .get<std::string>(),
             Catch::StartsWith("idle but held by alice for 29 min (97% of 30 min)"));
}

TEST_CASE("report: a starved GPU says what it waited on, with figures, unknown where unlogged") {
  // A JSON log: the host CPUs 20 % busy, the disks reading 250 MB/s, the network not logged.
  std::vector<JsonSample> samples;
  for (int i = 0; i <= 10; ++i)
    samples.push_back({60.0 * i, 10, 30720, 150, nullptr, 20.0, 250e6, nullptr});
  json report = report_json(json_log(samples));
  const json &gpu = report["gpus"][0];
  CHECK(gpu["finding"] == "starved 100% of 10 min (host CPUs 20% busy, disk reads 250.0 MB/s; "
                          "network receive unknown): waiting on I/O or synchronisation, not on "
                          "the CPU; check storage and network reads and waits between processes");
  CHECK(gpu["starved_host_io"]["disk_read_bytes_per_second"] == 250e6);
  CHECK(gpu["starved_host_io"]["network_receive_bytes_per_second"].is_null());

  // The CSV log as the agent writes it (format_csv), read back: every figure known.
  std::string log = nvsmi::csv_header() + "\n";
  for (int i = 0; i <= 10; ++i) {
    nvsmi::Snapshot sample = test::t4_snapshot();
    sample.timestamp->minute = 3 + i;
    sample.gpus[0].utilization_gpu_percent = 10;
    sample.host = test::observed_host();
    sample.host->cpu_percent = 20;
    sample.host->disk_read_bytes_per_second = 250e6;
    sample.host->disk_write_bytes_per_second = 1e6;
    sample.host->network_receive_bytes_per_second = 4e6;
    sample.host->network_send_bytes_per_second = 2e6;
    log += nvsmi::format_csv(sample, false);
  }
  std::string path = test::temporary_folder() + "/gpu-log.csv";
  test::write_file(path, log);
  json csv = report_json(quote(path));
  CHECK(csv["rows"]["bad"]["total"] == 0);
  CHECK(csv["gpus"][0]["finding"] ==
        "starved 100% of 10 min (host CPUs 20% busy, disk reads 250.0 MB/s, network receive "
        "4.0 MB/s): waiting on I/O or synchronisation, not on the CPU; check storage and network "
        "reads and waits between processes");
  CHECK(csv["gpus"][0]["starved_host_io"]["network_receive_bytes_per_second"] == 4e6);

  // A rate that is no rate (negative, a word) makes its row bad, naming the column.
  std::string bad_log = log;
  bad_log.replace(bad_log.find(",250000000.00,"), 14, ",-5,");
  bad_log.replace(bad_log.find(",250000000.00,"), 14, ",fast,");
  test::write_file(path, bad_log);
  json bad = report_json(quote(path));
  CHECK(bad["rows"]["bad"]["unparsable"] == 2);
  CHECK_THAT(bad["rows"]["bad"]["examples"][0].get<std::string>(),
             Catch::Contains("host.disk.read"));
}

TEST_CASE("report: the CSV log's power.limit, fan.speed, host.cpu and host.memory.used columns") {
  // host-columns.csv: 12 of 30 stretches starved with the host CPUs 95 % busy; the busy rows draw
  // 690 W of a logged 700 W limit (over 98 %), so 18 of 30 stretches are at the limit.
  json report = report_json(fixture("host-columns.csv"));
  CHECK(report["rows"]["bad"]["total"] == 0);
  const json &gpu = report["gpus"][0];
  CHECK(gpu["power_limit_percent"] == 60.0);
  CHECK(gpu["starved_host_cpu"]["mean_busy_percent"] == 95.0);
  // A CSV log does not say whose processes kept the CPUs busy: no verdict on the job's pipeline.
  CHECK(gpu["finding"] == "starved 40% of 5 min (host CPUs 95% busy; disk reads and network "
                          "receive unknown): whose processes kept the CPUs busy is not in the "
                          "log; check the data loader and what else runs on the host");
  CHECK(report["users"] == json::array()); // a CSV log lists no processes

  // A host.cpu that is not a percentage, or over 100 %, makes its row bad.
  std::string header_line = header.substr(0, header.size() - 1) +
                            ",power.limit [W],fan.speed [%],host.cpu [%],host.memory.used [MiB]\n";
  std::string rows = log_of(every_second(4, [](Row &, int) {})).substr(header.size());
  std::string cells[] = {",700.00,40,95.0,1000\n", ",700.00,40,abc,1000\n", ",700.00,40,150,1000\n",
                         ",700.00,40,,1000\n"};
  std::string log = header_line;
  std::size_t start = 0;
  for (const std::string &cell : cells) {
    std::size_t end = rows.find('\n', start);
    log += rows.substr(start, end - start) + cell;
    start = end + 1;
  }
  std::string path = test::temporary_folder() + "/gpu-log.csv";
  test::write_file(path, log);
  json bad = report_json(quote(path));
  CHECK(bad["rows"]["used"] == 2);
  CHECK(bad["rows"]["bad"]["unparsable"] == 2);
  CHECK_THAT(bad["rows"]["bad"]["examples"][0].get<std::string>(), Catch::Contains("host.cpu"));
  CHECK_THAT(bad["rows"]["bad"]["examples"][1].get<std::string>(),
             Catch::Contains("host.cpu is over 100 %"));
}

TEST_CASE("report: bad JSON lines are counted and skipped, never fatal") {
  // bad-lines.jsonl: 6 good samples, and between them a line cut short, a line that is not JSON,
  // another schema, a null timestamp, a temperature "hot", a utilization of 150, a name that is
  // not UTF-8, a line nested 100 deep, a sample older than the one before, and an unfinished last
  // line.
  json report = report_json(fixture("bad-lines.jsonl"));
  const json &bad = report["rows"]["bad"];
  CHECK(report["rows"]["read"] == 16);
  CHECK(report["rows"]["used"] == 6);
  CHECK(bad["total"] == 10);
  CHECK(bad["unparsable"] == 7);
  CHECK(bad["no_timestamp"] == 1);
  CHECK(bad["out_of_order"] == 1);
  CHECK(bad["unfinished"] == 1);
  CHECK(bad["examples"][0] ==
        test::fixture_path("logs/bad-lines.jsonl") + ":2: not JSON: syntax error at byte 55");
  CHECK_THAT(bad["examples"][2].get<std::string>(),
             Catch::EndsWith(":5: not an nvsmi-agent.snapshot/1 line (schema)"));
  CHECK_THAT(bad["examples"][4].get<std::string>(),
             Catch::EndsWith(":7: gpus[0].temperature_c: expected a whole number or null"));
  CHECK(report["gpus"][0]["time"]["samples"] == 6);
  CHECK(report["users"][0]["user"] == "erin");

  Run text = test::run_agent("report " + fixture("bad-lines.jsonl"));
  CHECK(text.exit_code == 0);
  // The bad rows leave figures out: said by default, the rest of the rows with --details.
  CHECK_THAT(text.out, Catch::Contains("\nrows: 10 of 16 bad (7 unparsable, 1 no_timestamp, 1 "
                                       "out_of_order, 1 unfinished)\n  "));
  Run details = test::run_agent("report --details " + fixture("bad-lines.jsonl"));
  CHECK_THAT(details.out, Catch::Contains("rows: 16 read, 6 used, 10 bad (7 unparsable, 1 "
                                          "no_timestamp, 1 out_of_order, 1 unfinished)"));
}

TEST_CASE("report: a JSON line may be long; past 1 MiB it ends that file's reading") {
  // 3000 processes: a line of about 400 KB, far past the 64 KiB of a CSV line.
  json many = json::array();
  for (int i = 0; i < 3000; ++i)
    many.push_back(process_of("user" + std::to_string(i % 3), 10));
  std::vector<JsonSample> samples;
  for (int i = 0; i <= 3; ++i)
    samples.push_back({10.0 * i, 50, 30720, 360, many});
  json report = report_json(json_log(samples));
  CHECK(report["rows"]["used"] == 4);
  CHECK(report["users"].size() == 3);

  std::string path = test::temporary_folder() + "/huge.jsonl";
  test::write_file(path,
                   json_line({0}) + "{" + std::string(1100000, ' ') + "}\n" + json_line({10}));
  json huge = report_json(quote(path));
  CHECK(huge["rows"]["used"] == 1);
  CHECK(huge["rows"]["bad"]["too_long"] == 1);
  CHECK_THAT(huge["rows"]["bad"]["examples"][0].get<std::string>(),
             Catch::Contains(":2: line longer than 1048576 bytes"));
}

TEST_CASE("report: rotated JSON logs, given in any order") {
  std::string whole = test::read_file(test::fixture_path("logs/shared-3users.jsonl"));
  std::size_t middle = 0;
  for (int line = 0; line < 10; ++line)
    middle = whole.find('\n', middle) + 1;
  std::string folder = test::temporary_folder();
  test::write_file(folder + "/gpu-log.jsonl.1", whole.substr(0, middle));
  test::write_file(folder + "/gpu-log.jsonl", whole.substr(middle));
  json rotated = report_json(quote(folder) + "/gpu-log.jsonl*"); // .jsonl, then .jsonl.1
  json expected = report_json(fixture("shared-3users.jsonl"));
  CHECK(rotated["files"][0].get<std::string>().find("gpu-log.jsonl.1") != std::string::npos);
  CHECK(rotated["rows"]["bad"]["total"] == 0);
  CHECK(rotated["users"] == expected["users"]);
  CHECK(rotated["users_totals"] == expected["users_totals"]);
}

TEST_CASE("report: names from a log are escaped in HTML and cannot break a text line") {
  // Samples 10 min apart: each user holds the GPU for 1/6 h.
  std::string log = json_log({{0, 50, 30720, 360, {process_of("<b>eve</b> & \"co\"", 1024)}},
                              {600, 50, 30720, 360, {process_of("<b>eve</b> & \"co\"", 1024)}},
                              {1200, 0, 30720, 360, {process_of("mal\u001b[2J\nfinding  x", 1)}}});
  std::string out = test::temporary_folder() + "/report.html";
  Run run = test::run_agent("report --format html --output " + quote(out) + " " + log);
  REQUIRE(run.exit_code == 0);
  std::string html = test::read_file(out);
  CHECK_THAT(html, Catch::Contains("<table class=\"users\">"));
  CHECK_THAT(html, Catch::Contains("<td>&lt;b&gt;eve&lt;/b&gt; &amp; &quot;co&quot;</td><td>GPU 0 "
                                   "0.17 h</td><td>1</td><td>0.17</td>"));
  CHECK(html.find("<b>eve") == std::string::npos);
  CHECK_THAT(html, Catch::Contains("<p class=\"finding info\"><span class=\"severity\">info</span> "
                                   "&lt;b&gt;eve&lt;/b&gt; &amp; &quot;co&quot;"
                                   " held 1 GPU for 0.17 GPU-hours, 0% of it idle: in use</p>"));

  Run text = test::run_agent("report " + log);
  CHECK(text.out.find('\x1b') == std::string::npos);
  CHECK_THAT(text.out, Catch::Contains(" mal\xEF\xBF\xBD[2J\xEF\xBF\xBD"
                                       "finding  x\n"));
  CHECK(text.out.find("\nfinding  x") == std::string::npos);
  // JSON keeps the name as it was, escaped by JSON itself.
  json report = report_json(log);
  CHECK(user_named(report, "mal\u001b[2J\nfinding  x") != nullptr);

  // A GPU's name from a JSON line may hold a newline or a C1 CSI (U+009B) too.
  std::string line = json_line({0});
  line.replace(line.find("NVIDIA H100"), 11, "H100\\nGPU 9\\u009b2J\\u202eevil");
  std::string path = test::temporary_folder() + "/gpu-log.jsonl";
  test::write_file(path, line + json_line({10}));
  Run named = test::run_agent("report --details " + quote(path));
  CHECK_THAT(named.out, Catch::Contains("GPU 0  H100\xEF\xBF\xBDGPU 9\xEF\xBF\xBD"
                                        "2J\xEF\xBF\xBD"
                                        "evil  GPU-0"));
  CHECK(named.out.find("\xC2\x9B") == std::string::npos);
  // Nor a right-to-left override, which would show what follows it backwards (the report once
  // had a filter of its own that let it through; it now takes core/screen_text.hpp's controls).
  CHECK(named.out.find("\xE2\x80\xAE") == std::string::npos);
}

namespace {

std::string report_html_of(const std::string &arguments) {
  std::string out = test::temporary_folder() + "/page.html";
  Run run = test::run_agent("report --format html --output " + quote(out) + " " + arguments);
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  return test::read_file(out);
}

std::size_t occurrences(const std::string &text, const std::string &part) {
  std::size_t count = 0;
  for (std::size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1))
    ++count;
  return count;
}

// The text of every match of `pattern`'s first group, in order.
std::vector<std::string> all_of(const std::string &text, const std::string &pattern) {
  std::vector<std::string> out;
  std::regex expression(pattern);
  for (auto it = std::sregex_iterator(text.begin(), text.end(), expression);
       it != std::sregex_iterator(); ++it)
    out.push_back((*it)[1]);
  return out;
}

} // namespace

TEST_CASE("report: the HTML page starts with a summary row for every GPU") {
  std::string html = report_html_of(fixture("two-limits-midnight.csv"));
  std::size_t summary = html.find("<table class=\"summary\">");
  REQUIRE(summary != std::string::npos);
  CHECK(summary < html.find("<section id=\"gpu-0\">"));
  CHECK(occurrences(html, "<tr><td><a href=\"#gpu-") == 2);
  CHECK_THAT(html, Catch::Contains("<td>NVIDIA L4</td><td>41</td><td>95 / 95 %</td><td>20.0 / "
                                   "22.5 GiB</td><td>72 / 72 / 72 W</td><td>70 \u00b0C</td>"));
  // A log without a power limit: "-" in its place, never 0.
  CHECK_THAT(report_html_of(fixture("training-2gpu.csv")),
             Catch::Contains("<td>419 / 612 / - W</td><td>64 \u00b0C</td><td>59.4 Wh</td>"));
}

TEST_CASE("report: the HTML time axis shows the log's clock times at round intervals") {
  // The log's own offset (-05:00), whatever the reader's zone; over midnight, with the dates.
  std::string page = test::temporary_folder() + "/tz.html";
  Run run =
      test::run_shell("TZ=Asia/Tokyo " + quote(AGENT_BIN) + " report --format html --output " +
                      quote(page) + " " + fixture("two-limits-midnight.csv"));
  REQUIRE(run.exit_code == 0);
  std::string html = test::read_file(page);
  std::vector<std::string> ticks = all_of(html, "class=\"x-tick[^\"]*\" style=\"[^\"]*\">([^<]*)");
  REQUIRE(ticks.size() == 8 * 9); // 2 GPUs x 4 charts, 9 ticks each
  CHECK(std::vector<std::string>(ticks.begin(), ticks.begin() + 9) ==
        std::vector<std::string>{"23:40", "23:45", "23:50", "23:55", "00:00", "00:05", "00:10",
                                 "00:15", "00:20"});
  CHECK(all_of(html, "<small>(\\d{4}-\\d\\d-\\d\\d)</small>").at(0) == "2024-03-14");
  CHECK(all_of(html, "<small>(\\d{4}-\\d\\d-\\d\\d)</small>").at(1) == "2024-03-15");
  CHECK_THAT(html, Catch::Contains("(UTC-05:00)"));

  // Ten minutes at +01:00: every 2 min, no date; 21 s: every 5 s with seconds.
  std::vector<std::string> short_ticks = all_of(report_html_of(fixture("training-2gpu.csv")),
                                                "class=\"x-tick[^\"]*\" style=\"[^\"]*\">([^<]*)");
  CHECK(std::vector<std::string>(short_ticks.begin(), short_ticks.begin() + 6) ==
        std::vector<std::string>{"10:00", "10:02", "10:04", "10:06", "10:08", "10:10"});
  std::string seconds = report_html_of(fixture("nvidia-smi-units.csv"));
  CHECK_THAT(all_of(seconds, "class=\"x-tick[^\"]*\" style=\"[^\"]*\">([^<]*)").at(1),
             Catch::Matches("10:21:(35|40)"));
  CHECK(seconds.find("<small>20") == std::string::npos);
}

TEST_CASE("report: every GPU's chart of a quantity shares one value axis") {
  std::string html = report_html_of(fixture("two-limits-midnight.csv"));
  CHECK(occurrences(html, "data-quantity=\"utilization\" data-axis-max=\"100\"") == 2);
  // Power: up to the largest limit (the H100's 700 W) on the L4's 72 W chart too.
  CHECK(occurrences(html, "data-quantity=\"power\" data-axis-max=\"700\"") == 2);
  CHECK(occurrences(html, "data-quantity=\"memory\" data-axis-max=\"80\"") == 2);
  CHECK(occurrences(html, "data-quantity=\"temperature\" data-axis-max=\"100\"") == 2);
  // Round ticks with the unit on the axis: 0, 100, ..., 700 W; °C.
  std::size_t power = html.find("data-quantity=\"power\"");
  std::string chart = html.substr(power, html.find("</figure>", power) - power);
  CHECK(all_of(chart, "class=\"y-tick\" style=\"[^\"]*\">([^<]*)") ==
        std::vector<std::string>{"0", "100", "200", "300", "400", "500", "600", "700"});
  CHECK_THAT(chart, Catch::Contains("<span class=\"unit\">W</span>"));
  CHECK_THAT(html, Catch::Contains("<span class=\"unit\">\u00b0C</span>"));
  CHECK_THAT(html, Catch::Contains("max 93 \u00b0C"));
}

TEST_CASE("report: the power limit is drawn, with its legend entry, where the log has it") {
  std::string with_limit = report_html_of(fixture("two-limits-midnight.csv"));
  CHECK(occurrences(with_limit, "</svg>power limit</li>") == 2);
  CHECK(occurrences(with_limit, "<polyline class=\"line ref\" stroke=\"#444\"") == 2);
  std::string without = report_html_of(fixture("training-2gpu.csv"));
  CHECK(without.find("power limit</li>") == std::string::npos);
  CHECK(without.find("stroke=\"#444\"") == std::string::npos);
  // No limit: the axis ends above the largest draw (612.4 W).
  CHECK(occurrences(without, "data-quantity=\"power\" data-axis-max=\"700\"") == 2);
}

TEST_CASE("report: every line drawn in an HTML chart has a legend entry") {
  for (const char *log : {"two-limits-midnight.csv", "training-2gpu.csv", "shared-3users.jsonl"}) {
    std::string html = report_html_of(fixture(log));
    std::size_t charts = 0;
    for (std::size_t at = html.find("<figure"); at != std::string::npos;
         at = html.find("<figure", at + 1), ++charts) {
      std::string figure = html.substr(at, html.find("</figure>", at) - at);
      std::size_t legend = figure.find("<ul class=\"legend\">");
      REQUIRE(legend != std::string::npos);
      std::string pattern = "<(?:polyline|line) (class=\"line[^\"]*\" stroke=\"[^\"]*\")";
      std::vector<std::string> drawn = all_of(figure.substr(0, legend), pattern);
      std::vector<std::string> keys = all_of(figure.substr(legend), pattern);
      INFO(log << ": " << figure.substr(0, 60));
      CHECK(!drawn.empty());
      for (const std::string &line : drawn)
        CHECK(std::find(keys.begin(), keys.end(), line) != keys.end());
    }
    CHECK(charts > 0);
  }
}

TEST_CASE("report: findings carry their severity in HTML, JSON and text") {
  std::string html = report_html_of(fixture("two-limits-midnight.csv"));
  CHECK_THAT(html, Catch::Contains("<p class=\"finding warning\"><span "
                                   "class=\"severity\">warning</span> at its power limit 100%"));
  CHECK_THAT(html, Catch::Contains("<p class=\"finding critical\"><span "
                                   "class=\"severity\">critical</span> reached 93 \u00b0C"));
  CHECK_THAT(html, Catch::Contains("<td class=\"finding critical\"><span "
                                   "class=\"severity\">critical</span> reached 93 \u00b0C"));
  CHECK_THAT(
      report_html_of(fixture("training-2gpu.csv")),
      Catch::Contains("<p class=\"finding info\"><span class=\"severity\">info</span> idle"));

  json report = report_json(fixture("two-limits-midnight.csv"));
  CHECK(report["gpus"][0]["severity"] == "warning");
  CHECK(report["gpus"][1]["severity"] == "critical");
  CHECK(report["gpus"][1]["finding"] == "reached 93 \u00b0C in 40 min: check cooling");
  json users = report_json(fixture("shared-3users.jsonl"));
  for (const json &user : users["users"]) {
    if (user["user"] == "alice") // a third of her GPU time idle
      CHECK(user["severity"] == "warning");
    if (user["user"] == "bob") // in use
      CHECK(user["severity"] == "info");
  }

  // The text: the word before each finding, the most serious first.
  Run text = test::run_agent("report " + fixture("two-limits-midnight.csv"));
  CHECK_THAT(text.out, Catch::Contains("\n  critical  GPU 1: reached 93 \u00b0C in 40 min: check "
                                       "cooling\n  warning   GPU 0: at its power limit 100% of "
                                       "40 min"));
}

// Issue 24, item 5: run's report is a section of report, its samples fed in memory.
namespace {

// A sample of GPU 0 (and GPU 1, which a job's report leaves out), `second` seconds after
// 2024-03-14T10:00:00+01:00, with one process of alice's holding 4096 MiB on GPU 0.
nvsmi::Snapshot job_sample(int second) {
  nvsmi::Snapshot snapshot;
  snapshot.timestamp = nvsmi::parse_iso8601_timestamp(stamp(second));
  for (int index = 0; index < 2; ++index) {
    nvsmi::Gpu &gpu = snapshot.gpus.emplace_back();
    gpu.index = index;
    gpu.uuid = "GPU-00000000-0000-0000-0000-00000000000" + std::to_string(index);
    gpu.name = "NVIDIA H100";
    gpu.utilization_gpu_percent = 20 * second % 100;
    gpu.memory_total_mib = 81559;
    gpu.memory_used_mib = 4096;
    gpu.power_draw_w = 100.0 + second;
    gpu.temperature_c = 40;
    nvsmi::Process &process = gpu.processes.emplace().emplace_back();
    process.pid = 4242;
    process.name = "python";
    process.used_memory_mib = 4096;
    process.user = "alice";
  }
  return snapshot;
}

nvsmi::JobSummary a_job() {
  nvsmi::JobSummary job;
  job.command = {"train", "\x1b[2Jx"};
  job.exit_code = 3;
  job.seconds = 9;
  nvsmi::JobGpuTally &gpu = job.gpus.emplace_back();
  gpu.gpu.index = 0;
  gpu.gpu.uuid = "GPU-00000000-0000-0000-0000-000000000000";
  gpu.samples = gpu.samples_with_job = 10;
  gpu.memory_total_mib = 81559;
  gpu.peak_job_memory_mib = 4096;
  gpu.strangers.push_back({"bob's \x1b]0;owned\x07sleep", 5});
  return job;
}

nvsmi::ReportOptions gpu0_only() {
  nvsmi::ReportOptions options;
  options.gpus = {"GPU-00000000-0000-0000-0000-000000000000"};
  return options;
}

} // namespace

TEST_CASE("report: samples fed in memory make the report their JSON log makes") {
  std::string log;
  nvsmi::ReportBuilder builder(gpu0_only());
  for (int second = 0; second < 10; ++second) {
    log += nvsmi::format_json(job_sample(second)) + "\n";
    builder.add(job_sample(second));
  }
  nvsmi::ReportOptions options = gpu0_only();
  options.files = {test::temporary_folder() + "/samples.json"};
  test::write_file(options.files[0], log);
  json from_memory = json::parse(nvsmi::format_report_json(builder.finish()));
  json from_file = json::parse(nvsmi::format_report_json(nvsmi::make_report(options)));
  CHECK(from_memory["files"].empty());
  from_memory.erase("files");
  from_file.erase("files");
  CHECK(from_memory["rows"]["used"] == 10);
  CHECK(from_memory["rows"]["other_gpus"] == 10);
  CHECK(from_memory["users"][0]["user"] == "alice");
  CHECK(from_memory.dump() == from_file.dump());
}

TEST_CASE("report: a job is a section of the report model that every format renders") {
  nvsmi::ReportBuilder builder(gpu0_only());
  for (int second = 0; second < 10; ++second)
    builder.add(job_sample(second));
  nvsmi::Report report = builder.finish(a_job());
  REQUIRE(report.job);
  CHECK(report.job->command[0] == "train");
  CHECK(report.rows_used == 10);

  // The job first: what ran, how it ended, its GPU; the report's figures only with --details.
  std::string text = nvsmi::format_report_text(report);
  CHECK_THAT(text, Catch::StartsWith("Job  train [2Jx\n  ended        exit code 3 after 9.0 s\n"
                                     "  GPU 0        NVIDIA H100: peak memory 4096 MiB"));
  CHECK_THAT(text, Catch::Contains("GPU 0 was shared with bob's ]0;ownedsleep for 50% of the run"));
  CHECK(text.find("samples: taken while the job ran") == std::string::npos);
  CHECK(text.find('\x1b') == std::string::npos);
  CHECK(text.find('\x07') == std::string::npos);
  report.options.details = true;
  std::string details = nvsmi::format_report_text(report);
  CHECK_THAT(details, Catch::StartsWith("Job  train [2Jx\n"));
  CHECK_THAT(details, Catch::Contains("\nsamples: taken while the job ran\nrows: "));
  CHECK_THAT(details, Catch::Contains("\n\n1 GPU: "));
  CHECK(details.find("\nGPU 0  NVIDIA H100") > details.find("Job ")); // its evidence after it

  json document = json::parse(nvsmi::format_report_json(report));
  CHECK(document["schema"] == "nvsmi-agent.report/1");
  CHECK(document["gpus"].size() == 1);
  CHECK(document["job"]["command"] == json::array({"train", "[2Jx"}));
  CHECK(document["job"]["exit_code"] == 3);
  CHECK(document["job"]["signal"].is_null());
  CHECK(document["job"]["gpus"][0]["peak_job_memory_mib"] == 4096);
  CHECK(document["job"]["gpus"][0]["batch_growth_estimate"] == 19.9);
  CHECK(document["job"]["gpus"][0]["shared_with"][0]["who"] == "bob's ]0;ownedsleep");
  CHECK(document["job"]["gpus"][0]["shared_with"][0]["percent_of_run"] == 50);

  // Inside the page, first after its heading, once: not pasted after the page's end.
  std::string html = nvsmi::format_report_html(report);
  std::size_t job = html.find("<section class=\"job\"");
  REQUIRE(job != std::string::npos);
  CHECK(html.find("<section class=\"job\"", job + 1) == std::string::npos);
  CHECK(job > html.find("<h1>GPU report</h1>"));
  CHECK(job < html.find("<p class=\"glance\">")); // the answer first, its evidence after
  CHECK(job < html.find("<h2>All GPUs</h2>"));
  CHECK(html.find("</body></html>\n") == html.size() - 15);
  CHECK_THAT(html, Catch::Contains("<h2>Job <code>train [2Jx</code></h2>"));
  CHECK(html.find('\x1b') == std::string::npos);
}

TEST_CASE("report: a job without a usable sample is the job's section alone, in a whole page") {
  nvsmi::ReportBuilder builder(gpu0_only());
  nvsmi::Snapshot unstamped = job_sample(0);
  unstamped.timestamp.reset();
  builder.add(unstamped);
  CHECK_THROWS_AS(nvsmi::ReportBuilder(gpu0_only()).finish(), nvsmi::AgentError);
  nvsmi::Report report = builder.finish(a_job());
  CHECK(report.rows_used == 0);
  CHECK(report.bad.counts[nvsmi::BadRows::no_timestamp] == 2);
  REQUIRE(report.job);
  CHECK(report.job->notes.back() == "no sample of the job's GPUs was taken while it ran");
  json document = json::parse(nvsmi::format_report_json(report));
  CHECK(document.size() == 2); // schema and job
  CHECK(document["job"]["notes"].back() == "no sample of the job's GPUs was taken while it ran");
  CHECK_THAT(nvsmi::format_report_text(report), Catch::StartsWith("Job  train [2Jx\n"));
  std::string html = nvsmi::format_report_html(report);
  CHECK_THAT(html, Catch::Contains("<meta charset=\"utf-8\">")); // a page, styled as report's
  CHECK_THAT(html, Catch::Contains("<style>"));
  CHECK(html.find("<section class=\"job\"") < html.find("</body></html>\n"));
}

TEST_CASE("report: the text report says the fleet at its last sample first, then who held what, "
          "then each GPU with its holders") {
  Run run = test::run_agent("report --details " + fixture("shared-3users.jsonl"));
  INFO(run.out << run.err);
  REQUIRE(run.exit_code == 0);
  // The GPUs as the log's last sample had them, by fleet_summary, and how much there is to act on.
  CHECK_THAT(run.out, Catch::StartsWith("4 GPUs: 2 in use \u00b7 2 idle but held (alice, carol), "
                                        "at the last sample (2026-11-23T13:00:00.000+01:00)\n"
                                        "3 h of samples, 2026-11-23T10:00:00.000+01:00 to "
                                        "2026-11-23T13:00:00.000+01:00; findings: 5 warning, 3 "
                                        "info\nfiles: "));
  std::size_t users = run.out.find("\nUsers ");
  REQUIRE(users != std::string::npos);
  CHECK(users < run.out.find("\nGPU 0 "));
  CHECK_THAT(run.out, Catch::Contains("GPU-00000000-0000-0000-0000-000000000002\n"
                                      "  holders      alice 3.00 h, bob 3.00 h\n"));
  // Most hours first; the unknown user after named ones.
  CHECK_THAT(run.out,
             Catch::Contains("  holders      bob 1.50 h, carol 1.00 h, (unknown user) 1.00 h\n"));

  // A CSV log has no process lists: who held the GPUs is unknown, never "nobody".
  Run csv = test::run_agent("report --details " + fixture("training-2gpu.csv"));
  REQUIRE(csv.exit_code == 0);
  CHECK(occurrences(csv.out, "  holders      unknown (no process lists)\n") == 2);
  CHECK_THAT(csv.out, Catch::StartsWith("2 GPUs: 1 in use \u00b7 1 idle, at the last sample ("));
}

TEST_CASE("report: a GPU with process lists and no process is held by none; part-listed time "
          "says so") {
  // Empty process lists: the log says nobody's process was there.
  std::string empty = json_log({{0, 0, 0, 60, json::array()}, {600, 0, 0, 60, json::array()}});
  Run none = test::run_agent("report --details " + empty);
  INFO(none.out);
  CHECK_THAT(none.out, Catch::Contains("  holders      no process in the lists (0.17 h)\n"));
  CHECK(report_json(empty)["gpus"][0]["holders"] == json::array());
  // eve's process, then a sample without a list: only part of the time is known.
  std::string part = json_log({{0, 50, 30720, 360, json::array({process_of("eve", 1024)})},
                               {600, 50, 30720, 360, json::array({process_of("eve", 1024)})},
                               {1200, 50, 30720, 360, nullptr}});
  Run partly = test::run_agent("report --details " + part);
  INFO(partly.out);
  CHECK_THAT(partly.out,
             Catch::Contains("  holders      eve 0.17 h; process lists for 0.17 of 0.33 h\n"));
  json report = report_json(part);
  json holders = report["gpus"][0]["holders"];
  REQUIRE(holders.size() == 1);
  CHECK(holders[0]["user"] == "eve");
  CHECK(holders[0]["held_gpu_hours"] == 0.167);
  CHECK(report["users"][0]["held_gpus"] ==
        json::array({{{"index", 0}, {"held_gpu_hours", 0.167}}}));
  CHECK_THAT(report["last_sample"]["summary"].get<std::string>(),
             Catch::StartsWith("At the last sample (2024-03-14T10:20:00.000+01:00): 1 GPU: "));
  CHECK(report["last_sample"]["gpus"] == 1);
  CHECK(report["last_sample"]["states"]["in_use"] == 1);
  // A CSV log: holders null (unknown), not an empty list (nobody).
  json csv = report_json(fixture("training-2gpu.csv"));
  CHECK(csv["gpus"][0]["holders"].is_null());
  CHECK(csv["users"].empty());
}

TEST_CASE("report: the HTML page puts the findings, then the users ledger, before the GPUs' "
          "sections, and names each GPU's holders") {
  std::string html = report_html_of(fixture("shared-3users.jsonl"));
  std::size_t glance = html.find("<p class=\"glance\">At the last sample (");
  std::size_t findings = html.find("<section id=\"findings\">");
  std::size_t users = html.find("<table class=\"users\">");
  std::size_t first_gpu = html.find("<section id=\"gpu-0\">");
  REQUIRE(glance != std::string::npos);
  REQUIRE(findings != std::string::npos);
  REQUIRE(users != std::string::npos);
  REQUIRE(first_gpu != std::string::npos);
  CHECK(glance < findings);
  CHECK(findings < html.find("<table class=\"summary\">"));
  CHECK(users < first_gpu);
  // Every GPU's finding names its GPU and links to its section, the most serious first.
  CHECK_THAT(html, Catch::Contains("<span class=\"severity\">warning</span> <a href=\"#gpu-1\">"
                                   "GPU 1</a>: idle but held by alice"));
  CHECK(html.find("<a href=\"#gpu-1\">GPU 1</a>:") < html.find("<a href=\"#gpu-0\">GPU 0</a>:"));
  // The ledger lists the GPUs each user held; each GPU's section its holders.
  CHECK_THAT(html,
             Catch::Contains("<tr><td>bob</td><td>GPU 2 3.00 h, GPU 3 1.50 h</td><td>2</td>"));
  CHECK_THAT(html, Catch::Contains("<tr><th>holders</th><td>alice 3.00 h, bob 3.00 h</td></tr>"));
  // Names from the log stay text.
  std::string hostile = report_html_of(
      json_log({{0, 50, 30720, 360, json::array({process_of("<b>eve</b>", 1024)})},
                {600, 50, 30720, 360, json::array({process_of("<b>eve</b>", 1024)})}}));
  CHECK_THAT(hostile,
             Catch::Contains("<tr><th>holders</th><td>&lt;b&gt;eve&lt;/b&gt; 0.17 h</td>"));
  CHECK(hostile.find("<b>eve") == std::string::npos);
}

TEST_CASE("report: activity findings on an H100's own logs, each with its figures") {
  // Recorded by `watch --json-log` on an H100 (driver 580) under one PyTorch load each
  // (fixtures/logs/README.md); dmon's GPM figures in every line but the first three.
  CHECK(report_json(fixture("h100-tiny.jsonl"))["gpus"][0]["finding"] ==
        "utilization 34% but SMs active 0% over 12 s: small kernels or launch-bound; larger "
        "batches, fused "
        "kernels or CUDA graphs");
  CHECK(report_json(fixture("h100-pcie.jsonl"))["gpus"][0]["finding"] ==
        "utilization 99% but SMs active 0% over 12 s while PCIe received 59.7 GB/s: the GPU waits "
        "for "
        "input over PCIe; overlap the copies with compute (pinned memory, prefetch the next "
        "batch), keep the data on the GPU, or move less of it");
  CHECK(report_json(fixture("h100-memory.jsonl"))["gpus"][0]["finding"] ==
        "DRAM bandwidth 89% in use while kernels ran over 12 s: memory-bound; fewer passes over "
        "memory "
        "(fused kernels) or lower precision");
  // At its power limit too: the FP32 math explains it.
  CHECK(report_json(fixture("h100-fp32.jsonl"))["gpus"][0]["finding"] ==
        "SMs active 96%, tensor pipes 0%, FP32 pipes 77% over 12 s: FP32 math; mixed precision "
        "(bf16/fp16) or TF32 would use the tensor cores");
  // bf16 on the tensor cores: no activity finding; the power limit is what is left to say.
  CHECK(report_json(fixture("h100-tensor.jsonl"))["gpus"][0]["finding"] ==
        "at its power limit 93% of 14 s: power-bound; check the power cap and cooling");
  Run text = test::run_agent("report " + fixture("h100-fp32.jsonl"));
  CHECK_THAT(text.out, Catch::Contains("FP32 math"));

  // Without dmon's figures the same utilization says nothing of the SMs: the tiny kernels' log
  // with its activity removed is never launch-bound (and, 14 s long, too short for advice).
  std::string stripped;
  std::istringstream lines(test::read_file(test::fixture_path("logs/h100-tiny.jsonl")));
  for (std::string line; std::getline(lines, line);) {
    json sample = json::parse(line);
    for (json &gpu : sample["gpus"])
      for (const char *key : {"sm_active_percent", "sm_occupancy_percent", "tensor_active_percent",
                              "dram_active_percent", "fp16_active_percent", "fp32_active_percent",
                              "fp64_active_percent"})
        gpu[key] = nullptr;
    stripped += sample.dump() + "\n";
  }
  std::string path = test::temporary_folder() + "/tiny-without-activity.jsonl";
  test::write_file(path, stripped);
  CHECK(report_json(quote(path))["gpus"][0]["finding"] ==
        "advice needs 5 min of samples; these cover 14 s");
}

namespace {

// report --format json of a copy of fixtures/logs/`log` whose every GPU of every sample went
// through `change`, written as `name`.jsonl.
json report_of_changed_log(const std::string &log, const std::string &name,
                           const std::function<void(json &)> &change) {
  std::string out;
  std::istringstream lines(test::read_file(test::fixture_path("logs/" + log)));
  for (std::string line; std::getline(lines, line);) {
    json sample = json::parse(line);
    for (json &gpu : sample["gpus"])
      change(gpu);
    out += sample.dump() + "\n";
  }
  std::string path = test::temporary_folder() + "/" + name + ".jsonl";
  test::write_file(path, out);
  return report_json(quote(path));
}

} // namespace

TEST_CASE("report: a job across GPUs whose NVLink is idle while PCIe carries the traffic, and "
          "never where the figures are unknown") {
  // Hand-made (fixtures/logs/README.md): GPUs 0 and 1 busy with one job, NVLink at 2.2 MB/s,
  // PCIe at 12.2 GB/s; GPU 2 free.
  const std::string nvlink_idle =
      "NVLink idle over 2 min: SMs active 82% here and on 1 other GPU(s) of the job, but NVLink "
      "carried "
      "2.2 MB/s while PCIe carried 12.2 GB/s: the GPUs exchange data over PCIe and the host; "
      "check that NCCL may use NVLink (NCCL_P2P_DISABLE, NCCL_P2P_LEVEL), that the job's GPUs "
      "share NVLink (nvidia-smi topo -m), and that peer copies are not staged through host memory";
  json report = report_json(fixture("handmade-nvlink-idle.jsonl"));
  CHECK(report["gpus"][0]["finding"] == nvlink_idle);
  CHECK(report["gpus"][1]["finding"] == nvlink_idle);
  CHECK(report["gpus"][2]["finding"].get<std::string>().find("NVLink") == std::string::npos);
  CHECK_THAT(test::run_agent("report " + fixture("handmade-nvlink-idle.jsonl")).out,
             Catch::Contains("NVLink idle over 2 min: SMs active 82%"));

  // One busy GPU is no job across GPUs: its NVLink has no peer to carry.
  json one = report_json("--gpu 0 " + fixture("handmade-nvlink-idle.jsonl"));
  CHECK(one["gpus"][0]["finding"].get<std::string>().find("NVLink") == std::string::npos);

  // The same log changed one way each: none of these says NVLink idle.
  auto changed = [](const std::string &name, const std::function<void(json &)> &change) {
    return report_of_changed_log("handmade-nvlink-idle.jsonl", name, change);
  };
  auto without_nvlink_finding = [](const json &changed_report) {
    for (const json &gpu : changed_report["gpus"])
      CHECK(gpu["finding"].get<std::string>().find("NVLink") == std::string::npos);
  };
  // NVLink unknown (a GPU without NVLink, or dmon without GPM): nothing is said of it.
  without_nvlink_finding(changed("nvlink-unknown", [](json &gpu) {
    gpu["nvlink_rx_bytes_per_second"] = nullptr;
    gpu["nvlink_tx_bytes_per_second"] = nullptr;
  }));
  // NVLink's transmit alone unknown: its traffic is not known either.
  without_nvlink_finding(
      changed("nvlink-tx-unknown", [](json &gpu) { gpu["nvlink_tx_bytes_per_second"] = nullptr; }));
  // PCIe unknown: whether the traffic went there is not known.
  without_nvlink_finding(changed("pcie-unknown", [](json &gpu) {
    gpu["pcie_rx_bytes_per_second"] = nullptr;
    gpu["pcie_tx_bytes_per_second"] = nullptr;
  }));
  // SM activity unknown: whether the GPUs were busy is not known.
  without_nvlink_finding(
      changed("sm-unknown", [](json &gpu) { gpu["sm_active_percent"] = nullptr; }));
  // NVLink carries the peer traffic: well used.
  without_nvlink_finding(changed("nvlink-busy", [](json &gpu) {
    if (gpu["nvlink_rx_bytes_per_second"].is_number())
      gpu["nvlink_rx_bytes_per_second"] = gpu["index"] == 2 ? 0 : 40000000000;
  }));
}

TEST_CASE("report: a job across GPUs whose NVLink is nearly full, and never where the capacity or "
          "the traffic is unknown") {
  // Hand-made (fixtures/logs/README.md): GPUs 0 and 1 busy with one job, NVLink receive 410 GB/s
  // and transmit 395 GB/s of 478.116 GB/s each way; GPU 2 free.
  const std::string saturated =
      "NVLink saturated over 2 min: SMs active 82% here and on 1 other GPU(s) of the job, and "
      "NVLink carried "
      "410.0 GB/s each way, 86% of its links' 478.1 GB/s: the GPUs wait on each other's data; "
      "fewer, larger collective operations (bucket the gradients), overlap communication with "
      "compute, compress the gradients, or a topology with more NVLink links between the job's "
      "GPUs";
  json report = report_json(fixture("handmade-nvlink-saturated.jsonl"));
  CHECK(report["gpus"][0]["finding"] == saturated);
  CHECK(report["gpus"][1]["finding"] == saturated);
  CHECK(report["gpus"][2]["finding"].get<std::string>().find("NVLink") == std::string::npos);
  CHECK_THAT(test::run_agent("report " + fixture("handmade-nvlink-saturated.jsonl")).out,
             Catch::Contains("NVLink saturated over 2 min: SMs active 82%"));

  // One busy GPU is no job across GPUs.
  json one = report_json("--gpu 0 " + fixture("handmade-nvlink-saturated.jsonl"));
  CHECK(one["gpus"][0]["finding"].get<std::string>().find("NVLink") == std::string::npos);

  auto changed = [](const std::string &name, const std::function<void(json &)> &change) {
    return report_of_changed_log("handmade-nvlink-saturated.jsonl", name, change);
  };
  auto without_nvlink_finding = [](const json &changed_report) {
    for (const json &gpu : changed_report["gpus"])
      CHECK(gpu["finding"].get<std::string>().find("NVLink") == std::string::npos);
  };
  // Capacity unknown (no active link, nvlink -s refused, or an agent before it was read).
  without_nvlink_finding(changed(
      "capacity-unknown", [](json &gpu) { gpu["nvlink_bandwidth_bytes_per_second"] = nullptr; }));
  without_nvlink_finding(changed(
      "capacity-absent", [](json &gpu) { gpu.erase("nvlink_bandwidth_bytes_per_second"); }));
  // Traffic unknown, either direction.
  without_nvlink_finding(
      changed("rx-unknown", [](json &gpu) { gpu["nvlink_rx_bytes_per_second"] = nullptr; }));
  without_nvlink_finding(
      changed("tx-unknown", [](json &gpu) { gpu["nvlink_tx_bytes_per_second"] = nullptr; }));
  // SM activity unknown: whether the GPUs were busy is not known.
  without_nvlink_finding(
      changed("sm-unknown", [](json &gpu) { gpu["sm_active_percent"] = nullptr; }));
  // Under the share (79 %: 377.7 GB/s of 478.1): busy, not full.
  without_nvlink_finding(changed("under-share", [](json &gpu) {
    if (gpu["nvlink_rx_bytes_per_second"].is_number() && gpu["index"] != 2) {
      gpu["nvlink_rx_bytes_per_second"] = 377700000000;
      gpu["nvlink_tx_bytes_per_second"] = 300000000000;
    }
  }));
  // The busier direction is the one judged: transmit alone at 86 % says it.
  json transmit = changed("transmit-full", [](json &gpu) {
    if (gpu["nvlink_rx_bytes_per_second"].is_number() && gpu["index"] != 2) {
      gpu["nvlink_rx_bytes_per_second"] = 1000000000;
      gpu["nvlink_tx_bytes_per_second"] = 410000000000;
    }
  });
  CHECK_THAT(transmit["gpus"][0]["finding"].get<std::string>(),
             Catch::StartsWith("NVLink saturated") && Catch::Contains("410.0 GB/s each way, 86%"));
}

} // namespace test_report
