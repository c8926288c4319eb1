// End to end: --kernel-log on the built agent's snapshot and watch. What the JSON shows of the
// tallies is the formats' to test; this is what reading the log does to a run.
#include "support.hpp"

#include <catch2/catch.hpp>

#include <algorithm>

namespace test_xid_cli {

using test::quote;
using test::Run;
using test::run_agent;

namespace {

std::string fixture(const std::string &name) { return quote(test::fixture_path(name)); }

std::size_t lines_with(const std::string &text, const std::string &needle) {
  std::size_t count = 0;
  for (std::size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1))
    ++count;
  return count;
}

const std::string xid_line =
    "Nov 24 10:00:01 gpu7 kernel: [ 123.456] NVRM: Xid (PCI:0000:19:00): 79, pid='<unknown>', "
    "name=<unknown>, GPU has fallen off the bus.\n";

} // namespace

TEST_CASE("snapshot --kernel-log: a log read, a missing one said once, none") {
  std::string folder = test::temporary_folder();
  test::write_file(folder + "/kern.log", xid_line + xid_line);
  Run run = run_agent("snapshot --format json --fixture " + fixture("xml/h100-8gpu-v12.xml") +
                      " --kernel-log " + quote(folder + "/kern.log"));
  CHECK(run.exit_code == 0);
  CHECK(run.err.empty());
  CHECK_THAT(run.out, Catch::StartsWith("{\"schema\":"));

  run = run_agent("snapshot --format json --fixture " + fixture("xml/h100-8gpu-v12.xml") +
                  " --kernel-log " + quote(folder + "/absent.log"));
  INFO(run.err);
  CHECK(run.exit_code == 0);
  CHECK_THAT(run.out, Catch::StartsWith("{\"schema\":"));
  CHECK(lines_with(run.err, "kernel log ") == 1);
  CHECK_THAT(run.err, Catch::Contains("absent.log: No such file or directory: Xid errors are not "
                                      "counted (nvsmi_xid_readable 0)"));
  CHECK(std::count(run.err.begin(), run.err.end(), '\n') == 1);

  for (const std::string &choice : {std::string(" --kernel-log none"), std::string()}) {
    run =
        run_agent("snapshot --format json --fixture " + fixture("xml/h100-8gpu-v12.xml") + choice);
    CHECK(run.exit_code == 0);
    CHECK(run.err.empty());
  }
  CHECK_THAT(run_agent("snapshot --help").out, Catch::Contains("--kernel-log"));
}

TEST_CASE("watch --kernel-log: a missing log is said once however many samples") {
  std::string folder = test::temporary_folder();
  Run run = run_agent("watch --format json --count 5 --interval 0.05 --fixture " +
                      fixture("xml/h100-8gpu-v12.xml") + " --kernel-log " +
                      quote(folder + "/absent.log"));
  INFO(run.err);
  CHECK(run.exit_code == 0);
  CHECK(std::count(run.out.begin(), run.out.end(), '\n') == 5);
  CHECK(lines_with(run.err, "kernel log ") == 1);

  test::write_file(folder + "/kern.log", xid_line);
  run =
      run_agent("watch --format json --count 3 --interval 0.05 --fixture " +
                fixture("xml/h100-8gpu-v12.xml") + " --kernel-log " + quote(folder + "/kern.log"));
  CHECK(run.exit_code == 0);
  CHECK(run.err.empty());
  CHECK(std::count(run.out.begin(), run.out.end(), '\n') == 3);
}

} // namespace test_xid_cli
