// The outputs people parse, byte for byte, on every H100 fixture: what the built agent's
// `snapshot --fixture F --format json|csv|legacy` prints, and `/metrics` as serve renders it
// (format_snapshot_metrics of that same snapshot, and format_health_metrics of fixed figures).
// What would change from run to run is held still rather than masked: the clock's zone is UTC (the
// agent attaches the local offset to nvidia-smi's zoneless time), a fixture's snapshot has no
// host, no /proc and no kernel log, and the agent's own health counters are given, not counted.
// Any change shows as a unified diff; `scripts/update-golden` rewrites tests/golden/ when the
// change is meant.
#include "core/local_time.hpp"
#include "formats/formats.hpp"
#include "formats/prometheus_metrics.hpp"
#include "nvsmi/nvidia_smi_output.hpp"
#include "support.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <iostream>

namespace test_golden {

using namespace nvsmi;

namespace {

const std::string golden_folder = std::string(TESTS_DIR) + "/golden";

// Every H100 fixture of nvidia-smi's own output (XML and CSV), by path under fixtures/.
std::vector<std::string> h100_fixtures() {
  std::vector<std::string> names;
  for (const std::string folder : {"xml", "csv"})
    for (const auto &entry : std::filesystem::directory_iterator(test::fixture_path(folder))) {
      std::string name = entry.path().filename().string();
      if (name.rfind("h100-", 0) == 0 && entry.path().extension() == "." + folder)
        names.push_back(folder + "/" + name);
    }
  std::sort(names.begin(), names.end());
  return names;
}

// The formats `snapshot --format` offers that are golden, and their files' suffixes.
const std::vector<std::pair<std::string, std::string>> snapshot_formats = {
    {"json", "json"}, {"csv", "csv"}, {"legacy", "legacy.json"}};
const std::string metrics_suffix = "metrics.prom";
const std::string health_file = "agent-health.metrics.prom";

bool updating() {
  const char *update = std::getenv("NVSMI_UPDATE_GOLDEN");
  return update && std::string(update) == "1";
}

// Compares `actual` with the golden file `name`, or rewrites that file when updating. The
// actual output is left in the build's artifacts, beside the diff the failure prints.
void check_golden(const std::string &name, const std::string &actual) {
  std::string golden = golden_folder + "/" + name;
  if (updating()) {
    test::write_file(golden, actual);
    return;
  }
  std::string artifacts = std::string(ARTIFACTS_DIR) + "/golden";
  std::filesystem::create_directories(artifacts);
  std::string written = artifacts + "/" + name;
  test::write_file(written, actual);
  INFO(name);
  if (!std::filesystem::exists(golden)) {
    FAIL_CHECK("no " + golden + ": scripts/update-golden writes it");
    return;
  }
  if (test::read_file(golden) == actual)
    return;
  // On standard output as diff prints it: Catch would wrap its lines at 80 columns.
  test::Run diff = test::run_shell("diff -u " + test::quote(golden) + " " + test::quote(written));
  std::cout << diff.out << diff.err << std::flush;
  FAIL_CHECK(name + " differs from its golden file (the diff above; scripts/update-golden "
                    "rewrites it if the change is meant)");
}

// The local time zone of this process and of the agents it runs: UTC, wherever the test runs.
void hold_time_zone() {
  ::setenv("TZ", "UTC", 1);
  ::tzset();
}

// The snapshot `snapshot --fixture` prints, in this process: read, then the local offset.
Snapshot fixture_snapshot(const std::string &fixture) {
  Snapshot snapshot = read_nvidia_smi_output(test::read_file(test::fixture_path(fixture)));
  attach_local_offset(snapshot);
  return snapshot;
}

} // namespace

TEST_CASE("golden: JSON, CSV, legacy and /metrics of every H100 fixture are as recorded") {
  hold_time_zone();
  std::vector<std::string> fixtures = h100_fixtures();
  REQUIRE(fixtures.size() >= 2); // at least xml/h100-8gpu-v12.xml and csv/h100-8gpu.csv
  for (const std::string &fixture : fixtures) {
    SECTION(fixture) {
      std::string stem = std::filesystem::path(fixture).filename().string();
      std::string json;
      for (const auto &[format, suffix] : snapshot_formats) {
        test::Run run =
            test::run_agent("snapshot --fixture " + test::quote(test::fixture_path(fixture)) +
                            " --format " + format);
        INFO(fixture + " --format " + format + ": " + run.err);
        REQUIRE(run.exit_code == 0);
        CHECK(run.err.empty());
        check_golden(stem + "." + suffix, run.out);
        if (format == "json")
          json = run.out;
      }
      // /metrics of the very snapshot the agent printed.
      Snapshot snapshot = fixture_snapshot(fixture);
      REQUIRE(format_snapshot(snapshot, Format::json) == json);
      check_golden(stem + "." + metrics_suffix, format_snapshot_metrics(snapshot));
    }
  }
}

TEST_CASE("golden: /metrics of the agent's own health, on figures given") {
  AgentHealth health;
  health.up = true;
  health.last_sample_unix_s = 1710252207.512;
  health.sampling = {1, 2, 3, 4, 5, 6};
  health.history_samples = 720;
  health.history_bytes = 1048576;
  health.pending_body_bytes = 4096;
  check_golden(health_file, format_health_metrics(health));
}

TEST_CASE("golden: no golden file is left over from a fixture or output that is gone") {
  std::vector<std::string> expected{health_file};
  for (const std::string &fixture : h100_fixtures()) {
    std::string stem = std::filesystem::path(fixture).filename().string();
    for (const auto &format : snapshot_formats)
      expected.push_back(stem + "." + format.second);
    expected.push_back(stem + "." + metrics_suffix);
  }
  for (const auto &entry : std::filesystem::directory_iterator(golden_folder)) {
    std::string name = entry.path().filename().string();
    INFO(name);
    CHECK(std::find(expected.begin(), expected.end(), name) != expected.end());
  }
}

} // namespace test_golden
