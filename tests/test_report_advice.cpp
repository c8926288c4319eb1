// `report`'s advice sized to its evidence, and its text leading with the answer (issue 39, items
// 3 and 4), through the built binary on JSON logs written here: no advice on how a GPU is used
// from less than the minimum window, every finding with its window, busy CPUs counted against a
// job only when they were its own, and a one-minute 8-GPU log on one screen. The texts are kept
// in BUILD/artifacts/ to be read.
#include "support.hpp"

#include "nvsmi/thresholds.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <sstream>
#include <vector>

namespace test_report_advice {

using json = nlohmann::json;
using test::quote;
using test::Run;

namespace {

// One process of a JSON log line: `cpu` its share of one core (null: unknown).
json process(int pid, const std::string &user, std::int64_t used_mib, const json &cpu) {
  return {{"pid", pid},
          {"type", "C"},
          {"name", "python"},
          {"used_memory_mib", used_mib},
          {"user", user},
          {"uid", 1000},
          {"command", "python train.py"},
          {"cpu_percent", cpu}};
}

// One GPU of a line: an H100 at `utilization` holding `used` MiB, with these processes.
struct GpuReading {
  int utilization = 0;
  std::int64_t used = 0;
  json processes = json::array();
  int temperature = 40;
};

std::string stamp(int seconds) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "2026-11-23T%02d:%02d:%02d.000+01:00", 10 + seconds / 3600,
                seconds / 60 % 60, seconds % 60);
  return buffer;
}

// A `watch --json-log` of `samples` lines `every` seconds apart; `at(k, gpus, host_cpu)` fills
// line k's GPUs and the host's CPUs busy (percent of its 64; null: unknown).
std::string json_log(const std::string &name, int samples, int every,
                     const std::function<void(int, std::vector<GpuReading> &, json &)> &at) {
  std::string text;
  for (int k = 0; k < samples; ++k) {
    std::vector<GpuReading> readings;
    json host_cpu = nullptr;
    at(k, readings, host_cpu);
    json gpus = json::array();
    for (std::size_t i = 0; i < readings.size(); ++i) {
      const GpuReading &r = readings[i];
      char bus[32];
      std::snprintf(bus, sizeof bus, "00000000:%02zX:00.0", 0x18 + i);
      gpus.push_back({{"index", i},
                      {"uuid", "GPU-00000000-0000-0000-0000-00000000000" + std::to_string(i)},
                      {"name", "NVIDIA H100 80GB HBM3"},
                      {"pci_bus_id", bus},
                      {"pstate", "P0"},
                      {"temperature_c", r.temperature},
                      {"memory_total_mib", 81559},
                      {"memory_used_mib", r.used},
                      {"utilization_gpu_percent", r.utilization},
                      {"power_draw_w", 100 + 5 * r.utilization},
                      {"power_limit_w", 700},
                      {"processes", r.processes}});
    }
    json line = {{"schema", "nvsmi-agent.snapshot/1"},
                 {"source", "xml"},
                 {"timestamp", stamp(k * every)},
                 {"gpus", gpus},
                 {"host", {{"hostname", "gpu7"}, {"cpu_count", 64}, {"cpu_percent", host_cpu}}}};
    text += line.dump() + "\n";
  }
  std::string path = test::temporary_folder() + "/" + name;
  test::write_file(path, text);
  return path;
}

// GPU 0 held by dave (30 GiB) and starved (8 %), his process at `dave_cpu` % of one core, with the
// host's CPUs 96 % busy: `samples` lines `every` seconds apart.
std::string starved_log(const std::string &name, int samples, int every, const json &dave_cpu) {
  return json_log(name, samples, every, [&](int k, std::vector<GpuReading> &gpus, json &host) {
    gpus.push_back({8, 30 * 1024 + 156, json::array({process(8101, "dave", 30 * 1024, dave_cpu)})});
    host = k == 0 ? json() : json(96.0);
  });
}

json report_json(const std::string &path) {
  Run run = test::run_agent("report --format json " + quote(path));
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  return json::parse(run.out);
}

