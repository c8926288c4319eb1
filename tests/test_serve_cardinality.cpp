// How many series /metrics makes (docs/SERVE.md, "How many series"), counted through the built
// agent on the 8-GPU fixture: per GPU, a bound that no number of processes moves by default; a
// series per process only with --metrics-processes; and the allow-list.
#include "serve_support.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <regex>
#include <set>

namespace test_serve_cardinality {

using test::quote;

namespace {

// docs/SERVE.md, "How many series": the most series a GPU makes by default without users or Xids
// (every reading known: 15 readings, 44 of state and health, 9 counters), and those of a host that
// are no GPU's (the agent's 11, its cost's 24 with all five nvidia-smi streams running and the
// budget, the host's 3, the per-user families' 2 x 11 at the default cap, and nvsmi_xid_readable).
constexpr std::size_t most_series_per_gpu = 68;
constexpr std::size_t most_host_series = 61;

// The 8-GPU fixture with `extra` more processes on the GPU of its first, each a pid of its own: a
// local user starting short jobs one after another.
std::string crowded_fixture(int extra) {
  std::string xml = test::read_file(test::fixture_path("xml/h100-8gpu-v12.xml"));
  std::size_t start = xml.find("<process_info>");
  std::size_t end = xml.find("</process_info>", start) + std::string("</process_info>").size();
  std::string process = xml.substr(start, end - start);
  std::size_t pid_at = process.find("<pid>");
  std::size_t pid_end = process.find("</pid>");
  std::string more;
  for (int i = 0; i < extra; ++i)
    more += process.substr(0, pid_at) + "<pid>" + std::to_string(50000 + i) +
            process.substr(pid_end) + "\n";
  xml.insert(end, "\n" + more);
  std::string path = test::temporary_folder() + "/crowded.xml";
  test::write_file(path, xml);
  return path;
}

struct Counts {
  std::map<int, std::size_t> per_gpu; // samples labelled gpu="N"
  std::size_t host = 0;               // samples with no gpu label
};

Counts count_series(const std::string &metrics) {
  static const std::regex gpu_label("[{,]gpu=\"([0-9]+)\"");
  Counts counts;
  for (const std::string &line : test::non_empty_lines_of(metrics)) {
    if (line[0] == '#')
      continue;
    std::smatch match;
    if (std::regex_search(line, match, gpu_label))
      ++counts.per_gpu[std::stoi(match[1])];
    else
      ++counts.host;
  }
  return counts;
}

// /metrics once serve has a sample.
std::string metrics_of(const test::Server &server) {
  std::string body;
  test::wait_until([&] {
    body = server.get("/metrics").body;
    return body.find("nvsmi_gpu_info{") != std::string::npos;
  });
  return body;
}

} // namespace

TEST_CASE("serve: series per GPU are bounded by default, whatever the processes") {
  std::string crowded = crowded_fixture(200);
  Counts plain = count_series(
      metrics_of(test::Server("--fixture " + quote(test::fixture_path("xml/h100-8gpu-v12.xml")))));
  test::Server crowded_server("--fixture " + quote(crowded));
  std::string m = metrics_of(crowded_server);
  Counts by_default = count_series(m);
  CHECK(m.find("pid=") == std::string::npos);
  REQUIRE(by_default.per_gpu.size() == 8);
  for (const auto &[gpu, count] : by_default.per_gpu) {
    INFO("GPU " << gpu);
    CHECK(count <= most_series_per_gpu);
    CHECK(count == plain.per_gpu[gpu]); // 201 processes on one GPU make no series of their own
  }
  CHECK(by_default.host <= most_host_series);
  CHECK(by_default.host == plain.host);

  // Asked for: a series per process and family (pmon's shares are unknown in a recording).
  Counts with_processes =
      count_series(metrics_of(test::Server("--metrics-processes --fixture " + quote(crowded))));
  std::size_t added = 0, most_added = 0;
  for (const auto &[gpu, count] : with_processes.per_gpu) {
    added += count - by_default.per_gpu[gpu];
    most_added = std::max(most_added, count - by_default.per_gpu[gpu]);
  }
  CHECK(added == 204); // the fixture's 4 processes and the 200 more
  CHECK(most_added == 201);
  CHECK(with_processes.host == by_default.host);
}

TEST_CASE("serve --metrics-include: only the families named, HELP and TYPE too") {
  test::Server server("--metrics-include nvsmi_gpu_temperature_celsius,nvsmi_gpu_pcie_* "
                      "--metrics-include nvsmi_up --fixture " +
                      quote(test::fixture_path("xml/h100-8gpu-v12.xml")));
  std::string m;
  test::wait_until([&] {
    m = server.get("/metrics").body;
    return m.find("nvsmi_gpu_temperature_celsius{") != std::string::npos;
  });
  std::set<std::string> families;
  static const std::regex help("^# HELP ([a-z_:]+) ");
  for (const std::string &line : test::non_empty_lines_of(m)) {
    std::smatch match;
    if (std::regex_search(line, match, help))
      families.insert(match[1]);
    else
      CHECK((line.rfind("# TYPE ", 0) == 0 ||
             line.rfind("nvsmi_gpu_temperature_celsius{", 0) == 0 ||
             line.rfind("nvsmi_gpu_pcie_", 0) == 0 || line == "nvsmi_up 1"));
  }
  CHECK(families == std::set<std::string>{
                        "nvsmi_gpu_pcie_link_generation", "nvsmi_gpu_pcie_link_generation_max",
                        "nvsmi_gpu_pcie_link_width", "nvsmi_gpu_pcie_link_width_max",
                        "nvsmi_gpu_pcie_replays_total", "nvsmi_gpu_pcie_rx_bytes_per_second",
                        "nvsmi_gpu_pcie_tx_bytes_per_second", "nvsmi_gpu_temperature_celsius",
                        "nvsmi_up"});
  CHECK(server.stop() == 0);
}

TEST_CASE("serve --metrics-include refuses a family it does not have, in one line, at start") {
  for (const char *wrong : {"nvsmi_gpu_temprature_celsius", "nvsmi_nothing_*", "nvsmi up"}) {
    test::Run run = test::run_agent("serve --listen 127.0.0.1:0 --metrics-include " +
                                    quote(std::string("nvsmi_up,") + wrong) + " --fixture " +
                                    quote(test::fixture_path("xml/h100-8gpu-v12.xml")));
    INFO(run.err);
    CHECK(run.exit_code == 2);
    CHECK(run.out.empty());
    CHECK(test::non_empty_lines_of(run.err).size() == 1);
    CHECK_THAT(run.err, Catch::StartsWith("nvsmi-agent: ") && Catch::Contains("--metrics-include"));
    // A slip gets the family meant; a name like none gets the families that begin as it does.
    if (std::string(wrong) == "nvsmi_gpu_temprature_celsius")
      CHECK_THAT(run.err, Catch::Contains("did you mean 'nvsmi_gpu_temperature_celsius'?"));
    if (std::string(wrong) == "nvsmi_nothing_*")
      CHECK_THAT(run.err, Catch::Contains("(the families that start with \"nvsmi_\": ") &&
                              Catch::Contains("nvsmi_gpu_clock_hz, "));
  }
  test::Run run = test::run_agent("serve --listen 127.0.0.1:0 --metrics-users 1001 --fixture " +
                                  quote(test::fixture_path("xml/h100-8gpu-v12.xml")));
  CHECK(run.exit_code == 2);
  CHECK_THAT(run.err, Catch::Contains("--metrics-users"));
}

} // namespace test_serve_cardinality
