// The drain hook (issue 29 item 4): --on-unhealthy COMMAND, run by the built agent once for each
// new fault of a GPU, beside sampling, with a deadline. The faults come from recordings made of
// the fixtures (healthy, failing, lost), replayed at the interval.
#include "process_support.hpp"
#include "support.hpp"

#include "nvsmi/gpu_state.hpp"
#include "nvsmi/nvidia_smi_output.hpp"

#include <catch2/catch.hpp>

#include <dirent.h>
#include <map>
#include <string>
#include <sys/stat.h>
#include <vector>

namespace test_unhealthy_hook {

using namespace nvsmi;
using test::quote;
using test::run_agent;

namespace {

std::string fixture(const std::string &name) {
  return test::read_file(test::fixture_path("xml/" + name));
}

// A hook script in `dir` whose body is `body` (sh), executable.
std::string write_hook(const std::string &dir, const std::string &body) {
  std::string path = dir + "/hook.sh";
  test::write_file(path, "#!/bin/sh\n" + body);
  REQUIRE(::chmod(path.c_str(), 0755) == 0);
  return path;
}

// Each file in `dir`: its content, by name.
std::map<std::string, std::string> files_in(const std::string &dir) {
  std::map<std::string, std::string> files;
  DIR *folder = ::opendir(dir.c_str());
  REQUIRE(folder != nullptr);
  while (dirent *entry = ::readdir(folder))
    if (entry->d_name[0] != '.')
      files[entry->d_name] = test::read_file(dir + "/" + entry->d_name);
  ::closedir(folder);
  return files;
}

// What a run's environment file says of NAME ("" where absent).
std::string value_of(const std::string &environment, const std::string &name) {
  for (const std::string &line : test::lines_of(environment))
    if (line.rfind(name + "=", 0) == 0)
      return line.substr(name.size() + 1);
  return "";
}

} // namespace

TEST_CASE("on-unhealthy: gpu_faults names each fault with a key that lasts and an action") {
  Snapshot failing = read_nvidia_smi_output(fixture("h100-8gpu-failing-v12.xml"));
  std::vector<GpuFault> faults = gpu_faults(failing, 3);
  REQUIRE(faults.size() == 2);
  CHECK(faults[0].key == "ecc_uncorrected");
  CHECK(faults[0].reason == "2 uncorrectable ECC errors");
  CHECK(faults[0].action == "gpu_reset");
  CHECK(faults[1].key == "row_remap_pending");
  CHECK(gpu_faults(failing, 0).empty());

  Snapshot lost = read_nvidia_smi_output(fixture("h100-8gpu-lost-values-v12.xml"));
  std::vector<GpuFault> lost_faults = gpu_faults(lost, 4);
  REQUIRE(lost_faults.size() == 1);
  CHECK(lost_faults[0].key == "lost");
  CHECK(lost_faults[0].action == "node_reboot");

  // An Xid that needs a reset, logged for GPU 0's bus: its own fault; one that does not, none.
  Snapshot healthy = read_nvidia_smi_output(fixture("h100-8gpu-v12.xml"));
  healthy.kernel_log = KernelLog{"/dev/kmsg", true, std::nullopt, {}};
  healthy.kernel_log->xids.push_back({"0000:19:00", 79, 1, "GPU has fallen off the bus.", {}});
  healthy.kernel_log->xids.push_back({"0000:19:00", 13, 4, "Graphics Exception", {}});
  std::vector<GpuFault> xid_faults = gpu_faults(healthy, 0);
  REQUIRE(xid_faults.size() == 1);
  CHECK(xid_faults[0].key == "xid_79");
  CHECK(xid_faults[0].action == "gpu_reset");
  // Not read, not known: no fault from a log the agent could not read.
  healthy.kernel_log->readable = false;
  CHECK(gpu_faults(healthy, 0).empty());
}

TEST_CASE("on-unhealthy: the hook runs once per new fault with the GPU in its environment, again "
          "after the fault clears and returns") {
  std::string dir = test::temporary_folder();
  std::string healthy = fixture("h100-8gpu-v12.xml"),
              failing = fixture("h100-8gpu-failing-v12.xml");
  // GPU 3 fails (2 faults) for two samples, recovers, fails again; then GPU 4 is lost.
  test::write_file(dir + "/recording.xml", healthy + failing + failing + healthy + failing +
                                               fixture("h100-8gpu-lost-values-v12.xml"));
  REQUIRE(::mkdir((dir + "/runs").c_str(), 0700) == 0);
  std::string hook = write_hook(dir, "env | grep '^NVSMI_' | LC_ALL=C sort >\"$1/run.$$\"\n");
  test::Run run = run_agent("watch --format json --count 6 --interval 0.05 --kernel-log none "
                            "--fixture " +
                            quote(dir + "/recording.xml") + " --on-unhealthy " +
                            quote(hook + " " + dir + "/runs"));
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  CHECK(test::non_empty_lines_of(run.out).size() == 6); // the hook took no sample's place

  std::map<std::string, int> runs; // "GPU fault" -> how many runs
  std::string row_remap;
  for (const auto &[name, environment] : files_in(dir + "/runs")) {
    std::string fault = value_of(environment, "NVSMI_FAULT");
    ++runs[value_of(environment, "NVSMI_GPU_INDEX") + " " + fault];
    if (fault == "row_remap_pending")
      row_remap = environment;
  }
  std::map<std::string, int> expected = {
      {"3 ecc_uncorrected", 2}, {"3 row_remap_pending", 2}, {"4 lost", 1}};
  CHECK(runs == expected);
  CHECK(value_of(row_remap, "NVSMI_GPU_UUID") == "GPU-00000000-0000-0000-0000-000000000003");
  CHECK(value_of(row_remap, "NVSMI_GPU_PCI_BUS_ID") == "00000000:49:00.0");
  CHECK(value_of(row_remap, "NVSMI_REASON") == "row remap pending");
  CHECK(value_of(row_remap, "NVSMI_ACTION") == "gpu_reset");
  CHECK_THAT(run.err, Catch::Contains("--on-unhealthy for GPU 3 (row remap pending): done"));
}

TEST_CASE("on-unhealthy: a hook that hangs is killed at its deadline, with what it started, while "
          "sampling goes on") {
  std::string dir = test::temporary_folder();
  test::write_file(dir + "/failing.xml", fixture("h100-8gpu-failing-v12.xml"));
  // Leaves a child of its own behind, then hangs.
  std::string hook = write_hook(dir, "sleep 600 & echo $! >\"$1/child\"\necho $$ >\"$1/pid.tmp\"\n"
                                     "mv \"$1/pid.tmp\" \"$1/pid\"\nexec sleep 600\n");
  std::string out = dir + "/out.jsonl";
  std::string script =
      "cd " + quote(dir) + " || exit 1; " + quote(AGENT_BIN) +
      " watch --format json --interval 0.05 --count 160 --kernel-log none --fixture failing.xml "
      "--on-unhealthy-max 1 --on-unhealthy-timeout 6 --on-unhealthy " +
      quote(hook + " " + dir) + " >out.jsonl 2>err & agent=$!; " +
      test::shell_wait_until("test -s pid") + "; samples=$(wc -l <out.jsonl); " +
      test::shell_wait_until("[ $(wc -l <out.jsonl) -ge $((samples + 5)) ]") +
      "; kill -0 $(cat pid) && echo still-hanging-while-sampling; wait $agent; echo agent=$?";
  test::Run run = test::run_shell(script);
  std::string err = test::read_file(dir + "/err");
  INFO(run.out << run.err << err);
  CHECK_THAT(run.out, Catch::Contains("still-hanging-while-sampling"));
  CHECK_THAT(run.out, Catch::Contains("agent=0"));
  CHECK(test::non_empty_lines_of(test::read_file(out)).size() == 160);
  CHECK_THAT(err, Catch::Contains("--on-unhealthy for GPU 3 (2 uncorrectable ECC errors): killed "
                                  "after 6 s"));
  // The second fault waited for the one slot, and ran once it was free.
  CHECK_THAT(err, Catch::Contains("waits for the next sample"));
  CHECK(test::process_ended(test::pid_in_file(dir + "/pid")));
  CHECK(test::process_ended(test::pid_in_file(dir + "/child")));
}

TEST_CASE("on-unhealthy: refused when empty, with an unclosed quote, or from a caller with fewer "
          "rights") {
  test::Run empty =
      run_agent("watch --count 1 --fixture " + quote(test::fixture_path("xml/h100-8gpu-v12.xml")) +
                " --on-unhealthy ''");
  CHECK(empty.exit_code == 2);
  CHECK_THAT(empty.err, Catch::Contains("--on-unhealthy is empty"));
  test::Run unclosed =
      run_agent("watch --count 1 --fixture " + quote(test::fixture_path("xml/h100-8gpu-v12.xml")) +
                " --on-unhealthy \"'/bin/true\"");
  CHECK(unclosed.exit_code == 2);
  CHECK_THAT(unclosed.err, Catch::Contains("--on-unhealthy: "));
  test::Run sudo = test::run_shell("SUDO_UID=1000 " + quote(AGENT_BIN) +
                                   " watch --count 1 --on-unhealthy /bin/true");
  CHECK(sudo.exit_code == 2);
  CHECK_THAT(sudo.err, Catch::Contains("refused under sudo (SUDO_UID is set)"));
}

} // namespace test_unhealthy_hook