std::string report_text(const std::string &arguments, const std::string &artifact) {
  Run run = test::run_agent("report " + arguments);
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  test::run_shell("mkdir -p " + quote(ARTIFACTS_DIR));
  test::write_file(std::string(ARTIFACTS_DIR) + "/" + artifact, run.out);
  return run.out;
}

std::vector<std::string> lines_of(const std::string &text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    out.push_back(line);
  return out;
}

bool has(const std::string &text, const std::string &part) {
  return text.find(part) != std::string::npos;
}

} // namespace

TEST_CASE("report: the advice window is one threshold of 5 minutes; busy is 70 %") {
  CHECK(nvsmi::gpu_thresholds::advice_min_window_s == 300);
  CHECK(nvsmi::gpu_thresholds::well_used_mean_percent == 70);
}

TEST_CASE("report: a 5-sample log gives no starved, CPU-bound, room or batch advice, and says "
          "it is too short in one line") {
  // The case: 5 samples a second apart, starved all the while, the host's CPUs busy.
  std::string starved = starved_log("short.jsonl", 5, 1, 5800);
  std::string text = report_text(quote(starved), "report-short-log.txt");
  INFO(text);
  CHECK(!has(text, "starved 100%"));
  CHECK(!has(text, "CPU-bound"));
  CHECK(!has(text, "data-loader"));
  CHECK(!has(text, "room for more work"));
  CHECK(!has(text, "check the data loader"));
  std::string line = "advice needs 5 min of samples; this log covers 4 s\n";
  REQUIRE(has(text, line));
  CHECK(text.find(line) == text.rfind(line)); // once, not once for each GPU
  CHECK(report_json(starved)["gpus"][0]["finding"] ==
        "advice needs 5 min of samples; these cover 4 s");

  // A GPU at 45 % for a minute: no "room for more work" either.
  std::string half = json_log("half.jsonl", 61, 1, [](int, std::vector<GpuReading> &gpus, json &) {
    gpus.push_back({45, 20480, json::array({process(10, "erin", 20000, 100.0)})});
  });
  std::string half_text = report_text(quote(half), "report-short-half.txt");
  CHECK(!has(half_text, "room for more work"));
  CHECK(has(half_text, "advice needs 5 min of samples; this log covers 1 min\n"));
}

TEST_CASE("report: on a log of 5 minutes or more the advice comes, naming its window") {
  // The same starved GPU for 10 minutes (a sample a minute).
  json long_enough = report_json(starved_log("long.jsonl", 11, 60, 5800));
  CHECK(long_enough["gpus"][0]["finding"] ==
        "starved 100% of 10 min (host CPUs 96% busy, this GPU's processes 58.0 of 61.4 busy "
        "cores; disk reads and network receive unknown): the input pipeline is CPU-bound; add "
        "data-loader workers or move preprocessing to the GPU");
  // Exactly at the window: advice; a sample short of it: none.
  CHECK_THAT(
      report_json(starved_log("five.jsonl", 6, 60, 5800))["gpus"][0]["finding"].get<std::string>(),
      Catch::StartsWith("starved 100% of 5 min "));
  CHECK(report_json(starved_log("four.jsonl", 5, 60, 5800))["gpus"][0]["finding"] ==
        "advice needs 5 min of samples; these cover 4 min");

  // Room for more work, with its window.
  std::string half = json_log("half.jsonl", 11, 60, [](int, std::vector<GpuReading> &gpus, json &) {
    gpus.push_back({45, 20480, json::array({process(10, "erin", 20000, 100.0)})});
  });
  CHECK(report_json(half)["gpus"][0]["finding"] ==
        "mean utilization 45% over 10 min, idle 0% of it: room for more work");
  // Every other finding names its window too: idle, hot.
  std::string idle_hot =
      json_log("idle-hot.jsonl", 3, 30, [](int, std::vector<GpuReading> &gpus, json &) {
        gpus.push_back({0, 0});
        gpus.push_back({97, 40960, json::array({process(11, "erin", 40000, 100.0)}), 92});
      });
  json both = report_json(idle_hot);
  CHECK(both["gpus"][0]["finding"] ==
        "idle 100% of 1 min: free for other work, or its job does not use it");
  CHECK(both["gpus"][1]["finding"] == "reached 92 \u00b0C in 1 min: check cooling");
}

