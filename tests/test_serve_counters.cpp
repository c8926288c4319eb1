// Numbers that survive any scrape interval (issue 44), through the built agent: a real Prometheus
// scraping serve every 15 s gets the exact mean utilization from the counters while the gauge's
// average misses the bursts between its scrapes; the counters never go back when nvidia-smi
// restarts; watch's JSON and the DCGM naming carry them. The stand-in's demo mode makes GPU 0 busy
// one second in 15 (FAKE_NVSMI_DEMO_BURST). Release build only (tests/CMakeLists.txt): two
// minutes of waiting on Prometheus prove nothing more of memory under the sanitizers, and the
// counters' arithmetic is the unit suite's (test_usage_counters.cpp).
#include "serve_support.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cmath>
#include <string>

namespace test_serve_counters {

using json = nlohmann::json;
using test::quote;
using test::Server;

namespace {

using namespace std::chrono_literals;

const std::string fake = quote(std::string(SCRIPTS_DIR) + "/fake-nvidia-smi");

// GPU 0's value of `family` in a /metrics body; nullopt where it has none.
std::optional<double> gpu0(const std::string &metrics, const std::string &family) {
  std::size_t at = metrics.find("\n" + family + "{gpu=\"0\"");
  if (at == std::string::npos)
    return std::nullopt;
  std::size_t end = metrics.find('\n', at + 1);
  std::size_t space = metrics.rfind(' ', end);
  return std::stod(metrics.substr(space + 1, end - space - 1));
}

// The one sample value of an instant query's answer.
double value_of(const json &result) { return std::stod(result[0]["value"][1].get<std::string>()); }

} // namespace

TEST_CASE("serve: a Prometheus scraping every 15 s gets the exact mean from the counters, not "
          "from the gauge") {
  if (!test::installed("prometheus")) {
    WARN("prometheus is not installed (scripts/install-deps installs it): not scraped");
    return;
  }
  // No budget: the stand-in (bash and awk) costs many times a real nvidia-smi, and the budget
  // would lengthen the interval within the two minutes.
  Server agent("--interval 1 --no-processes --cpu-budget off --nvidia-smi " + fake,
               "FAKE_NVSMI_MODE=demo FAKE_NVSMI_DEMO_BURST=15");
  test::Prometheus prometheus({agent.port()}, "    scrape_interval: 15s\n");
  // Two minutes of scrapes: nine of them.
  const std::string sampled = "nvsmi_gpu_sampled_seconds_total{gpu=\"0\"}";
  json scrapes;
  bool enough = test::wait_until(
      [&] {
        scrapes = prometheus.query(sampled + "[150s]", [](const json &) { return true; });
        return !scrapes.empty() && scrapes[0]["values"].size() >= 9;
      },
      400s, 1000ms);
  INFO(prometheus.log() + agent.log());
  REQUIRE(enough);
  // The last minute of scrapes, up to the last one: what rate() reads at its time.
  const json &values = scrapes[0]["values"];
  double last = values.back()[0].get<double>();
  std::string at = " @ " + std::to_string(last);
  json window = prometheus.query(sampled + "[1m]" + at, [](const json &found) {
    return !found.empty() && found[0]["values"].size() >= 3;
  });
  REQUIRE(!window.empty());
  double first = window[0]["values"][0][0].get<double>();
  double exact = value_of(prometheus.query("rate(nvsmi_gpu_busy_seconds_total{gpu=\"0\"}[1m]" + at +
                                               ") / rate(" + sampled + "[1m]" + at + ")",
                                           [](const json &found) { return !found.empty(); }));
  double gauge = value_of(
      prometheus.query("avg_over_time(nvsmi_gpu_utilization_ratio{gpu=\"0\"}[1m]" + at + ")",
                       [](const json &found) { return !found.empty(); }));
  // serve's own history of the same stretch: every sample received after the first scrape of the
  // window and by the last, each a second.
  json history = json::parse(agent.get("/api/v1/history?since=" + std::to_string(first)).body);
  double sum = 0;
  int samples = 0;
  for (const json &sample : history["samples"]) {
    if (sample["received"].get<double>() > last)
      continue;
    sum += sample["snapshot"]["gpus"][0]["utilization_gpu_percent"].get<double>();
    ++samples;
  }
  REQUIRE(samples >= 20); // about 45, fewer on a busy machine, where the stand-in is slower
  double mean = sum / samples;
  INFO("history mean " << mean << " % over " << samples << " samples; counters " << exact * 100
                       << " %; gauge " << gauge * 100 << " %");
  CHECK(mean > 3);
  CHECK(std::abs(exact * 100 - mean) <= 1);
  CHECK(std::abs(gauge * 100 - mean) > 1);
}

TEST_CASE("serve: the counters never go back when nvidia-smi restarts") {
  Server agent("--interval 0.25 --no-processes --nvidia-smi " + fake,
               "FAKE_NVSMI_MODE=demo FAKE_NVSMI_EXIT_AFTER=4");
  std::optional<double> busy, sampled, energy;
  int decreases = 0;
  bool restarted = test::wait_until(
      [&] {
        std::string m = agent.get("/metrics").body;
        std::optional<double> b = gpu0(m, "nvsmi_gpu_busy_seconds_total"),
                              s = gpu0(m, "nvsmi_gpu_sampled_seconds_total"),
                              e = gpu0(m, "nvsmi_gpu_energy_joules_total");
        if (b && busy && *b < *busy)
          ++decreases;
        if (s && sampled && *s < *sampled)
          ++decreases;
        if (e && energy && *e < *energy)
          ++decreases;
        busy = b ? b : busy;
        sampled = s ? s : sampled;
        energy = e ? e : energy;
        std::size_t at = m.find("\nnvsmi_child_restarts_total ");
        return at != std::string::npos && std::stoi(m.substr(at + 28)) >= 3 && sampled &&
               *sampled > 2;
      },
      test::patience * 2, 100ms);
  INFO(agent.log());
  REQUIRE(restarted);
  CHECK(decreases == 0);
  CHECK(*energy > 0);
}

TEST_CASE("watch --format json: each GPU's counters, growing; a one-shot snapshot has none") {
  test::Run watched = test::run_agent("watch --interval 0.3 --count 5 --format json --no-processes "
                                      "--nvidia-smi " +
                                      fake);
  // run_agent's environment has no demo mode: the fixture's readings every sample.
  REQUIRE(watched.exit_code == 0);
  std::vector<std::string> lines = test::non_empty_lines_of(watched.out);
  REQUIRE(lines.size() == 5);
  json first = json::parse(lines.front())["gpus"][0]["counters"];
  json last = json::parse(lines.back())["gpus"][0]["counters"];
  CHECK(first["sampled_seconds"] == 0.0);
  CHECK(last["sampled_seconds"].get<double>() > 0.8);
  CHECK(last["power_sampled_seconds"].get<double>() > 0.8);
  CHECK(last["energy_joules"].get<double>() > 0);
  test::Run once = test::run_agent("snapshot --format json --fixture " +
                                   quote(test::fixture_path("xml/h100-8gpu-v12.xml")));
  CHECK(json::parse(once.out)["gpus"][0].count("counters") == 0);
}

TEST_CASE("serve --metric-names dcgm: DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION in mJ, a counter") {
  Server agent("--interval 0.25 --no-processes --metric-names dcgm --nvidia-smi " + fake);
  std::string m;
  REQUIRE(test::wait_until([&] {
    m = agent.get("/metrics").body;
    std::size_t at = m.find("\nDCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{");
    return at != std::string::npos && m.compare(m.find('}', at) + 1, 3, " 0\n") != 0;
  }));
  CHECK_THAT(m, Catch::Contains("# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter\n"));
  // Whole millijoules, as DCGM counts them.
  std::size_t at = m.find("\nDCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{");
  std::string value = m.substr(m.find("} ", at) + 2, m.find('\n', at + 1) - m.find("} ", at) - 2);
  CHECK(value.find_first_not_of("0123456789") == std::string::npos);
  CHECK(std::stod(value) > 0);
}

} // namespace test_serve_counters

