// A real Prometheus server (Debian's `prometheus`) on loopback scrapes serve on a fixture; its
// query API then returns the fixture's temperature.
#include "serve_support.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

namespace test_serve_prometheus {

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

TEST_CASE("serve --metric-names dcgm: the stand-in's GPUs under the DCGM exporter's names, a "
          "hostile model name one label on a real Prometheus",
          "[dcgm]") {
  // nvidia-smi prints whatever the board's firmware and the driver say: the model name may hold
  // a quote, a newline and bytes that are not UTF-8.
  std::string xml = test::read_file(test::fixture_path("xml/h100-8gpu-v12.xml"));
  const std::string model = "<product_name>NVIDIA H100 80GB HBM3</product_name>";
  xml.replace(xml.find(model), model.size(),
              "<product_name>H100&quot;} 1\nDCGM_FI_DEV_GPU_TEMP{gpu=&quot;9\xff</product_name>");
  std::string fixture = test::temporary_folder() + "/hostile-model.xml";
  test::write_file(fixture, xml);
  test::Server agent("--interval 0.5 --metric-names dcgm --source xml --no-processes "
                     "--nvidia-smi " +
                         quote(std::string(SCRIPTS_DIR) + "/fake-nvidia-smi"),
                     "FAKE_NVSMI_XML=" + quote(fixture));
  std::string m;
  REQUIRE(test::wait_until([&] {
    m = agent.get("/metrics").body;
    return m.find("DCGM_FI_DEV_GPU_TEMP{") != std::string::npos;
  }));
  CHECK_THAT(m, Catch::Contains("# TYPE DCGM_FI_DEV_GPU_TEMP gauge\n"));
  CHECK_THAT(m, Catch::Contains("# TYPE DCGM_FI_DEV_PCIE_REPLAY_COUNTER counter\n"));
  CHECK_THAT(m, Catch::Contains(",hostname=\""));
  CHECK_THAT(m, Catch::Contains("DCGM_FI_DRIVER_VERSION=\"550.54.15\"} 33\n"));
  CHECK_THAT(m, Catch::Contains("modelName=\"H100\\\"} 1\\nDCGM_FI_DEV_GPU_TEMP{gpu=\\\"9"
                                "\xef\xbf\xbd\","));
  CHECK_THAT(m, Catch::Contains("# TYPE nvsmi_up gauge\nnvsmi_up 1\n"));
  CHECK_THAT(m, !Catch::Contains("nvsmi_gpu_temperature_celsius"));

  if (!test::installed("prometheus")) {
    WARN("prometheus is not installed (scripts/install-deps installs it): not scraped");
    return;
  }
  test::Prometheus prometheus({agent.port()});
  nlohmann::json temperatures = prometheus.query(
      "DCGM_FI_DEV_GPU_TEMP", [](const nlohmann::json &found) { return found.size() >= 8; });
  INFO(prometheus.log());
  REQUIRE(temperatures.size() == 8);
  for (const auto &series : temperatures)
    if (series["metric"]["gpu"] == "0")
      CHECK(series["metric"]["modelName"] == "H100\"} 1\nDCGM_FI_DEV_GPU_TEMP{gpu=\"9\xef\xbf\xbd");
}

TEST_CASE("serve --metric-names refuses a naming it does not have, in one line, at start",
          "[dcgm]") {
  test::Run run = test::run_agent("serve --listen 127.0.0.1:0 --metric-names prometheus "
                                  "--fixture " +
                                  quote(test::fixture_path("xml/h100-8gpu-v12.xml")));
  CHECK(run.exit_code == 2);
  CHECK(test::non_empty_lines_of(run.err).size() == 1);
  CHECK_THAT(run.err, Catch::StartsWith("nvsmi-agent: ") && Catch::Contains("--metric-names"));
}

} // namespace test_serve_prometheus
