// The monitor's own cost (issue 42): the agent's CPU and memory and each nvidia-smi stream's, as
// serve's /metrics, watch's JSON and top's header give them, checked against what /proc says of
// the same processes while the stand-in nvidia-smi runs.
#include "process_support.hpp"
#include "serve_support.hpp"
#include "support.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <thread>
#include <unistd.h>

namespace test_monitor_cost {

using test::Background;
using test::quote;
using test::run_shell;
using json = nlohmann::json;

namespace {

const std::string fake = quote(SCRIPTS_DIR "/fake-nvidia-smi");

// One process on GPU 0 (this test's `sleep`), so that every stream runs: the GPU query, the
// compute-apps loop and pmon.
struct OneProcess {
  Background sleeper{"exec sleep 300"};
  std::string folder = test::temporary_folder();
  OneProcess() {
    test::write_file(folder + "/apps", "GPU-00000000-0000-0000-0000-000000000000, " +
                                           std::to_string(sleeper.pid()) +
                                           ", 1024 MiB, /usr/bin/sleep\n");
  }
  std::string environment() const { return "FAKE_NVSMI_APPS=" + quote(folder + "/apps") + " "; }
};

// user + system CPU seconds of `pid`, with `children` those of the children it waited for, as
// /proc/PID/stat has them (fields 14 to 17, after the name in parentheses); nullopt once gone.
std::optional<double> proc_cpu_seconds(int pid, bool children) {
  std::ifstream file("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  std::size_t paren = stat.rfind(')');
  if (paren == std::string::npos)
    return std::nullopt;
  std::istringstream fields(stat.substr(paren + 2));
  std::vector<std::string> field((std::istream_iterator<std::string>(fields)),
                                 std::istream_iterator<std::string>());
  if (field.size() < 15)
    return std::nullopt;
  // field[0] is stat's field 3 (the state): utime is its 14th, so field[11].
  double ticks = std::stod(field[11]) + std::stod(field[12]);
  if (children)
    ticks += std::stod(field[13]) + std::stod(field[14]);
  return ticks / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

// Resident bytes of `pid` from /proc/PID/statm.
std::optional<double> proc_resident_bytes(int pid) {
  std::ifstream file("/proc/" + std::to_string(pid) + "/statm");
  double size = 0, resident = 0;
  if (!(file >> size >> resident))
    return std::nullopt;
  return resident * static_cast<double>(::sysconf(_SC_PAGESIZE));
}

// `root` and every process below it, by the kernel's children lists.
std::vector<int> subtree(int root) {
  std::vector<int> found{root};
  for (std::size_t next = 0; next < found.size(); ++next) {
    test::Run run =
        run_shell("cat /proc/" + std::to_string(found[next]) + "/task/*/children 2>/dev/null");
    std::istringstream pids(run.out);
    for (int pid = 0; pids >> pid;)
      found.push_back(pid);
  }
  return found;
}

// A stream's CPU as /proc has it: its process and what runs below it, each with the children it
// reaped; and their resident memory.
double tree_cpu_seconds(int root) {
  double total = 0;
  for (int pid : subtree(root))
    total += proc_cpu_seconds(pid, true).value_or(0);
  return total;
}
double tree_resident_bytes(int root) {
  double total = 0;
  for (int pid : subtree(root))
    total += proc_resident_bytes(pid).value_or(0);
  return total;
}

// The value of the series `name{labels}` in a /metrics body.
std::optional<double> series(const std::string &metrics, const std::string &name_and_labels) {
  std::istringstream lines(metrics);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind(name_and_labels + " ", 0) == 0)
      return std::stod(line.substr(name_and_labels.size() + 1));
  return std::nullopt;
}

std::string stream_labels(const std::string &stream) {
  return "{process=\"nvidia-smi\",stream=\"" + stream + "\"}";
}

// The pid of serve's child that runs the stream whose arguments hold `marker`.
std::optional<int> child_running(int parent, const std::string &marker) {
  test::Run run = run_shell("for pid in $(pgrep -P " + std::to_string(parent) +
                            "); do tr '\\0' ' ' </proc/$pid/cmdline | grep -q -- " + quote(marker) +
                            " && echo $pid; done");
  if (run.out.empty())
    return std::nullopt;
  return std::stoi(run.out);
}

} // namespace

TEST_CASE("serve's /metrics: the agent's and each stream's CPU as /proc counts it, their memory "
          "and their starts") {
  OneProcess work;
  test::Server server("--source csv --interval 0.2 --pmon on --nvidia-smi " + fake,
                      work.environment());
  const std::map<std::string, std::string> markers = {{"gpu_query", "--query-gpu"},
                                                      {"processes", "--query-compute-apps"},
                                                      {"pmon", "pmon"},
                                                      {"dmon", "dmon"}};
  std::map<std::string, int> children;
  REQUIRE(test::wait_until([&] {
    for (const auto &[stream, marker] : markers)
      if (std::optional<int> pid = child_running(server.pid(), marker))
        children[stream] = *pid;
    return children.size() == markers.size();
  }));
  // A second of work, so that the figures are more than a tick.
  REQUIRE(test::wait_until([&] {
    std::optional<double> agent = proc_cpu_seconds(server.pid(), false);
    return agent && *agent >= 0.05;
  }));

  // Each figure lies between /proc's just before the scrape and just after it: the same count,
  // read at a moment between the two. A stream's is its process and all below it (the stand-in's
  // sleep, dmon's awk), as a wrapper's nvidia-smi would be. A tick (1/CLK_TCK) either way for
  // /proc's rounding, two for a stream's processes.
  double tick = 1.0 / static_cast<double>(::sysconf(_SC_CLK_TCK));
  std::map<std::string, double> before, after;
  before["agent"] = proc_cpu_seconds(server.pid(), false).value_or(-1);
  for (const auto &[stream, pid] : children)
    before[stream] = tree_cpu_seconds(pid);
  test::Http metrics = server.get("/metrics");
  after["agent"] = proc_cpu_seconds(server.pid(), false).value_or(-1);
  for (const auto &[stream, pid] : children)
    after[stream] = tree_cpu_seconds(pid);
  REQUIRE(metrics.status == 200);
  INFO(metrics.body);

  std::optional<double> agent =
      series(metrics.body, "nvsmi_agent_cpu_seconds_total{process=\"agent\"}");
  REQUIRE(agent);
  // getrusage's microseconds against /proc's ticks, utime and stime each cut down to a tick.
  CHECK(*agent >= before["agent"] - tick);
  CHECK(*agent <= after["agent"] + 2.5 * tick);
  for (const auto &[stream, pid] : children) {
    INFO(stream << ": /proc " << before[stream] << " to " << after[stream] << " s");
    std::optional<double> served =
        series(metrics.body, "nvsmi_agent_cpu_seconds_total" + stream_labels(stream));
    REQUIRE(served);
    CHECK(*served >= before[stream] - 2 * tick);
    CHECK(*served <= after[stream] + 2 * tick);
    CHECK(series(metrics.body, "nvsmi_agent_nvidia_smi_starts_total{stream=\"" + stream + "\"}") ==
          1.0);
    std::optional<double> memory =
        series(metrics.body, "nvsmi_agent_memory_bytes" + stream_labels(stream));
    // The stream's own process at least; what runs below it (a sleep of the stand-in's) comes
    // and goes between the scrape and this look.
    REQUIRE(memory);
    CHECK(*memory > proc_resident_bytes(pid).value_or(0) * 0.5);
    CHECK(*memory < tree_resident_bytes(pid) * 2 + 16 * 1024 * 1024);
  }
  // `nvlink -s`, once at the start: counted from wait4, and no memory now that it has ended.
  CHECK(series(metrics.body, "nvsmi_agent_nvidia_smi_starts_total{stream=\"nvlink\"}") == 1.0);
  CHECK(series(metrics.body, "nvsmi_agent_cpu_seconds_total" + stream_labels("nvlink")) > 0.0);
  CHECK_FALSE(series(metrics.body, "nvsmi_agent_memory_bytes" + stream_labels("nvlink")));
  std::optional<double> memory =
      series(metrics.body, "nvsmi_agent_memory_bytes{process=\"agent\"}");
  REQUIRE(memory);
  CHECK(*memory > *proc_resident_bytes(server.pid()) * 0.5);
  CHECK(*memory < *proc_resident_bytes(server.pid()) * 2);
  // A client asking in a loop gets the reading of that second again: the agent does not walk
  // /proc for each answer.
  std::set<double> readings;
  auto started = std::chrono::steady_clock::now();
  for (int i = 0; i < 20; ++i)
    if (std::optional<double> value =
            series(server.get("/metrics").body, "nvsmi_agent_cpu_seconds_total{process=\"agent\"}"))
      readings.insert(*value);
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  CHECK(static_cast<double>(readings.size()) <= seconds + 2);
  test::Run check = test::promtool_check_metrics(metrics.body);
  INFO(check.out);
  CHECK(check.exit_code == 0);
  CHECK(server.stop() == 0);
}

TEST_CASE("a run that ended keeps its CPU in the count, to wait4's microsecond, and a new run is "
          "a start: pmon stopped and started again by --pmon auto") {
  OneProcess work;
  std::string apps = test::read_file(work.folder + "/apps");
  test::Server server("--source csv --interval 0.2 --process-interval 0.2 --nvidia-smi " + fake,
                      work.environment());
  auto metric = [&](const std::string &name) { return series(server.get("/metrics").body, name); };
  const std::string pmon_cpu = "nvsmi_agent_cpu_seconds_total" + stream_labels("pmon");
  const std::string pmon_memory = "nvsmi_agent_memory_bytes" + stream_labels("pmon");
  const std::string pmon_starts = "nvsmi_agent_nvidia_smi_starts_total{stream=\"pmon\"}";
  REQUIRE(test::wait_until([&] { return child_running(server.pid(), "pmon").has_value(); }));
  REQUIRE(test::wait_until([&] { return metric(pmon_memory).has_value(); }));
  double running = metric(pmon_cpu).value_or(-1);
  // No process: pmon stopped within two of its 5 s intervals, its run's CPU still counted.
  test::write_file(work.folder + "/apps", "");
  REQUIRE(test::wait_until([&] { return !child_running(server.pid(), "pmon"); }));
  REQUIRE(test::wait_until([&] { return !metric(pmon_memory).has_value(); }));
  std::optional<double> ended = metric(pmon_cpu);
  REQUIRE(ended);
  CHECK(*ended >= running);
  CHECK(*ended > 0); // bash's start alone is more than a microsecond
  CHECK(metric(pmon_starts) == 1.0);
  // A process again: a second run, counted on top of the first.
  test::write_file(work.folder + "/apps", apps);
  REQUIRE(test::wait_until([&] { return metric(pmon_starts) == 2.0; }));
  CHECK(metric(pmon_cpu).value_or(-1) >= *ended);
  CHECK(server.stop() == 0);
}

TEST_CASE("watch --format json carries the monitor's cost every --cost-every seconds, from then "
          "on, never on the first sample; report reads such a log") {
  OneProcess work;
  std::string folder = test::temporary_folder();
  Background watch(work.environment() + AGENT_BIN " watch --source csv --interval 0.1 " +
                   "--cost-every 2 --format json --json-log " + quote(folder + "/log.json") +
                   " --nvidia-smi " + fake);
  auto lines = [&] {
    std::vector<json> parsed;
    for (const std::string &line : test::non_empty_lines_of(watch.out()))
      try {
        parsed.push_back(json::parse(line));
      } catch (const std::exception &) {
        break; // a line being written
      }
    return parsed;
  };
  auto with_cost = [&] {
    std::vector<json> found;
    for (const json &line : lines())
      if (line.contains("agent"))
        found.push_back(line);
    return found;
  };
  REQUIRE(test::wait_until([&] { return with_cost().size() >= 2; }));
  ::kill(watch.pid(), SIGTERM);
  CHECK(watch.wait() == 0);
  std::vector<json> all = lines();
  REQUIRE(!all.empty());
  CHECK_FALSE(all.front().contains("agent"));
  json cost = with_cost().back()["agent"];
  INFO(cost.dump());
  CHECK(cost["cpu_seconds"].get<double>() > 0);
  CHECK(cost["memory_bytes"].get<double>() > 1e6);
  CHECK(cost["window_seconds"].get<double>() >= 2);
  REQUIRE(cost["core_percent"].is_number());
  CHECK(cost["core_percent"].get<double>() > 0);
  std::map<std::string, json> streams;
  for (const json &stream : cost["streams"])
    streams[stream["stream"].get<std::string>()] = stream;
  for (const char *name : {"gpu_query", "processes", "pmon"}) {
    INFO(name);
    REQUIRE(streams.count(name));
    CHECK(streams[name]["starts"] == 1);
    CHECK(streams[name]["cpu_seconds"].get<double>() >= 0);
    CHECK(streams[name]["memory_bytes"].get<double>() > 0);
  }
  // Every 2 s, samples every 0.1 s: one line in twenty, and in fewer than half on the busiest
  // machine.
  CHECK(with_cost().size() < all.size() / 2);

  // The JSON log has it too, and report reads the log as before.
  std::string log = test::read_file(folder + "/log.json");
  CHECK(log.find("\"agent\":{") != std::string::npos);
  test::Run report = test::run_agent("report --format json " + quote(folder + "/log.json"));
  INFO(report.err);
  CHECK(report.exit_code == 0);
  CHECK(json::parse(report.out)["gpus"].size() == 8);
}

TEST_CASE("watch --cost-every 0 never carries the cost; a negative or non-number is a usage "
          "error") {
  test::Run run = run_shell(AGENT_BIN " watch --interval 0.2 --count 12 --cost-every 0 "
                                      "--format json --nvidia-smi " +
                            fake);
  REQUIRE(run.exit_code == 0);
  CHECK(run.out.find("\"agent\"") == std::string::npos);
  for (const char *value : {"-1", "often", "1e9"}) {
    test::Run refused = run_shell(AGENT_BIN " watch --count 1 --cost-every " + std::string(value) +
                                  " --nvidia-smi " + fake);
    INFO(value << ": " << refused.err);
    CHECK(refused.exit_code == 2);
    CHECK(refused.err.find("--cost-every") != std::string::npos);
  }
}

} // namespace test_monitor_cost

namespace test_monitor_cost {

TEST_CASE("--cpu-budget: over it, the streams are slowed and stopped in order, a step a window, "
          "each said once and served; the GPU query goes on") {
  OneProcess work;
  // Judged every 2 s; the stand-in's bash and awk cost far more than 0.01 % of a core.
  test::Server server("--source csv --interval 0.2 --pmon on --cpu-budget 0.01 --nvidia-smi " +
                          fake,
                      work.environment() + "NVSMI_TEST_BUDGET_WINDOW_SECONDS=2 ");
  const std::vector<std::string> steps = {
      "pmon every 10 s",         "pmon stopped",
      "dmon every 10 s",         "dmon stopped (GPU activity and PCIe traffic unknown)",
      "process list every 10 s", "a sample every 0.4 s",
      "a sample every 0.8 s",    "a sample every 1.6 s"};
  auto said = [&](const std::string &text) { return server.log().find(text); };
  REQUIRE(test::wait_until([&] { return said("with every step taken") != std::string::npos; },
                           std::chrono::seconds(120)));
  std::string log = server.log();
  INFO(log);
  std::size_t previous = 0;
  for (const std::string &step : steps) {
    INFO(step);
    std::string line = "over its --cpu-budget of 0.01 %: " + step;
    std::size_t at = log.find(line);
    REQUIRE(at != std::string::npos);
    CHECK(at >= previous); // in the ladder's order
    previous = at;
    // Each step said once.
    CHECK(log.find(line, at + line.size()) == std::string::npos);
  }
  CHECK(log.find("monitor cost ") != std::string::npos);

  // Served: the steps in force, each loop's interval, and no pmon or dmon running.
  std::string metrics = server.get("/metrics").body;
  INFO(metrics);
  CHECK(series(metrics, "nvsmi_agent_cpu_budget_percent") == 0.01);
  CHECK(series(metrics, "nvsmi_agent_cpu_budget_steps") == 8.0);
  CHECK(series(metrics, "nvsmi_agent_stream_interval_seconds{stream=\"gpu_query\"}") == 1.6);
  CHECK(series(metrics, "nvsmi_agent_stream_interval_seconds{stream=\"processes\"}") == 10.0);
  CHECK_FALSE(series(metrics, "nvsmi_agent_stream_interval_seconds{stream=\"pmon\"}"));
  CHECK_FALSE(series(metrics, "nvsmi_agent_stream_interval_seconds{stream=\"dmon\"}"));
  CHECK_FALSE(child_running(server.pid(), "pmon"));
  CHECK_FALSE(child_running(server.pid(), "dmon"));
  std::optional<int> query = child_running(server.pid(), "--query-gpu");
  REQUIRE(query);
  CHECK(test::read_file("/proc/" + std::to_string(*query) + "/cmdline")
            .find("-lms\0"
                  "1600") != std::string::npos);
  // Still fresh at the longer interval: up, and samples still coming.
  CHECK(series(metrics, "nvsmi_up") == 1.0);
  CHECK(server.stop() == 0);
}

TEST_CASE("--cpu-budget: once the cost falls, the steps come back, the last first, each said "
          "and served, and the loop runs again at the interval in force") {
  // A stand-in that costs about a core while its file is there (FAKE_NVSMI_BURN_WHILE): over a
  // 40 % budget at every step, so the ladder (dmon slower, dmon off, the interval doubled three
  // times) is climbed to its end, each step's saving measured as small; then cheap, a few percent
  // at 1.6 s, so the last step (the interval 0.8 s to 1.6 s) fits again and is taken back.
  std::string folder = test::temporary_folder();
  std::string burn = folder + "/burn";
  test::write_file(burn, "");
  test::Server server(
      "--source csv --interval 0.2 --no-processes --cpu-budget 40 --nvidia-smi " + fake,
      "NVSMI_TEST_BUDGET_WINDOW_SECONDS=3 FAKE_NVSMI_BURN_WHILE=" + quote(burn) + " ");
  auto said = [&](const std::string &text) { return server.log().find(text) != std::string::npos; };
  REQUIRE(
      test::wait_until([&] { return said("with every step taken"); }, std::chrono::seconds(180)));
  REQUIRE(::unlink(burn.c_str()) == 0);

  const std::string back = "under its --cpu-budget of 40 %: no longer ";
  REQUIRE(test::wait_until([&] { return said(back); }, std::chrono::seconds(120)));
  std::string log = server.log();
  INFO(log);
  // The last step taken is the first taken back, said once.
  std::size_t first = log.find(back);
  CHECK(log.compare(first + back.size(), 20, "a sample every 1.6 s") == 0);
  CHECK(log.find(back + "a sample every 1.6 s", first + back.size()) == std::string::npos);

  // Served as in force, and the GPU query's loop started again at it: -lms as the interval
  // served (further steps may come back meanwhile, so both are read until they agree).
  std::string seen;
  bool agree = test::wait_until(
      [&] {
        std::string metrics = server.get("/metrics").body;
        std::optional<double> every =
            series(metrics, "nvsmi_agent_stream_interval_seconds{stream=\"gpu_query\"}");
        std::optional<double> steps = series(metrics, "nvsmi_agent_cpu_budget_steps");
        std::optional<int> query = child_running(server.pid(), "--query-gpu");
        if (!every || !steps || !query)
          return false;
        std::string cmdline = test::read_file("/proc/" + std::to_string(*query) + "/cmdline");
        std::string lms = std::string("-lms") + '\0' +
                          std::to_string(static_cast<int>(*every * 1000 + 0.5)) + '\0';
        seen = "interval " + std::to_string(*every) + ", steps " + std::to_string(*steps) + ", " +
               cmdline;
        return *every < 1.6 && *steps < 5 && cmdline.find(lms) != std::string::npos;
      },
      std::chrono::seconds(60));
  INFO(seen);
  CHECK(agree);
  CHECK(series(server.get("/metrics").body, "nvsmi_up") == 1.0);
  CHECK(server.stop() == 0);
  test::run_shell("rm -rf " + quote(folder));
}

TEST_CASE("--cpu-budget off takes no step; a budget it keeps takes none either") {
  OneProcess work;
  for (const char *budget : {"off", "1600"}) {
    INFO(budget);
    test::Server server(std::string("--source csv --interval 0.2 --pmon on --cpu-budget ") +
                            budget + " --nvidia-smi " + fake,
                        work.environment() + "NVSMI_TEST_BUDGET_WINDOW_SECONDS=2 ");
    // Three windows.
    std::this_thread::sleep_for(std::chrono::seconds(7));
    std::string metrics = server.get("/metrics").body;
    INFO(metrics << server.log());
    CHECK(server.log().find("--cpu-budget of") == std::string::npos);
    if (std::string(budget) == "off") {
      CHECK_FALSE(series(metrics, "nvsmi_agent_cpu_budget_percent"));
      CHECK_FALSE(series(metrics, "nvsmi_agent_cpu_budget_steps"));
      CHECK_FALSE(series(metrics, "nvsmi_agent_cpu_budget_judged_percent"));
    } else {
      CHECK(series(metrics, "nvsmi_agent_cpu_budget_steps") == 0.0);
      // Judged, and found under it: the stand-in costs more than nothing.
      CHECK(series(metrics, "nvsmi_agent_cpu_budget_judged_percent").value_or(0) > 0);
    }
    CHECK(series(metrics, "nvsmi_agent_stream_interval_seconds{stream=\"pmon\"}") == 1.0);
    CHECK(series(metrics, "nvsmi_agent_stream_interval_seconds{stream=\"gpu_query\"}") == 0.2);
    CHECK(child_running(server.pid(), "pmon"));
    CHECK(server.stop() == 0);
  }
}

TEST_CASE("--cpu-budget: what is not a percent is refused with one line and the usage code") {
  for (const char *bad : {"0", "-1", "abc", "1%", "nan", "1e9", ""}) {
    INFO(bad);
    test::Run run = test::run_agent(std::string("watch --cpu-budget ") + quote(bad) +
                                    " --fixture " FIXTURES_DIR "/csv/h100-8gpu.csv");
    CHECK(run.exit_code == 2);
    CHECK(run.err.find("--cpu-budget") != std::string::npos);
    CHECK(test::non_empty_lines_of(run.err).size() <= 2);
  }
}

} // namespace test_monitor_cost
