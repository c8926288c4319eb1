// Which families and series /metrics writes (formats/prometheus_selection.hpp, docs/SERVE.md "How
// many series"): per-process series only when asked, the users beyond the cap as one, and the
// allow-list, checked against the families the writers have.
#include "formats/prometheus_metrics.hpp"
#include "nvsmi/xml_reader.hpp"
#include "snapshot_builders.hpp"
#include "support.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <regex>
#include <set>

namespace test_metrics_selection {

using namespace nvsmi;
using test::observed_process;

namespace {

bool has(const std::string &text, const std::string &part) {
  return text.find(part) != std::string::npos;
}

// The families a text has, by their HELP lines.
std::set<std::string> families(const std::string &metrics) {
  std::set<std::string> names;
  static const std::regex help("^# HELP ([a-zA-Z_:][a-zA-Z0-9_:]*) ");
  std::size_t start = 0;
  while (start < metrics.size()) {
    std::size_t end = metrics.find('\n', start);
    std::smatch match;
    std::string line = metrics.substr(start, end - start);
    if (std::regex_search(line, match, help))
      names.insert(match[1]);
    start = end == std::string::npos ? metrics.size() : end + 1;
  }
  return names;
}

// Users with these MiB each, one process apiece on GPU 0 of a T4, and one process on GPU 1 of the
// first user's.
Snapshot users_with(const std::vector<std::pair<std::string, int>> &users) {
  Snapshot s = test::t4_snapshot();
  s.gpus.push_back(test::t4_gpu(1));
  std::vector<Process> on_0;
  int pid = 100;
  for (const auto &[user, mib] : users)
    on_0.push_back(observed_process(pid++, user, mib));
  s.gpus[0].processes = on_0;
  s.gpus[1].processes = std::vector<Process>{observed_process(pid, users.front().first, 1)};
  s.host = test::observed_host();
  return s;
}

MetricsSelection users_cap(std::size_t users) {
  MetricsSelection selection;
  selection.users = users;
  return selection;
}

} // namespace

TEST_CASE("metrics: per-process series only when asked, per-user ones by default") {
  Snapshot s = users_with({{"alice", 3000}, {"bob", 500}});
  std::string m = format_snapshot_metrics(s);
  CHECK_FALSE(has(m, "nvsmi_gpu_process_"));
  CHECK_FALSE(has(m, "pid="));
  CHECK_THAT(m, Catch::Contains("nvsmi_user_gpus{user=\"alice\"} 2\n"));
  CHECK_THAT(m, Catch::Contains(",user=\"bob\"} 1\n")); // nvsmi_gpu_user_processes
  MetricsSelection processes;
  processes.processes = true;
  m = format_snapshot_metrics(s, processes);
  CHECK_THAT(m, Catch::Contains("# TYPE nvsmi_gpu_process_memory_used_bytes gauge\n"));
  CHECK_THAT(m, Catch::Contains(",pid=\"101\",process_name=\"python3\",user=\"bob\""));
}

TEST_CASE("metrics: a MIG instance's compute processes by user, capped as the GPUs' users") {
  Snapshot s = users_with({{"alice", 3000}, {"bob", 500}, {"carol", 100}});
  // GPU 0 with two instances: alice's and bob's processes on instance 1, carol's on 2.
  MigDevice one, two;
  one.index = 0;
  one.gpu_instance_id = 1;
  two.index = 1;
  two.gpu_instance_id = 2;
  one.compute_instance_id = two.compute_instance_id = 0;
  s.gpus[0].mig_devices = std::vector<MigDevice>{one, two};
  for (Process &process : *s.gpus[0].processes) {
    process.gpu_instance_id = process.user == Text("carol") ? 2 : 1;
    process.compute_instance_id = 0;
  }
  std::string m = format_snapshot_metrics(s);
  auto series = [&](const std::string &gi, const std::string &user) {
    std::regex line("\nnvsmi_mig_user_processes\\{gpu=\"0\",[^}]*gpu_instance=\"" + gi +
                    "\",compute_instance=\"0\",user=\"" + user + "\"\\} 1\n");
    return std::regex_search(m, line);
  };
  CHECK(series("1", "alice"));
  CHECK(series("1", "bob"));
  CHECK(series("2", "carol"));
  // Capped at one user: alice by name (the most memory), the others as one, per instance.
  m = format_snapshot_metrics(s, users_cap(1));
  CHECK(series("1", "alice"));
  CHECK(series("1", "\\(other users\\)"));
  CHECK(series("2", "\\(other users\\)"));
  CHECK_FALSE(series("1", "bob"));
}

TEST_CASE("metrics: users beyond the cap are summed as one, the most memory named first") {
  Snapshot s = users_with({{"alice", 3000}, {"carol", 100}, {"dave", 100}, {"bob", 2000}});
  std::string m = format_snapshot_metrics(s, users_cap(2));
  CHECK_THAT(m, Catch::Contains("nvsmi_user_gpu_memory_used_bytes{user=\"(other users)\"} " +
                                std::to_string(200LL << 20) + "\n"));
  CHECK_THAT(m, Catch::Contains("nvsmi_user_gpus{user=\"(other users)\"} 1\n"));
  CHECK_THAT(m, Catch::Contains("nvsmi_user_gpus{user=\"alice\"} 2\n"));
  CHECK_THAT(m, Catch::Contains("nvsmi_user_gpus{user=\"bob\"} 1\n"));
  CHECK_FALSE(has(m, "user=\"carol\""));
  CHECK_FALSE(has(m, "user=\"dave\""));
  CHECK_THAT(m, Catch::Contains(R"(nvsmi_gpu_user_processes{gpu="0",uuid="GPU-00000000-0000-0000-)"
                                R"x(0000-000000000000",name="Tesla T4",user="(other users)"} 2)x"));
  // A tie goes by name, so that the same users are named from one scrape to the next.
  m = format_snapshot_metrics(s, users_cap(3));
  CHECK_THAT(m, Catch::Contains("nvsmi_user_gpus{user=\"carol\"} 1\n"));
  CHECK_FALSE(has(m, "user=\"dave\""));
  CHECK_THAT(m, Catch::Contains("nvsmi_user_gpu_memory_used_bytes{user=\"(other users)\"} " +
                                std::to_string(100LL << 20) + "\n"));
  // Under the cap: every user by name, and no bucket.
  m = format_snapshot_metrics(s, users_cap(4));
  CHECK_THAT(m, Catch::Contains("nvsmi_user_gpus{user=\"dave\"} 1\n"));
  CHECK_FALSE(has(m, "user=\"(other users)\"}"));
  // 0: no per-user series at all, and no user label anywhere.
  m = format_snapshot_metrics(s, users_cap(0));
  CHECK_FALSE(has(m, "user="));
  CHECK_FALSE(has(m, "nvsmi_user_"));
}

