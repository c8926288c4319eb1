// A real Prometheus server (Debian's `prometheus`) on loopback scrapes serve on a fixture; its
// query API then returns the fixture's temperature.
#include "serve_support.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <chrono>

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
  std::string pid_file = quote(folder + "/prometheus.pid");
  nlohmann::json result;
  // The port was free a moment ago; should another program take it first, Prometheus leaves
  // and is started again on another.
  for (int attempt = 0; attempt < 5 && result.is_null(); ++attempt) {
    int port = test::free_port();
    test::run_shell("prometheus --config.file=" + quote(folder + "/prometheus.yml") +
                    " --storage.tsdb.path=" + quote(folder + "/data") +
                    " --web.listen-address=127.0.0.1:" + std::to_string(port) + " >" +
                    quote(folder + "/prometheus.log") + " 2>&1 & echo $! >" + pid_file);
    std::string query = "http://127.0.0.1:" + std::to_string(port) +
                        "/api/v1/query?query=nvsmi_gpu_temperature_celsius%7Bgpu%3D%223%22%7D";
    // Starting up and the first scrapes take a few seconds on an idle machine, many on a busy one.
    test::wait_until(
        [&] {
          test::Run run = test::run_shell("curl -s --max-time 10 " + quote(query));
          auto answer = nlohmann::json::parse(run.out.empty() ? "{}" : run.out, nullptr, false);
          if (answer.is_object() && answer.value("status", "") == "success" &&
              !answer["data"]["result"].empty()) {
            result = answer["data"]["result"][0];
            return true;
          }
          return test::run_shell("kill -0 $(cat " + pid_file + ")").exit_code != 0; // it left
        },
        std::chrono::seconds(120), std::chrono::milliseconds(250));
    test::run_shell("kill $(cat " + pid_file + ")");
    if (result.is_null() &&
        test::read_file(folder + "/prometheus.log").find("address already in use") ==
            std::string::npos)
      break;
  }
  INFO(test::read_file(folder + "/prometheus.log"));
  REQUIRE_FALSE(result.is_null());
  CHECK(result["metric"]["job"] == "nvsmi-agent");
  CHECK(result["metric"]["uuid"] == "GPU-00000000-0000-0000-0000-000000000003");
  CHECK(result["value"][1] == "33");
}
