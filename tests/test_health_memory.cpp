// Unknown stays unknown over time (issue 40 item 1), through the built agent: an uncorrectable ECC
// count with an N/A part is unknown, never the sum of the rest; a one-shot sample calls such a GPU
// neither failing nor free; the long-running commands keep a GPU failing at its last known
// reading "as of" then while the reading is unknown, never offer it to a job, and run the drain
// hook once for the fault, not once per flip. The stand-in alternates a count and N/A
// (FAKE_NVSMI_ALTERNATE).
#include "process_support.hpp"
#include "support.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <dirent.h>
#include <string>
#include <sys/stat.h>
#include <vector>

namespace test_health_memory {

using json = nlohmann::json;
using test::quote;
using test::run_agent;

namespace {

const std::string part_unknown = test::fixture_path("xml/h100-8gpu-ecc-part-unknown-v12.xml");
const std::string fake = SCRIPTS_DIR "/fake-nvidia-smi";

// `xml` with every `from` replaced by `to`.
std::string replaced(std::string xml, const std::string &from, const std::string &to) {
  for (std::size_t at = xml.find(from); at != std::string::npos;
       at = xml.find(from, at + to.size()))
    xml.replace(at, from.size(), to);
  return xml;
}

// The two samples the stand-in alternates, in `dir`: GPU 0's uncorrectable DRAM count 2 at
// 14:03:27 (failing), then N/A at 14:03:28 (beside SRAM's 0: the count unknown).
struct Flipping {
  std::string counted, unknown;
};
Flipping flipping_samples(const std::string &dir) {
  std::string xml = test::read_file(part_unknown);
  Flipping files{dir + "/counted.xml", dir + "/unknown.xml"};
  test::write_file(files.counted,
                   replaced(xml, "<dram_uncorrectable>N/A<", "<dram_uncorrectable>2<"));
  test::write_file(files.unknown, replaced(xml, "14:03:27 2024", "14:03:28 2024"));
  return files;
}

std::string stand_in(const Flipping &files) {
  return "FAKE_NVSMI_XML=" + quote(files.counted) +
         " FAKE_NVSMI_ALTERNATE=" + quote(files.unknown) + " ";
}

std::size_t files_in(const std::string &dir) {
  std::size_t count = 0;
  DIR *folder = ::opendir(dir.c_str());
  REQUIRE(folder != nullptr);
  while (dirent *entry = ::readdir(folder))
    count += entry->d_name[0] != '.';
  ::closedir(folder);
  return count;
}

} // namespace

TEST_CASE("unknown health: a one-shot sample's ECC count with an N/A part is unknown, never 0, "
          "and its GPU neither failing nor free: pick passes it by, check says UNKNOWN") {
  test::Run snapshot = run_agent("snapshot --format json --fixture " + quote(part_unknown));
  INFO(snapshot.err);
  REQUIRE(snapshot.exit_code == 0);
  json gpu0 = json::parse(snapshot.out)["gpus"][0];
  CHECK(gpu0["health"]["ecc_errors"]["volatile"]["uncorrected"].is_null());
  CHECK(gpu0["health"]["ecc_errors"]["aggregate"]["uncorrected"].is_null());
  CHECK(gpu0["health"]["ecc_errors"]["volatile"]["corrected"] == 0); // both of its parts known
  CHECK(gpu0["state"] == "unknown");
  CHECK(gpu0["failure"].is_null());
  CHECK(gpu0["failure_as_of"].is_null());

  test::Run table = run_agent("snapshot --format table --fixture " + quote(part_unknown));
  CHECK_THAT(table.out, Catch::Contains("unknown  uncorrectable ECC"));

  // GPUs 0, 4 and 7 are idle with no process: only 4 and 7 may be handed out.
  std::string locks = test::temporary_folder();
  test::Run pick =
      run_agent("pick 3 --lock-dir " + quote(locks) + " --fixture " + quote(part_unknown));
  CHECK(pick.exit_code == 9);
  CHECK_THAT(pick.err, Catch::Contains("GPU 0 health unknown (uncorrectable ECC count unknown)"));
  CHECK(run_agent("pick 2 --lock-dir " + quote(locks) + " --fixture " + quote(part_unknown)).out ==
        "7,4\n");

  test::Run check = run_agent("check --stale-warning none --stale-critical none --fixture " +
                              quote(part_unknown));
  CHECK(check.exit_code == 3);
  CHECK_THAT(check.out, Catch::StartsWith("GPU UNKNOWN - GPU 0 (0000:19:00.0): uncorrectable ECC "
                                          "count unknown"));
}

TEST_CASE("unknown health: a count that reads N/A every other sample keeps its GPU failing as of "
          "its last reading, never 0, and the hook runs once in 10 samples") {
  std::string dir = test::temporary_folder();
  Flipping files = flipping_samples(dir);
  REQUIRE(::mkdir((dir + "/runs").c_str(), 0700) == 0);
  std::string hook = dir + "/hook.sh";
  test::write_file(hook, "#!/bin/sh\nenv | grep '^NVSMI_' >\"$1/run.$$\"\n");
  REQUIRE(::chmod(hook.c_str(), 0755) == 0);
  test::Run run = test::run_shell(stand_in(files) + quote(AGENT_BIN) +
                                  " watch --format json --source xml --count 10 " +
                                  "--interval 0.1 --kernel-log none --nvidia-smi " + quote(fake) +
                                  " --on-unhealthy " + quote(hook + " " + dir + "/runs"));
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  std::vector<std::string> lines = test::non_empty_lines_of(run.out);
  REQUIRE(lines.size() == 10);
  std::size_t counted = 0, unknown = 0;
  for (const std::string &line : lines) {
    json gpu0 = json::parse(line)["gpus"][0];
    INFO(gpu0.dump());
    const json &uncorrected = gpu0["health"]["ecc_errors"]["volatile"]["uncorrected"];
    CHECK(uncorrected != 0);
    CHECK(gpu0["health"]["ecc_errors"]["aggregate"]["uncorrected"] != 0);
    CHECK(gpu0["state"] == "failing");
    if (uncorrected == 2) {
      ++counted;
      CHECK(gpu0["failure"] == "2 uncorrectable ECC errors");
      CHECK(gpu0["failure_as_of"].is_null());
    } else {
      ++unknown;
      CHECK(uncorrected.is_null());
      CHECK(gpu0["failure"] == "2 uncorrectable ECC errors as of 2024-03-12 14:03:27");
      CHECK_THAT(gpu0["failure_as_of"].get<std::string>(),
                 Catch::StartsWith("2024-03-12T14:03:27"));
    }
  }
  CHECK(counted == 5);
  CHECK(unknown == 5);
  CHECK(files_in(dir + "/runs") == 1); // one fault, one drain
}

TEST_CASE("unknown health: run never gives a job the GPU whose count flips between 2 and N/A") {
  std::string dir = test::temporary_folder();
  Flipping files = flipping_samples(dir);
  std::string locks = test::temporary_folder();
  // Free are GPUs 4 and 7, and 0 only if its N/A were taken for health: 3 never come.
  test::Run run = test::run_shell(stand_in(files) + quote(AGENT_BIN) +
                                  " run --source xml --gpus 3 --wait 3 --interval 0.1 "
                                  "--nvidia-smi " +
                                  quote(fake) + " --lock-dir " + quote(locks) + " -- true");
  INFO(run.err);
  CHECK(run.exit_code == 10);
  CHECK_THAT(run.err, Catch::Contains("GPU 0 failing"));
}

} // namespace test_health_memory
