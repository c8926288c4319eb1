// The first sample of `watch` through the built agent and the stand-in nvidia-smi: it waits for
// the process list (the compute-apps loop), so that its GPUs are already free or held, in every
// format; and a process stream that never answers, or answers garbage, holds it max(interval, 2 s)
// at most, after which it goes out without the processes and says why.
#include "process_support.hpp"
#include "support.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
#include <unistd.h>

namespace test_first_sample {

using test::lines_of;
using test::quote;
using test::Run;
using json = nlohmann::json;

namespace {

struct Watch {
  std::string folder = test::temporary_folder();

  Run run(const std::string &environment, const std::string &arguments) const {
    return test::run_shell(environment + " timeout 120 " + quote(AGENT_BIN) +
                           " watch --nvidia-smi " +
                           quote(std::string(SCRIPTS_DIR) + "/fake-nvidia-smi") + " " + arguments);
  }
  // The stand-in's demo mode (scripts/demo's), with this test program listed as a process on GPU 1.
  std::string demo() const {
    std::string processes = folder + "/processes";
    test::write_file(processes, "1 " + std::to_string(::getpid()) + " 30000 python3\n");
    return "FAKE_NVSMI_MODE=demo FAKE_NVSMI_DEMO_PROCESSES=" + quote(processes);
  }
};

// A first sample of the demo: every GPU's process list known, ours on GPU 1, and the GPUs without
// a process free (their utilization is 0-2 %), not "idle" (under the threshold, holder unknown).
void check_complete(const json &sample) {
  INFO(sample.dump());
  CHECK_FALSE(sample.contains("processes_unknown_reason"));
  REQUIRE(sample["gpus"].size() == 8);
  for (const json &gpu : sample["gpus"]) {
    INFO("GPU " << gpu["index"]);
    REQUIRE(gpu["processes"].is_array());
    if (gpu["index"] == 1) {
      REQUIRE(gpu["processes"].size() == 1);
      CHECK(gpu["processes"][0]["pid"] == ::getpid());
    } else {
      CHECK(gpu["processes"].empty());
      CHECK(gpu["state"] == "free");
    }
  }
}

bool sleep_left() {
  return !test::wait_until([] { return !test::running_here("sleep 3600"); });
}
bool fake_left() {
  return !test::wait_until([] { return !test::running_here(test::fake_nvidia_smi_process); });
}

} // namespace

// Issue 39, item 1: the first line had "processes": null and "state": "idle" for the free GPUs.
TEST_CASE("watch: the first sample lists the processes, and a GPU without any says free") {
  Watch watch;
  SECTION("--format json, at the default interval") {
    Run run = watch.run(watch.demo(), "--format json --count 1");
    INFO(run.err);
    REQUIRE(run.exit_code == 0);
    std::vector<std::string> lines = lines_of(run.out);
    REQUIRE(lines.size() == 1);
    check_complete(json::parse(lines[0]));
  }
  SECTION("the JSON log beside --format csv and legacy, which carry no state of their own") {
    for (std::string format : {"csv", "legacy"}) {
      INFO(format);
      std::string log = watch.folder + "/" + format + ".json";
      Run run = watch.run(watch.demo(), "--format " + format + " --count 1 --json-log " +
                                            quote(log) + " --csv-log " + quote(log + ".csv"));
      INFO(run.err);
      REQUIRE(run.exit_code == 0);
      // The one sample went to stdout, the CSV log and the JSON log alike.
      CHECK(lines_of(run.out).size() == (format == "csv" ? 9 : 1)); // csv: header and 8 rows
      CHECK(lines_of(test::read_file(log + ".csv")).size() == 9);
      std::vector<std::string> lines = lines_of(test::read_file(log));
      REQUIRE(lines.size() == 1);
      check_complete(json::parse(lines[0]));
    }
  }
  CHECK_FALSE(fake_left());
}

TEST_CASE("watch: a process stream that never answers holds the first sample max(interval, 2 s) "
          "at most; it goes out without processes and says why") {
  Watch watch;
  auto [mode, interval, wait] = GENERATE(table<std::string, std::string, int>(
      {{"hang", "0.2", 2}, {"garbage", "0.2", 2}, {"hang", "3", 3}}));
  INFO("FAKE_NVSMI_PROCESS_MODE=" << mode << ", --interval " << interval);
  auto started = std::chrono::steady_clock::now();
  Run run = watch.run("FAKE_NVSMI_PROCESS_MODE=" + mode,
                      "--format json --count 1 --interval " + interval);
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  std::vector<std::string> lines = lines_of(run.out);
  REQUIRE(lines.size() == 1);
  json sample = json::parse(lines[0]);
  std::string why =
      "nvidia-smi --query-compute-apps gave no process list within " + std::to_string(wait) + " s";
  CHECK(sample["processes_unknown_reason"] == why);
  for (const json &gpu : sample["gpus"]) {
    CHECK(gpu["processes"].is_null());
    CHECK(gpu["state"] != "free"); // nobody can say no process holds it
  }
  CHECK_THAT(run.err, Catch::Contains("first sample without its process list: " + why));
  CHECK(took >= wait); // it waited for the list...
  // ...and no longer than its bound, give or take a busy machine: not for the stall timeout (10
  // s) or forever.
  CHECK(took < wait + std::chrono::duration<double>(test::promptly).count());
  // The runs that never answered were stopped with the agent.
  CHECK_FALSE(sleep_left());
  CHECK_FALSE(fake_left());
}

} // namespace test_first_sample
