// The HTML report opened in headless Chromium, its screenshots kept as test artifacts
// (BUILD/artifacts/report.png at 1400 px wide and report-phone.png at 400 px; report-users.png and
// report-users-phone.png for a JSON log's users ledger; report-jobs.png and report-jobs-phone.png
// for --by-job's jobs and accounts), and a check that nothing makes a 400 px
// page scroll sideways; and `run`'s report with its job (run-report.png, run-report-phone.png).
// Skipped with a message where Chromium is not installed.
#include "support.hpp"

#include <catch2/catch.hpp>

#include <regex>
#include <sys/stat.h>
#include <tuple>

// The jobs' log of test_report_jobs.cpp (its default argument is given there).
namespace test_report_jobs {
std::string jobs_log(const std::vector<std::string> &names);
} // namespace test_report_jobs

namespace test_report_browser {

using test::quote;
using test_report_jobs::jobs_log;

namespace {

// The page of a log of fixtures/logs, or of the jobs' log (`jobs`: with --by-job).
std::string report_html(const std::string &name, const std::string &log) {
  std::string html = std::string(ARTIFACTS_DIR) + "/" + name + ".html";
  test::run_shell("mkdir -p " + quote(ARTIFACTS_DIR));
  std::string input =
      log == "jobs" ? "--by-job " + quote(jobs_log({})) : quote(test::fixture_path("logs/" + log));
  test::Run report = test::run_agent("report --format html --output " + quote(html) + " " + input);
  REQUIRE(report.exit_code == 0);
  return html;
}

// `run`'s HTML report of a job of a few seconds on GPU 0 of the stand-in, which another user's
// process shares.
std::string run_report_html() {
  std::string html = std::string(ARTIFACTS_DIR) + "/run-report.html";
  std::string folder = test::temporary_folder();
  std::string apps = folder + "/apps";
  test::write_file(apps, "GPU-00000000-0000-0000-0000-000000000000, 1, 2048 MiB, sleep\n");
  test::run_shell("mkdir -p " + quote(ARTIFACTS_DIR));
  test::Run run = test::run_shell(
      "FAKE_NVSMI_STAMP_NOW=1 FAKE_NVSMI_APPS=" + quote(apps) + " " + AGENT_BIN +
      " run --nvidia-smi " + quote(SCRIPTS_DIR "/fake-nvidia-smi") + " --interval 0.2 " +
      "--process-interval 0.2 --lock-dir " + quote(folder + "/locks") +
      " --gpu-ids 0 --format html --report " + quote(html) +
      " -- sh -c 'sleep 2; python3 -c \"import sys; sys.exit(3)\" --a-long-option-that-wraps'");
  INFO(run.err);
  REQUIRE(run.exit_code == 3);
  return html;
}

// `html` as Chromium draws it in a window of `width` x `height`, kept as ARTIFACTS_DIR/NAME.png.
void screenshot(const std::string &html, const std::string &name, int width, int height) {
  std::string png = std::string(ARTIFACTS_DIR) + "/" + name + ".png";
  test::run_shell("rm -f " + quote(png));
  test::Run browser =
      test::chromium("--screenshot=" + quote(png) + " --window-size=" + std::to_string(width) +
                     "," + std::to_string(height) + " " + quote("file://" + html));
  INFO(browser.err);
  CHECK(browser.exit_code == 0);
  struct stat info {};
  REQUIRE(::stat(png.c_str(), &info) == 0);
  CHECK(info.st_size > 20000); // a blank page of that size is a few kB
  CHECK(test::read_file(png).compare(0, 8, "\x89PNG\r\n\x1a\n") == 0);
}

// What `script` writes about the page framed at 400 x 800 px (a phone). The report has no script
// of its own: a page of the test's frames it, and the script (run when the frame has loaded, with
// the frame's document as `d`) returns text that goes into the outer page's DOM, which
// --dump-dom prints.
std::string framed_at_400px(const std::string &html, const std::string &name,
                            const std::string &script) {
  std::string probe = test::temporary_folder() + "/" + name + ".html";
  test::write_file(probe, "<!DOCTYPE html><html><body style=\"margin:0\"><iframe id=\"r\" "
                          "style=\"width:400px;height:800px;border:0\" src=\"file://" +
                              html +
                              "\"></iframe><pre id=\"out\">pending</pre><script>"
                              "document.getElementById('r').onload=function(){"
                              "var d=this.contentDocument;"
                              "document.getElementById('out').textContent=(function(){" +
                              script + "})();};</script></body></html>");
  test::Run browser = test::chromium("--allow-file-access-from-files "
                                     "--virtual-time-budget=5000 --dump-dom " +
                                     quote("file://" + probe));
  INFO(browser.out << browser.err);
  REQUIRE(browser.exit_code == 0);
  return browser.out;
}

// The page framed at 400 px wide is no wider than its frame.
void check_no_sideways_scroll(const std::string &html) {
  std::string out = framed_at_400px(html, "probe",
                                    "var e=d.documentElement;"
                                    "return 'client='+e.clientWidth+' scroll='+e.scrollWidth;");
  std::smatch found;
  REQUIRE(std::regex_search(out, found, std::regex("client=(\\d+) scroll=(\\d+)")));
  int client = std::stoi(found[1]), scroll = std::stoi(found[2]);
  CHECK(client > 300);
  CHECK(scroll <= client);
}

// Where the page, framed at 400 x 800 px (a phone), puts its findings, its users ledger and its
// first GPU's section: their tops in px from the page's top, -1 for one it does not have.
struct PhoneLayout {
  int findings = -1, users = -1, first_gpu = -1;
};

PhoneLayout phone_layout(const std::string &html) {
  std::string out = framed_at_400px(
      html, "layout",
      "function top(q){var e=d.querySelector(q);"
      "return e?Math.round(e.getBoundingClientRect().top):-1;}"
      "return 'findings='+top('#findings')+' users='+top('table.users')+' gpu='+top('#gpu-0');");
  std::smatch found;
  REQUIRE(
      std::regex_search(out, found, std::regex("findings=(-?\\d+) users=(-?\\d+) gpu=(-?\\d+)")));
  return {std::stoi(found[1]), std::stoi(found[2]), std::stoi(found[3])};
}

} // namespace

TEST_CASE("report: at 400 px the findings are on the first screen, the users ledger before the "
          "GPUs' charts") {
  if (!test::installed("chromium")) {
    WARN("chromium is not installed (scripts/install-deps installs it): not measured");
    return;
  }
  PhoneLayout layout = phone_layout(report_html("report-layout", "shared-3users.jsonl"));
  INFO("findings " << layout.findings << ", users " << layout.users << ", GPU 0 "
                   << layout.first_gpu);
  CHECK(layout.findings >= 0);
  CHECK(layout.findings < 800 - 100); // its heading and its first finding on the first screen
  CHECK(layout.users > layout.findings);
  CHECK(layout.first_gpu > layout.users);
}

TEST_CASE("run: the HTML report with its job renders in headless Chromium, at 1400 and 400 px") {
  if (!test::installed("chromium")) {
    WARN("chromium is not installed (scripts/install-deps installs it): not rendered");
    return;
  }
  std::string html = run_report_html();
  using Page = std::tuple<std::string, int, int>;
  auto [name, width, height] =
      GENERATE(Page{"run-report", 1400, 1600}, Page{"run-report-phone", 400, 2600});
  screenshot(html, name, width, height);
}

TEST_CASE("report: the HTML page renders in headless Chromium") {
  if (!test::installed("chromium")) {
    WARN("chromium is not installed (scripts/install-deps installs it): not rendered");
    return;
  }
  // The users ledger comes after four GPUs' charts: a page tall enough to hold it, on a desktop
  // and on a phone.
  using Page = std::tuple<std::string, std::string, int, int>;
  auto [name, log, width, height] = GENERATE(
      Page{"report", "two-limits-midnight.csv", 1400, 2400},
      Page{"report-phone", "two-limits-midnight.csv", 400, 4200},
      Page{"report-users", "shared-3users.jsonl", 1400, 7200},
      Page{"report-users-phone", "shared-3users.jsonl", 400, 12000},
      Page{"report-jobs", "jobs", 1400, 7800}, Page{"report-jobs-phone", "jobs", 400, 13500});
  std::string html = report_html(name, log);
  screenshot(html, name, width, height);
}

TEST_CASE("report: nothing in the HTML page scrolls sideways at 400 px") {
  if (!test::installed("chromium")) {
    WARN("chromium is not installed (scripts/install-deps installs it): not measured");
    return;
  }
  std::string log =
      GENERATE(std::string("two-limits-midnight.csv"), std::string("shared-3users.jsonl"),
               std::string("bad-rows.csv"), std::string("jobs"));
  std::string html = report_html("report-width", log);
  INFO(log);
  check_no_sideways_scroll(html);
}

TEST_CASE("run: nothing in its HTML report scrolls sideways at 400 px") {
  if (!test::installed("chromium")) {
    WARN("chromium is not installed (scripts/install-deps installs it): not measured");
    return;
  }
  check_no_sideways_scroll(run_report_html());
}

} // namespace test_report_browser
