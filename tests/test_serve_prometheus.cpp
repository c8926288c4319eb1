// A real Prometheus server (Debian's `prometheus`) on loopback scrapes serve on a fixture; its
// query API then returns the fixture's temperature.
#include "serve_support.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

using test::quote;

TEST_CASE("serve: a real Prometheus server scrapes it") {
  if (!test::installed("prometheus")) {
    WARN("prometheus is not installed (scripts/install-deps installs it): not scraped");
    return;
  }
  test::Server agent("--interval 0.5 --fixture " +
                     quote(test::fixture_path("xml/h100-8gpu-v12.xml")));
  test::Prometheus prometheus({agent.port()});
  nlohmann::json result =
      prometheus.query("nvsmi_gpu_temperature_celsius{gpu=\"3\"}",
                       [](const nlohmann::json &found) { return !found.empty(); });
  INFO(prometheus.log());
  REQUIRE(result.size() == 1);
  CHECK(result[0]["metric"]["job"] == "nvsmi-agent");
  CHECK(result[0]["metric"]["uuid"] == "GPU-00000000-0000-0000-0000-000000000003");
  CHECK(result[0]["value"][1] == "33");
}

TEST_CASE("serve: a process name that is not UTF-8 keeps the host on a real Prometheus") {
  if (!test::installed("prometheus")) {
    WARN("prometheus is not installed (scripts/install-deps installs it): not scraped");
    return;
  }
  // A local user can name a process with any bytes; Prometheus refuses a whole scrape that
  // holds one label that is not UTF-8, and every series of the host would go.
  test::Server agent("--interval 0.5 --metrics-processes --fixture " +
                     quote(test::fixture_with_process_name("evil\xff\xfe")));
  test::Prometheus prometheus({agent.port()});
  nlohmann::json up = prometheus.query("up", [](const nlohmann::json &found) {
    return !found.empty() && found[0]["value"][1] == "1";
  });
  INFO(prometheus.log());
  REQUIRE(up.size() == 1);
  CHECK(up[0]["value"][1] == "1");
  nlohmann::json processes =
      prometheus.query("nvsmi_gpu_process_memory_used_bytes",
                       [](const nlohmann::json &found) { return found.size() >= 4; });
  bool replaced = false;
  for (const auto &series : processes)
    replaced |= series["metric"].value("process_name", "") == "evil\xef\xbf\xbd\xef\xbf\xbd";
  CHECK(replaced);
  CHECK(prometheus.query("count(nvsmi_gpu_temperature_celsius)", [](const nlohmann::json &found) {
    return !found.empty();
  })[0]["value"][1] == "8");
}