TEST_CASE("report: busy host CPUs count against a starved GPU only when its own processes are "
          "the busy ones; otherwise the report names the other load") {
  // The fixture: dave's process at 58 of the 61.4 busy cores: his input pipeline.
  json own = report_json(test::fixture_path("logs/cpu-bound.jsonl"));
  CHECK_THAT(own["gpus"][0]["finding"].get<std::string>(),
             Catch::Contains("this GPU's processes 58.0 of 61.4 busy cores") &&
                 Catch::Contains("the input pipeline is CPU-bound"));

  // bob's job on GPU 1 uses 55 cores; dave's 1: bob's load, named, not dave's pipeline.
  json others = report_json(test::fixture_path("logs/cpu-busy-others.jsonl"));
  std::string finding = others["gpus"][0]["finding"];
  CHECK(finding == "starved 40% of 10 min (host CPUs 96% busy, this GPU's processes 1.0 of 61.4 "
                   "busy cores; disk reads and network receive unknown): other work held the "
                   "CPUs, mostly bob's processes on other GPUs (55.0 cores); free CPUs for the "
                   "job or move it to a quieter host");
  CHECK(!has(finding, "CPU-bound"));
  CHECK(!has(finding, "data-loader"));

  // Busy CPUs in processes on no GPU (another user's build): said as such.
  std::string build = starved_log("build.jsonl", 11, 60, 101.5);
  std::string on_no_gpu = report_json(build)["gpus"][0]["finding"];
  CHECK_THAT(on_no_gpu, Catch::Contains("this GPU's processes 1.0 of 61.4 busy cores") &&
                            Catch::Contains("other work held the CPUs: 60.4 cores in processes "
                                            "on no GPU"));
  CHECK(!has(on_no_gpu, "CPU-bound"));

  // A log that does not say whose (the process's CPU share unknown): no verdict on the job.
  std::string unknown =
      report_json(starved_log("unknown.jsonl", 11, 60, nullptr))["gpus"][0]["finding"];
  CHECK_THAT(unknown, Catch::EndsWith("whose processes kept the CPUs busy is not in the log; check "
                                      "the data loader and what else runs on the host"));
  CHECK(!has(unknown, "CPU-bound"));
}

TEST_CASE("report: a GPU busy most of the time gets no room for more work") {
  // The 77 %: well used, not room for more work.
  std::string busy =
      json_log("busy.jsonl", 11, 60, [](int k, std::vector<GpuReading> &gpus, json &) {
        gpus.push_back({k % 2 ? 100 : 54, 40960, json::array({process(12, "erin", 40000, 100.0)})});
      });
  std::string finding = report_json(busy)["gpus"][0]["finding"];
  CHECK(finding == "busy over 10 min: mean utilization 77%, p95 100%: well used");
  CHECK(!has(finding, "room for more work"));
}

namespace {

// A one-minute log of 8 GPUs a second apart (61 samples): alice trains on GPUs 0 and 1, bob on
// GPU 2 (hot), carol holds GPU 3 idle, GPUs 4 to 7 are free; the host's CPUs 30 % busy.
std::string eight_gpus_one_minute() {
  return json_log("8gpus.jsonl", 61, 1, [](int k, std::vector<GpuReading> &gpus, json &host) {
    gpus.push_back({90, 40960, json::array({process(100, "alice", 40000, 100.0)})});
    gpus.push_back({85, 40960, json::array({process(101, "alice", 40000, 100.0)})});
    gpus.push_back({95, 60000, json::array({process(200, "bob", 59000, 100.0)}), 91});
    gpus.push_back({0, 20480, json::array({process(300, "carol", 20000, 0.0)})});
    for (int i = 4; i < 8; ++i)
      gpus.push_back({0, 0});
    host = k == 0 ? json() : json(30.0);
  });
}

int severity_rank(const std::string &line) {
  return line.rfind("  critical", 0) == 0 ? 2 : line.rfind("  warning", 0) == 0 ? 1 : 0;
}

} // namespace

