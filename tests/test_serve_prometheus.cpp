// A real Prometheus server (Debian's `prometheus`) on loopback scrapes serve on a fixture; its
// query API then returns the fixture's temperature.
#include "serve_support.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
#include <thread>

using test::quote;

TEST_CASE("serve: a real Prometheus server scrapes it") {
  if (!test::installed("prometheus")) {
    WARN("prometheus is not installed (scripts/install-deps installs it): not scraped");
    return;
  }
  test::Server agent("--interval 0.5 --fixture " +
                     quote(test::fixture_path("xml/h100-8gpu-v12.xml")));
  std::string folder = test::temporary_folder();
  test::write_file(folder + "/prometheus.yml",
                   "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                   "scrape_configs:\n  - job_name: nvsmi-agent\n    static_configs:\n"
                   "      - targets: ['127.0.0.1:" +
                       std::to_string(agent.port()) + "']\n");
  int port = test::free_port();
  std::string pid_file = quote(folder + "/prometheus.pid");
  test::run_shell("prometheus --config.file=" + quote(folder + "/prometheus.yml") +
                  " --storage.tsdb.path=" + quote(folder + "/data") +
                  " --web.listen-address=127.0.0.1:" + std::to_string(port) + " >" +
                  quote(folder + "/prometheus.log") + " 2>&1 & echo $! >" + pid_file);

  std::string query = "http://127.0.0.1:" + std::to_string(port) +
                      "/api/v1/query?query=nvsmi_gpu_temperature_celsius%7Bgpu%3D%223%22%7D";
  nlohmann::json result;
  for (int i = 0; i < 120; ++i) {
    test::Run run = test::run_shell("curl -s --max-time 2 " + quote(query));
    auto answer = nlohmann::json::parse(run.out.empty() ? "{}" : run.out, nullptr, false);
    if (answer.is_object() && answer.value("status", "") == "success" &&
        !answer["data"]["result"].empty()) {
      result = answer["data"]["result"][0];
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  test::run_shell("kill $(cat " + pid_file + ")");
  INFO(test::read_file(folder + "/prometheus.log"));
  REQUIRE_FALSE(result.is_null());
  CHECK(result["metric"]["job"] == "nvsmi-agent");
  CHECK(result["metric"]["uuid"] == "GPU-00000000-0000-0000-0000-000000000003");
  CHECK(result["value"][1] == "33");
}