TEST_CASE("metrics: many users make at most the cap and one more series per family") {
  std::vector<std::pair<std::string, int>> crowd;
  for (int i = 0; i < 500; ++i)
    crowd.emplace_back("user" + std::to_string(i), i);
  std::string m = format_snapshot_metrics(users_with(crowd));
  std::size_t user_series = 0, start = 0;
  while ((start = m.find("\nnvsmi_user_gpus{", start)) != std::string::npos) {
    ++user_series;
    ++start;
  }
  CHECK(user_series == MetricsSelection::default_metrics_users + 1);
  CHECK_THAT(m, Catch::Contains("nvsmi_user_gpus{user=\"user499\"} 1\n"));
  CHECK_FALSE(has(m, "user=\"user489\""));
}

TEST_CASE("metrics: a user named as the bucket is counted in it, not beside it") {
  Snapshot s = users_with({{"alice", 3000}, {"(other users)", 10}});
  std::string m = format_snapshot_metrics(s);
  CHECK_THAT(m, Catch::Contains("nvsmi_user_gpus{user=\"(other users)\"} 1\n"));
  std::size_t first = m.find("nvsmi_user_gpus{user=\"(other users)\"}");
  CHECK(m.find("nvsmi_user_gpus{user=\"(other users)\"}", first + 1) == std::string::npos);
}

