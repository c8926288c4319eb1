// The HTML report opened in headless Chromium, its screenshot kept as a test artifact
// (BUILD/artifacts/report.png, and report-users.png and report-users-phone.png for a JSON log's
// users ledger). Skipped with a message where Chromium is not installed.
#include "support.hpp"

#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <tuple>

using test::quote;

TEST_CASE("report: the HTML page renders in headless Chromium") {
  if (!test::installed("chromium")) {
    WARN("chromium is not installed (scripts/install-deps installs it): not rendered");
    return;
  }
  // The users ledger comes after four GPUs' charts: a page tall enough to hold it, on a desktop
  // and on a phone.
  using Page = std::tuple<std::string, std::string, int, int>;
  auto [name, log, width, height] =
      GENERATE(Page{"report", "training-2gpu.csv", 1200, 1600},
               Page{"report-users", "shared-3users.jsonl", 1200, 5600},
               Page{"report-users-phone", "shared-3users.jsonl", 400, 8000});
  std::string html = std::string(ARTIFACTS_DIR) + "/" + name + ".html";
  std::string png = std::string(ARTIFACTS_DIR) + "/" + name + ".png";
  test::run_shell("mkdir -p " + quote(ARTIFACTS_DIR) + " && rm -f " + quote(png));
  test::Run report = test::run_agent("report --format html --output " + quote(html) + " " +
                                     quote(test::fixture_path("logs/" + log)));
  REQUIRE(report.exit_code == 0);

  test::Run browser =
      test::chromium("--screenshot=" + quote(png) + " --window-size=" + std::to_string(width) +
                     "," + std::to_string(height) + " " + quote("file://" + html));
  INFO(browser.err);
  CHECK(browser.exit_code == 0);
  struct stat info {};
  REQUIRE(::stat(png.c_str(), &info) == 0);
  CHECK(info.st_size > 20000); // a blank 1200x1600 page is a few kB
  CHECK(test::read_file(png).compare(0, 8, "\x89PNG\r\n\x1a\n") == 0);
}