namespace test_serve_counters {

TEST_CASE(
    "report: the agent's counters beside the log's own mean; a log that lost samples says so") {
  std::string folder = test::temporary_folder();
  // GPU 0 busy one second in 4: a log from which the busy samples are gone says 0 %, the
  // counters (every sample the agent read) about 25 %; at least one burst in 16 s (6 %) on a
  // machine so busy that the stand-in's loop overruns the others' seconds (it skips a second it
  // overran: seen once in CI at 11 %; the file failed once more beside three other suites on 2
  // cores, its output not kept).
  test::Run watched =
      test::run_shell("FAKE_NVSMI_MODE=demo FAKE_NVSMI_DEMO_BURST=4 " + quote(AGENT_BIN) +
                      " watch --interval 1 --count 16 --format json --no-processes --nvidia-smi " +
                      fake + " >" + quote(folder + "/full.jsonl"));
  REQUIRE(watched.exit_code == 0);
  std::string thinned;
  for (const std::string &line : test::non_empty_lines_of(test::read_file(folder + "/full.jsonl")))
    if (json::parse(line)["gpus"][0]["utilization_gpu_percent"] != 100)
      thinned += line + "\n";
  test::write_file(folder + "/thinned.jsonl", thinned);
  test::Run report = test::run_agent("report --format json " + quote(folder + "/thinned.jsonl"));
  REQUIRE(report.exit_code == 0);
  json utilization = json::parse(report.out)["gpus"][0]["utilization_percent"];
  INFO(utilization.dump());
  CHECK(utilization["mean"] == 0.0);
  CHECK(utilization["counted_mean"].get<double>() > 5);
  CHECK(utilization["counted_s"].get<double>() > 12);
  CHECK(utilization["counted_agrees"] == false);
  test::Run text = test::run_agent("report --details " + quote(folder + "/thinned.jsonl"));
  CHECK_THAT(text.out, Catch::Matches("(?:.|\n)*counted by the agent: mean [0-9.]+% over [0-9.]+ "
                                      "s; the logged samples' 0.0% miss some of what it "
                                      "read(?:.|\n)*"));
  // A hostile or garbled log: counters beyond any agent's (10^300 s), or busy beyond sampled, are
  // not believed, never summed into an infinite or invented mean.
  std::string hostile;
  int line_number = 0;
  for (const std::string &line : test::non_empty_lines_of(thinned)) {
    json sample = json::parse(line);
    for (json &gpu : sample["gpus"])
      gpu["counters"] = ++line_number % 2
                            ? json{{"sampled_seconds", 1e300}, {"busy_seconds", 1e300}}
                            : json{{"sampled_seconds", 5.0}, {"busy_seconds", 9.0}};
    hostile += sample.dump() + "\n";
  }
  test::write_file(folder + "/hostile.jsonl", hostile);
  report = test::run_agent("report --format json " + quote(folder + "/hostile.jsonl"));
  REQUIRE(report.exit_code == 0);
  CHECK(json::parse(report.out)["gpus"][0]["utilization_percent"]["counted_mean"].is_null());
  // A steady GPU: both means alike. A CSV log has no counters: none said.
  watched = test::run_shell("FAKE_NVSMI_STAMP_NOW=1 " + quote(AGENT_BIN) +
                            " watch --interval 0.5 --count 6 --format json --no-processes "
                            "--nvidia-smi " +
                            fake + " >" + quote(folder + "/steady.jsonl"));
  REQUIRE(watched.exit_code == 0);
  report = test::run_agent("report --format json " + quote(folder + "/steady.jsonl"));
  CHECK(json::parse(report.out)["gpus"][0]["utilization_percent"]["counted_agrees"] == true);
  report = test::run_agent("report --format json " +
                           quote(test::fixture_path("logs/constant-100w.csv")));
  REQUIRE(report.exit_code == 0);
  CHECK(json::parse(report.out)["gpus"][0]["utilization_percent"]["counted_mean"].is_null());
  CHECK(json::parse(report.out)["gpus"][0]["utilization_percent"]["counted_agrees"].is_null());
}

} // namespace test_serve_counters