TEST_CASE("metrics: --metrics-include writes only the families it names, HELP and TYPE too") {
  Snapshot s = users_with({{"alice", 3000}});
  MetricsSelection selection;
  selection.processes = true;
  selection.include = {"nvsmi_gpu_temperature_celsius", "nvsmi_host_*", "nvsmi_up"};
  std::string m = format_snapshot_metrics(s, selection);
  CHECK(families(m) ==
        std::set<std::string>{"nvsmi_gpu_temperature_celsius", "nvsmi_host_cpu_utilization_ratio",
                              "nvsmi_host_memory_total_bytes", "nvsmi_host_memory_used_bytes"});
  for (const char *gone : {"nvsmi_gpu_power", "nvsmi_gpu_state", "nvsmi_user_", "pid="})
    CHECK_FALSE(has(m, gone));
  AgentHealth health;
  health.up = true;
  CHECK(format_health_metrics(health, selection) == "# HELP nvsmi_up 1 when the last sample is "
                                                    "younger than three intervals, else 0.\n"
                                                    "# TYPE nvsmi_up gauge\nnvsmi_up 1\n");
}

TEST_CASE("metrics: the families --metrics-include knows are every family the writers write") {
  std::vector<std::string> known = metric_family_names();
  std::set<std::string> known_set(known.begin(), known.end());
  MetricsSelection everything;
  everything.processes = true;
  std::set<std::string> written;
  for (const char *fixture : {"xml/h100-8gpu-v12.xml", "xml/h100-8gpu-failing-v12.xml",
                              "xml/h100-8gpu-states-v12.xml", "xml/h100-8gpu-lost-v12.xml"}) {
    Snapshot s = read_xml(test::read_file(test::fixture_path(fixture)));
    s.host = test::observed_host();
    s.kernel_log = KernelLog{};
    s.kernel_log->readable = true;
    s.kernel_log->xids.push_back(XidTally{});
    s.kernel_log->xids.back().xid = 79;
    s.kernel_log->xids.back().count = 1;
    if (!s.gpus.empty() && s.gpus[0].processes && !s.gpus[0].processes->empty())
      (*s.gpus[0].processes)[0] = observed_process(4242, "alice", 1000);
    std::set<std::string> these = families(format_snapshot_metrics(s, everything));
    written.insert(these.begin(), these.end());
  }
  AgentHealth health;
  health.last_sample_unix_s = 1;
  std::set<std::string> these = families(format_health_metrics(health));
  written.insert(these.begin(), these.end());
  for (const std::string &family : written) {
    INFO(family);
    CHECK(known_set.count(family) == 1);
  }
  CHECK(written.size() > 40);
  for (const char *family : {"nvsmi_gpu_process_memory_used_bytes", "nvsmi_gpu_xid_errors_total",
                             "nvsmi_xid_readable", "nvsmi_host_cpu_utilization_ratio", "nvsmi_up",
                             "nvsmi_serve_pending_body_bytes", "nvsmi_user_gpus"})
    CHECK(known_set.count(family) == 1);
  CHECK(std::is_sorted(known.begin(), known.end()));
}

TEST_CASE("metrics: --metrics-include refuses a name no family has: the one meant, or the "
          "families that begin as it does") {
  CHECK(metrics_include_problem("nvsmi_gpu_temperature_celsius").empty());
  CHECK(metrics_include_problem("nvsmi_gpu_pcie_*").empty());
  CHECK(metrics_include_problem("*").empty());
  std::string problem = metrics_include_problem("nvsmi_gpu_temperature");
  CHECK(problem == "no metric family is \"nvsmi_gpu_temperature\"; did you mean "
                   "'nvsmi_gpu_temperature_celsius'? (docs/METRICS.md lists every family)");
  std::string prefix = metrics_include_problem("nvsmi_nothing_*");
  CHECK_THAT(prefix, Catch::StartsWith("no metric family starts with \"nvsmi_nothing_\" (the "
                                       "families that start with \"nvsmi_\": "));
  CHECK_THAT(prefix, Catch::Contains("nvsmi_gpu_temperature_celsius, ") &&
                         Catch::Contains("nvsmi_up") && !Catch::Contains("DCGM_"));
  CHECK(prefix.find('\n') == std::string::npos);
  // A name like none, not even in its first word: every family.
  CHECK_THAT(metrics_include_problem("zzz"),
             Catch::Contains("(the families: DCGM_") && Catch::Contains("nvsmi_up"));
  // Bytes that are no name are not said back: the message reaches a terminal.
  for (const char *hostile : {"", "nvsmi_up\x1b[2J", "nvsmi_*_bytes", "nvsmi up", "\xff"}) {
    std::string refused = metrics_include_problem(hostile);
    CHECK_THAT(refused, Catch::StartsWith("not a metric family name"));
  }
}

} // namespace test_metrics_selection
