// End to end: a driver that does not know some of the standard query's fields (one before R450
// knows no remapped_rows.*) refuses the whole query; the agent asks again without them, and those
// readings stay unknown, through the built agent and the stand-in (FAKE_NVSMI_UNKNOWN_FIELDS).
#include "support.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>

namespace test_older_driver_cli {

using test::quote;
using test::Run;

namespace {

constexpr const char *remap_fields = "remapped_rows.correctable,remapped_rows.uncorrectable,"
                                     "remapped_rows.pending,remapped_rows.failure";

struct OldDriver {
  std::string folder = test::temporary_folder();
  std::string args = folder + "/args"; // one line per nvidia-smi start

  Run agent(const std::string &unknown, const std::string &arguments) const {
    return test::run_shell("FAKE_NVSMI_UNKNOWN_FIELDS=" + quote(unknown) +
                           " FAKE_NVSMI_ARGS=" + quote(args) + " timeout 120 " + quote(AGENT_BIN) +
                           " " + arguments + " --kernel-log none --nvidia-smi " +
                           quote(std::string(SCRIPTS_DIR) + "/fake-nvidia-smi"));
  }
  std::vector<std::string> calls() const { return test::lines_of(test::read_file(args)); }
};

// What the stand-in's 8-GPU recording says of GPU 0, but the remapped rows: unknown.
void check_remaps_unknown(const nlohmann::json &gpu) {
  const nlohmann::json &health = gpu["health"];
  INFO(health.dump());
  for (const char *key : {"correctable", "uncorrectable", "pending", "failure"})
    CHECK(health["remapped_rows"][key].is_null());
  CHECK(health["ecc_errors"]["volatile"]["uncorrected"] == 0);
  CHECK(health["pcie"]["link_width"] == 16);
  CHECK(gpu["memory_used_mib"].is_number());
}

} // namespace

TEST_CASE("older driver: snapshot asks again without each field it refuses") {
  OldDriver driver;
  Run run = driver.agent(remap_fields, "snapshot --source csv --format json");
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  nlohmann::json snapshot = nlohmann::json::parse(run.out);
  REQUIRE(snapshot["gpus"].size() == 8);
  check_remaps_unknown(snapshot["gpus"][0]);
  std::vector<std::string> calls = driver.calls();
  REQUIRE(calls.size() == 5); // one refusal per field, as nvidia-smi names one at a time
  CHECK_THAT(calls[0], Catch::Contains("remapped_rows.correctable"));
  CHECK_THAT(calls[4], !Catch::Contains("remapped_rows"));
  CHECK_THAT(calls[4], Catch::Contains(",ecc.errors.uncorrected.volatile.total,"));
}

TEST_CASE("older driver: watch and serve's sampling go on without the fields it refuses") {
  OldDriver driver;
  Run run = driver.agent(remap_fields, "watch --source csv --format json --interval 0.1 --count 2");
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  std::vector<std::string> lines = test::lines_of(run.out);
  REQUIRE(lines.size() == 2);
  for (const std::string &line : lines)
    check_remaps_unknown(nlohmann::json::parse(line)["gpus"][3]);
  // Said once per field, as a notice, not as a failure.
  for (const char *field : {"remapped_rows.correctable", "remapped_rows.uncorrectable",
                            "remapped_rows.pending", "remapped_rows.failure"})
    CHECK_THAT(run.err, Catch::Contains(std::string("nvidia-smi does not know the field ") + field +
                                        " (an older driver): asking without it"));
  std::vector<std::string> calls = driver.calls();
  REQUIRE(calls.size() == 5);
  CHECK_THAT(calls[4], !Catch::Contains("remapped_rows"));
  CHECK_THAT(calls[4], Catch::EndsWith("--format=csv,noheader,nounits -lms 100"));
}

TEST_CASE("older driver: a field that names a GPU, or one the user asked for, stays an error") {
  OldDriver driver;
  Run snapshot = driver.agent("uuid", "snapshot --source csv");
  CHECK(snapshot.exit_code == 4);
  CHECK_THAT(snapshot.err, Catch::Contains("Field \"uuid\" is not a valid field to query."));
  Run watch = driver.agent("pci.bus_id", "watch --source csv --interval 0.1 --count 1");
  CHECK(watch.exit_code == 4);
  CHECK_THAT(watch.err, Catch::Contains("Field \"pci.bus_id\" is not a valid field to query."));
  // clocks.max.sm is one the stand-in adds past its recording: asked for by name, refused.
  Run asked = driver.agent("clocks.max.sm",
                           "watch --source csv --interval 0.1 --count 1 --fields clocks.max.sm");
  CHECK(asked.exit_code == 4);
  CHECK_THAT(asked.err, Catch::Contains("Field \"clocks.max.sm\" is not a valid field to query."));
  CHECK(driver.calls().size() == 3); // each refused once, and not asked again
}

} // namespace test_older_driver_cli