TEST_CASE("report: the text leads with the summary, then the findings ranked, then the users; "
          "a one-minute 8-GPU log fits on a 50-line screen") {
  std::string log = eight_gpus_one_minute();
  std::string text = report_text(quote(log), "report-8gpus-1min.txt");
  INFO(text);
  std::vector<std::string> lines = lines_of(text);
  CHECK(lines.size() <= 50);
  REQUIRE(lines.size() > 5);
  // The line every view opens with.
  CHECK(lines[0] == "8 GPUs: 4 free · 2 in use · 1 idle but held (carol) · 1 hot, at the last "
                    "sample (2026-11-23T10:01:00.000+01:00)");
  CHECK(lines[1] == "1 min of samples, 2026-11-23T10:00:00.000+01:00 to "
                    "2026-11-23T10:01:00.000+01:00; findings: 1 critical, 2 warning, 8 info");
  CHECK(lines[2] == "advice needs 5 min of samples; this log covers 1 min");
  // The findings across all GPUs, most serious first, each naming its GPU and who held it.
  auto first = std::find(lines.begin(), lines.end(), "Findings, most serious first");
  REQUIRE(first != lines.end());
  std::vector<std::string> findings;
  for (auto it = first + 1; it != lines.end() && !it->empty(); ++it)
    findings.push_back(*it);
  REQUIRE(findings.size() >= 4);
  for (std::size_t i = 1; i < findings.size(); ++i)
    CHECK(severity_rank(findings[i - 1]) >= severity_rank(findings[i]));
  CHECK(findings[0] == "  critical  GPU 2 (bob): reached 91 \u00b0C in 1 min: check cooling");
  CHECK_THAT(findings[1], Catch::StartsWith("  warning   GPU 3 (carol): idle but held by carol for "
                                            "1 min (100% of 1 min)"));
  CHECK(has(text, "  info      GPUs 4-7: idle 100% of 1 min: free for other work"));
  CHECK(has(text, "  info      GPU 0 (alice): busy over 1 min: mean utilization 90%"));
  // Then the ledger, after the findings; no GPU's block of figures without --details.
  std::size_t users = text.find("\nUsers (");
  REQUIRE(users != std::string::npos);
  CHECK(users > text.find("Findings, most serious first"));
  CHECK(!has(text, "\nGPU 0  NVIDIA H100 80GB HBM3"));
  CHECK(!has(text, "  utilization  mean"));
  CHECK(!has(text, "rows: "));

  // --details brings the files, the rows and each GPU's block back, after the answer.
  std::string details = report_text("--details " + quote(log), "report-8gpus-1min-details.txt");
  CHECK(lines_of(details)[0] == lines[0]);
  CHECK(has(details, "rows: 488 read, 488 used, 0 bad"));
  for (int i = 0; i < 8; ++i)
    CHECK(has(details, "\nGPU " + std::to_string(i) + "  NVIDIA H100 80GB HBM3  GPU-"));
  CHECK(details.find("\nGPU 0  NVIDIA") > details.find("\nUsers ("));
  CHECK(has(details, "  utilization  mean 90.0%"));
}

TEST_CASE("report: a name from the log in a finding is printable and bounded, however long") {
  // Any local user names their processes, and a log handed over may hold anything: here the user
  // who holds the CPUs from GPU 1 is a terminal escape followed by 5000 letters.
  std::string hostile = "\x1b[2J" + std::string(5000, 'x');
  std::string log =
      json_log("hostile.jsonl", 11, 60, [&](int k, std::vector<GpuReading> &gpus, json &host) {
        gpus.push_back({8, 30 * 1024, json::array({process(8101, "dave", 30 * 1024, 101.5)})});
        gpus.push_back({97, 40 * 1024, json::array({process(8201, hostile, 40 * 1024, 5500.0)})});
        host = k == 0 ? json() : json(96.0);
      });
  std::string finding = report_json(log)["gpus"][0]["finding"];
  CHECK_THAT(finding, Catch::Contains("mostly \xEF\xBF\xBD[2Jxxx"));
  CHECK(finding.find('\x1b') == std::string::npos);
  CHECK(finding.size() < 400);
  std::string text = report_text(quote(log), "report-hostile-names.txt");
  CHECK(text.find('\x1b') == std::string::npos);
  for (const std::string &line : lines_of(text))
    CHECK(line.size() < 400); // the users table cuts the name too
}

} // namespace test_report_advice
