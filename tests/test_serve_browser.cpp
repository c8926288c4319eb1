// The dashboard loaded in headless Chromium from a serve on an 8-GPU fixture: every GPU's charts
// are drawn, and a screenshot is kept as a test artifact (BUILD/artifacts/dashboard.png).
#include "serve_support.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <regex>
#include <sys/stat.h>

using test::quote;

namespace {

std::string chromium(const std::string &arguments) {
  test::Run run = test::chromium(arguments);
  INFO(run.err);
  CHECK(run.exit_code == 0);
  return run.out;
}

} // namespace

TEST_CASE("serve: the dashboard draws each GPU's charts in headless Chromium") {
  if (!test::installed("chromium")) {
    WARN("chromium is not installed (scripts/install-deps installs it): not rendered");
    return;
  }
  test::Server server("--interval 0.2 --fixture " +
                      quote(test::fixture_path("xml/h100-8gpu-v12.xml")));
  // Some history to draw: a few samples, however long a busy machine takes to make them.
  test::wait_until([&] {
    auto history = nlohmann::json::parse(server.get("/api/v1/history").body, nullptr, false);
    return history.is_object() && history["samples"].size() >= 5;
  });

  // Virtual time waits for the page's requests, so the DOM is dumped after they are drawn.
  std::string dom = chromium("--virtual-time-budget=3000 --dump-dom " + quote(server.url()));
  std::regex card(R"re(<section class="gpu" data-gpu="(\d)">)re");
  CHECK(std::distance(std::sregex_iterator(dom.begin(), dom.end(), card), std::sregex_iterator()) ==
        8);
  CHECK_THAT(dom, Catch::Contains("GPU 7 \xc2\xb7 NVIDIA H100 80GB HBM3"));
  CHECK_THAT(dom, Catch::Contains("data-state=\"ok\""));
  // 8 GPUs x 3 charts, each with points drawn.
  std::regex drawn(R"re(<svg class="chart (util|mem|temp)"[^>]*data-points="([1-9]\d*)")re");
  CHECK(std::distance(std::sregex_iterator(dom.begin(), dom.end(), drawn),
                      std::sregex_iterator()) == 24);
  CHECK_THAT(dom, Catch::Contains("last sample "));

  std::string png = std::string(ARTIFACTS_DIR) + "/dashboard.png";
  test::run_shell("mkdir -p " + quote(ARTIFACTS_DIR) + " && rm -f " + quote(png));
  chromium("--virtual-time-budget=3000 --window-size=1400,1000 --screenshot=" + quote(png) + " " +
           quote(server.url()));
  struct stat info {};
  REQUIRE(::stat(png.c_str(), &info) == 0);
  CHECK(info.st_size > 20000);
}

TEST_CASE("serve: the dashboard says so when the agent cannot sample") {
  if (!test::installed("chromium")) {
    WARN("chromium is not installed: not rendered");
    return;
  }
  test::Server server("--interval 0.2 --nvidia-smi " +
                          quote(std::string(SCRIPTS_DIR) + "/fake-nvidia-smi"),
                      "FAKE_NVSMI_MODE=exit9");
  std::string dom = chromium("--virtual-time-budget=2000 --dump-dom " + quote(server.url()));
  CHECK_THAT(dom, Catch::Contains("data-state=\"error\""));
  CHECK_THAT(dom, Catch::Contains("Cannot sample the GPUs: no sample yet"));
}
