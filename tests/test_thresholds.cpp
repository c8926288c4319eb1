// The one set of thresholds (nvsmi/thresholds.hpp): every screen turns hot, at its power limit and
// idle exactly where the table says, and the shipped Prometheus rules and Grafana dashboard, which
// cannot include C++, carry the table's numbers.
#include "commands/check_command.hpp"
#include "formats/format_table.hpp"
#include "formats/formats.hpp"
#include "report/report.hpp"
#include "serve_support.hpp"
#include "snapshot_builders.hpp"
#include "support.hpp"
#include "terminal/top_layout.hpp"

#include "nvsmi/gpu_state.hpp"
#include "nvsmi/thresholds.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cmath>
#include <regex>
#include <set>

namespace test_thresholds {

using namespace nvsmi;
using nlohmann::json;

namespace {

// GPU 0 busy (50 %, a compute process), at `celsius` and drawing `watts` of a 700 W limit.
Snapshot busy_gpu(std::int64_t celsius, double watts = 300) {
  Snapshot snapshot;
  snapshot.timestamp = test::sample_time();
  Gpu gpu = test::quiet_gpu(0);
  gpu.name = "NVIDIA H100";
  gpu.temperature_c = celsius;
  gpu.utilization_gpu_percent = 50;
  gpu.memory_total_mib = 81559;
  gpu.memory_used_mib = 30720;
  gpu.power_draw_w = watts;
  gpu.power_limit_w = 700;
  Process process;
  process.pid = 100;
  process.type = "C";
  process.name = "python";
  process.used_memory_mib = 30720;
  gpu.processes = std::vector<Process>{process};
  snapshot.gpus.push_back(gpu);
  return snapshot;
}

// The style `top` gives the span that shows `text` on GPU 0's line.
std::optional<Tone> top_style(const Snapshot &snapshot, const std::string &text) {
  TopModel model(std::chrono::milliseconds(1000));
  TopClock::time_point now = TopClock::now();
  model.add_sample(snapshot, now);
  for (const ScreenLine &line : layout_screen(model, now, {120, 30}, false)) {
    if (line_text(line).rfind(" 0  ", 0) != 0)
      continue; // GPU 0's row, not the fleet summary above it, which names the states too
    for (const Span &span : line)
      if (span.text.find(text) != std::string::npos)
        return span.style;
  }
  return std::nullopt;
}

// Whether the coloured table shows `text` in red (SGR 31).
bool table_red(const Snapshot &snapshot, const std::string &text) {
  std::string table = format_table(snapshot, {true, 160});
  return table.find("\x1b[31m" + text) != std::string::npos;
}

// The one-GPU CSV log of `count` samples a second apart at `celsius`, busy, through `report`.
Finding report_at(std::int64_t celsius) {
  std::string log = "timestamp,index,uuid,name,temperature.gpu,utilization.gpu [%],"
                    "memory.total [MiB],memory.used [MiB]\n";
  for (int i = 0; i < 5; ++i)
    log += "2024-03-14T10:00:0" + std::to_string(i) + ".000+01:00,0,GPU-0,NVIDIA H100," +
           std::to_string(celsius) + ",90,81559,30720\n";
  std::string path = test::temporary_folder() + "/hot.csv";
  test::write_file(path, log);
  ReportOptions options;
  options.files = {path};
  Report report = make_report(options);
  return {report.gpus.at(0).finding_severity, report.gpus.at(0).finding};
}

std::string deploy_file(const std::string &relative) {
  return test::read_file(std::string(SCRIPTS_DIR) + "/../deploy/" + relative);
}

// Every number that `pattern`'s first group catches in `text`.
std::vector<double> numbers_after(const std::string &text, const std::string &pattern) {
  std::vector<double> out;
  std::regex re(pattern);
  for (auto it = std::sregex_iterator(text.begin(), text.end(), re); it != std::sregex_iterator();
       ++it)
    out.push_back(std::stod((*it)[1].str()));
  return out;
}

void walk_panels(const json &panels, const std::function<void(const json &)> &visit) {
  for (const json &panel : panels) {
    visit(panel);
    if (panel.contains("panels"))
      walk_panels(panel["panels"], visit);
  }
}

} // namespace

TEST_CASE("thresholds: every screen's hot is the table's") {
  const std::int64_t hot = gpu_thresholds::hot_c;
  const std::string at = std::to_string(hot) + "C", under = std::to_string(hot - 1) + "C";
  Snapshot hot_gpu = busy_gpu(hot), warm_gpu = busy_gpu(hot - 1);

  // The state, which the JSON, the dashboard, /metrics' nvsmi_gpu_state and pick read.
  CHECK(gpu_state(hot_gpu.gpus[0]) == GpuState::hot);
  CHECK(gpu_state(warm_gpu.gpus[0]) == GpuState::in_use);
  CHECK(json::parse(format_snapshot(hot_gpu, Format::json))["gpus"][0]["state"] == "hot");
  CHECK(json::parse(format_snapshot(warm_gpu, Format::json))["gpus"][0]["state"] == "in_use");

  // `snapshot --format table`: the temperature red from hot on.
  CHECK(table_red(hot_gpu, std::to_string(hot)));
  CHECK_FALSE(table_red(warm_gpu, std::to_string(hot - 1)));

  // `top`: the temperature an alarm from hot on.
  CHECK(top_style(hot_gpu, at) == Tone::alarm);
  CHECK(top_style(warm_gpu, under) == Tone::normal);

  // `check`'s default warning, and its critical where the driver gives no slowdown threshold.
  auto check_status = [](const Snapshot &snapshot) {
    return judge_snapshot(snapshot, {}, {}, std::chrono::system_clock::now()).status;
  };
  CHECK(check_status(hot_gpu) == CheckStatus::warning);
  CHECK(check_status(warm_gpu) == CheckStatus::ok);
  CHECK(check_status(busy_gpu(gpu_thresholds::too_hot_c)) == CheckStatus::critical);
  CHECK(check_status(busy_gpu(gpu_thresholds::too_hot_c - 1)) == CheckStatus::warning);
  // ...and the option's default as `check --help` says it.
  test::Run help = test::run_agent("check --help");
  // Searched for rather than matched over the whole text, whose leading [\s\S]* libstdc++'s
  // regex would recurse through a character at a time (the stack under the sanitizers).
  CHECK(
      std::regex_search(help.out, std::regex("--temperature-warning[^\\n]*\\n?[^\\n]*\\(default " +
                                             std::to_string(hot) + "[;)]")));

  // `report`: a warning from hot on, critical where check is.
  Finding reached = report_at(hot);
  CHECK(reached.text == "reached " + std::to_string(hot) + " \u00b0C in 4 s: check cooling");
  CHECK(reached.severity == Severity::warning);
  CHECK(report_at(gpu_thresholds::too_hot_c).severity == Severity::critical);
  // Issue 24, item 4: one severity scale, so the same temperature is the same severity in both.
  for (std::int64_t temperature :
       {hot - 1, hot, gpu_thresholds::too_hot_c - 1, gpu_thresholds::too_hot_c})
    CHECK(check_status(busy_gpu(temperature)).severity() == report_at(temperature).severity);
  CHECK_THAT(report_at(hot - 1).text, !Catch::Contains("reached"));
}

TEST_CASE("thresholds: at the power limit and idle are the table's on every screen") {
  double limit = 700 * gpu_thresholds::power_limit_fraction;
  Snapshot capped = busy_gpu(40, limit), under = busy_gpu(40, limit - 1);
  CHECK(gpu_state(capped.gpus[0]) == GpuState::at_power_limit);
  CHECK(gpu_state(under.gpus[0]) == GpuState::in_use);
  CHECK(table_red(capped, "at power limit"));
  CHECK_FALSE(table_red(under, "in use"));

  Snapshot idle = busy_gpu(40);
  idle.gpus[0].utilization_gpu_percent =
      static_cast<std::int64_t>(gpu_thresholds::idle_below_percent);
  CHECK(gpu_state(idle.gpus[0]) == GpuState::in_use);
  idle.gpus[0].utilization_gpu_percent =
      static_cast<std::int64_t>(gpu_thresholds::idle_below_percent) - 1;
  CHECK(gpu_state(idle.gpus[0]) == GpuState::idle_held);
}

// The table turned memory red from 90 % while top did from the table's 95 %: one number now.
TEST_CASE("thresholds: memory full is the table's on every screen") {
  auto using_mib = [](std::int64_t mib) {
    Snapshot snapshot = busy_gpu(40);
    snapshot.gpus[0].memory_used_mib = mib;
    return snapshot;
  };
  const std::int64_t total = 81559;
  auto full = static_cast<std::int64_t>(
      std::ceil(static_cast<double>(total) * gpu_thresholds::memory_full_fraction));
  std::int64_t under = full - 2000; // about 92 %: over the table's old 90 %, under full
  CHECK(table_red(using_mib(full), std::to_string(full) + "/81559MiB"));
  CHECK_FALSE(table_red(using_mib(under), std::to_string(under) + "/81559MiB"));
  CHECK(top_style(using_mib(full), "/79.6G") == Tone::alarm);
  CHECK(top_style(using_mib(under), "/79.6G") != Tone::alarm);
}

// The table and top once each mapped a state to their own colours: top left an idle or unknown
// GPU's state plain where the table dimmed it. Both now take core/tone.hpp's state_tone.
TEST_CASE("thresholds: the table and top colour every state alike") {
  Snapshot snapshot = busy_gpu(40);
  snapshot.gpus[0].utilization_gpu_percent = 0;
  snapshot.gpus[0].processes.reset();
  REQUIRE(gpu_state(snapshot.gpus[0]) == GpuState::idle);
  CHECK(top_style(snapshot, "idle") == Tone::dim);
  CHECK(format_table(snapshot, {true, 160}).find("\x1b[2midle\x1b[0m") != std::string::npos);
  snapshot.gpus[0].utilization_gpu_percent.reset();
  REQUIRE(gpu_state(snapshot.gpus[0]) == GpuState::unknown);
  CHECK(top_style(snapshot, "unknown") == Tone::dim);
  CHECK(format_table(snapshot, {true, 160}).find("\x1b[2munknown\x1b[0m") != std::string::npos);

  snapshot = busy_gpu(gpu_thresholds::hot_c);
  CHECK(top_style(snapshot, "hot") == state_tone(GpuState::hot));
  CHECK(table_red(snapshot, "hot"));
}

TEST_CASE("thresholds: the Prometheus rules carry the table's numbers") {
  std::string rules = deploy_file("prometheus/nvsmi-rules.yml");
  // GpuHot where the driver gives no slowdown threshold, and its description.
  std::vector<double> hot = numbers_after(rules, R"(nvsmi_gpu_temperature_celsius >= (\d+))");
  REQUIRE_FALSE(hot.empty());
  for (double value : hot)
    CHECK(value == static_cast<double>(gpu_thresholds::hot_c));
  std::vector<double> said = numbers_after(rules, R"(at or over (\d+) °C)");
  REQUIRE_FALSE(said.empty());
  for (double value : said)
    CHECK(value == static_cast<double>(gpu_thresholds::hot_c));
  // A GPU at work (GpuPcieLinkDegraded) is one at or over the idle threshold, as a ratio.
  std::vector<double> working = numbers_after(rules, R"(nvsmi_gpu_utilization_ratio >= ([0-9.]+))");
  REQUIRE_FALSE(working.empty());
  for (double value : working)
    CHECK(value == Approx(gpu_thresholds::idle_below_percent / 100));
  // Every "utilization under N%" / "utilization N% or more" in words.
  std::vector<double> words = numbers_after(rules, R"(utilization (?:under )?(\d+)%)");
  REQUIRE(words.size() >= 2);
  for (double value : words)
    CHECK(value == gpu_thresholds::idle_below_percent);
}

TEST_CASE("thresholds: the Grafana dashboard's temperature line is the table's hot") {
  json dashboard = json::parse(deploy_file("grafana/nvsmi-fleet.json"));
  std::set<double> temperature_steps;
  walk_panels(dashboard["panels"], [&](const json &panel) {
    const json defaults =
        panel.value("fieldConfig", json::object()).value("defaults", json::object());
    if (defaults.value("unit", "") != "celsius" || !defaults.contains("thresholds"))
      return;
    for (const json &step : defaults["thresholds"]["steps"])
      if (!step["value"].is_null())
        temperature_steps.insert(step["value"].get<double>());
  });
  CHECK(temperature_steps == std::set<double>{static_cast<double>(gpu_thresholds::hot_c)});
}

TEST_CASE("thresholds: serve hands the dashboard the table, which colours by it") {
  test::Server server("--interval 0.1 --fixture " +
                      test::quote(test::fixture_path("xml/h100-8gpu-v12.xml")));
  test::Http answer = server.get("/api/v1/thresholds");
  REQUIRE(answer.status == 200);
  CHECK_THAT(answer.headers, Catch::Contains("application/json"));
  json table = json::parse(answer.body);
  CHECK(table["schema"] == "nvsmi-agent.thresholds/1");
  CHECK(table["hot_c"] == gpu_thresholds::hot_c);
  CHECK(table["too_hot_c"] == gpu_thresholds::too_hot_c);
  CHECK(table["power_limit_fraction"] == gpu_thresholds::power_limit_fraction);
  CHECK(table["memory_full_fraction"] == gpu_thresholds::memory_full_fraction);
  CHECK(table["idle_below_percent"] == gpu_thresholds::idle_below_percent);
  CHECK(table["memory_held_mib"] == gpu_thresholds::memory_held_mib);
  CHECK(table["starved_below_percent"] == gpu_thresholds::starved_below_percent);
  // The page asks for it and compares with its numbers, keeping none of its own.
  std::string page = server.get("/").body;
  CHECK_THAT(page, Catch::Contains("getJson(\"/api/v1/thresholds\")"));
  CHECK_THAT(page, Catch::Contains("gpu.temperature_c >= t.hot_c"));
  CHECK_THAT(page, Catch::Contains("t.power_limit_fraction * gpu.power_limit_w"));
}

TEST_CASE("thresholds: the dashboard marks the hot GPU's temperature, and only it") {
  // GPU 2 of the states fixture is at 89 C, the others at 37 C or less.
  test::Server server("--interval 0.2 --fixture " +
                      test::quote(test::fixture_path("xml/h100-8gpu-states-v12.xml")));
  REQUIRE(test::wait_until([&] { return server.get("/api/v1/series").status == 200; }));
  test::Run run = test::chromium("--virtual-time-budget=5000 --window-size=1400,1000 --dump-dom " +
                                 test::quote(server.url()));
  REQUIRE(run.exit_code == 0);
  std::regex alarm(R"re(<div class="c-temp (?:hot|too_hot)">([^<]*)</div>)re");
  std::vector<std::string> marked;
  for (auto it = std::sregex_iterator(run.out.begin(), run.out.end(), alarm);
       it != std::sregex_iterator(); ++it)
    marked.push_back((*it)[1].str());
  CHECK(marked == std::vector<std::string>{"89 \xc2\xb0"
                                           "C"});
  CHECK_THAT(run.out, Catch::Contains("<div class=\"c-temp\">37 \xc2\xb0"
                                      "C</div>"));
}

} // namespace test_thresholds
