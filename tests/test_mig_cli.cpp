// MIG instances through the built agent and the stand-in answering as the A100 recording
// (xml/a100-mig-v12.xml: two instances, a process on GPU instance 2) with its listing
// (listing/a100-mig-3g-2g.txt): each instance's UUID, profile, state and holders in the snapshot,
// and `pick --mig`, its claims, its refusals and a hostile listing.
#include "claims_support.hpp"
#include "support.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <chrono>

namespace test_mig_cli {

using json = nlohmann::json;
using test::quote;
using test::Run;

namespace {

const std::string device0 = "MIG-00000000-0000-0000-0000-0000000000b0";
const std::string device1 = "MIG-00000000-0000-0000-0000-0000000000b1";

std::string agent() { return quote(AGENT_BIN); }
std::string fake() { return quote(std::string(SCRIPTS_DIR) + "/fake-nvidia-smi"); }

// The stand-in as the A100 with MIG on: `xml` for -q -x (the recording by default), `listing`
// for -L, each call's arguments in `calls` where given.
std::string mig_nvidia_smi(const std::string &listing, const std::string &xml = "",
                           const std::string &calls = "") {
  std::string env =
      "FAKE_NVSMI_XML=" + quote(xml.empty() ? test::fixture_path("xml/a100-mig-v12.xml") : xml) +
      " FAKE_NVSMI_LIST=" + quote(listing);
  if (!calls.empty())
    env += " FAKE_NVSMI_ARGS=" + quote(calls);
  return env + " " + agent();
}

std::string a100_listing() { return test::fixture_path("listing/a100-mig-3g-2g.txt"); }

} // namespace

TEST_CASE("snapshot --format json: each MIG instance's UUID and profile from nvidia-smi -L, its "
          "state and holders") {
  std::string folder = test::temporary_folder();
  Run run = test::run_shell(mig_nvidia_smi(a100_listing(), "", folder + "/calls") +
                            " snapshot --format json --nvidia-smi " + fake());
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  CHECK(run.err.empty());
  json gpu = json::parse(run.out)["gpus"].at(0);
  // The GPU's own utilization is N/A under MIG: unknown, never 0.
  CHECK(gpu["utilization_gpu_percent"].is_null());
  CHECK(gpu["state"] == "in_use");
  json devices = gpu["mig_devices"];
  REQUIRE(devices.size() == 2);
  CHECK(devices[0]["uuid"] == device0);
  CHECK(devices[0]["profile"] == "3g.40gb");
  CHECK(devices[0]["state"] == "free");
  CHECK(devices[0]["holders"] == json::array());
  CHECK(devices[1]["uuid"] == device1);
  CHECK(devices[1]["profile"] == "2g.20gb");
  CHECK(devices[1]["gpu_instance_id"] == 2);
  CHECK(devices[1]["state"] == "in_use");
  REQUIRE(devices[1]["holders"].size() == 1);
  CHECK(devices[1]["holders"][0]["pid"] == 3131);
  CHECK(devices[1]["holders"][0]["program"] == "python");
  // -L ran once, after -q -x: one run more per snapshot, and only where a GPU has MIG devices.
  CHECK(test::read_file(folder + "/calls") == "-q -x\n-L\n");
  std::string plain = test::temporary_folder();
  Run h100 = test::run_shell("FAKE_NVSMI_ARGS=" + quote(plain + "/calls") + " " + agent() +
                             " snapshot --format json --nvidia-smi " + fake());
  REQUIRE(h100.exit_code == 0);
  CHECK(test::read_file(plain + "/calls") == "-q -x\n");
}

TEST_CASE("snapshot --format table: the summary counts MIG instances; each instance's line has its "
          "profile and state, the profile printable") {
  Run run = test::run_shell(mig_nvidia_smi(a100_listing()) +
                            " snapshot --format table --nvidia-smi " + fake());
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  std::vector<std::string> lines = test::lines_of(run.out);
  REQUIRE(lines.size() >= 5);
  CHECK(lines[0] == "1 GPU, 2 MIG instances: 1 free \u00b7 1 in use");
  CHECK_THAT(lines[3], Catch::Matches(" +MIG 0  GI 1 CI 0  3g\\.40gb  13/40192MiB +free"));
  CHECK_THAT(lines[4],
             Catch::Matches(" +MIG 1  GI 2 CI 0  2g\\.20gb  4020/19968MiB  in use  .*python.*"));

  std::string folder = test::temporary_folder();
  test::write_file(folder + "/hostile.txt",
                   "GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-00000000-0000-0000-0000-0000000000a1)\n"
                   "  MIG 3g\x1b]0;owned\x07.40gb Device  0: (UUID: MIG-0929581a)\n"
                   "  MIG 2g.20gb Device  1: (UUID: MIG-0929581b)\n");
  Run hostile = test::run_shell(mig_nvidia_smi(folder + "/hostile.txt") +
                                " snapshot --format table --nvidia-smi " + fake());
  REQUIRE(hostile.exit_code == 0);
  CHECK(hostile.out.find('\x1b') == std::string::npos);
  CHECK(hostile.out.find('\x07') == std::string::npos);
  CHECK_THAT(hostile.out, Catch::Contains("2g.20gb"));
}

TEST_CASE("report: a JSON log with MIG instances says them in its first line, counted in place of "
          "their GPU") {
  std::string folder = test::temporary_folder();
  Run logged =
      test::run_shell(mig_nvidia_smi(a100_listing()) + " snapshot --format json --nvidia-smi " +
                      fake() + " --output " + quote(folder + "/gpu-log.jsonl"));
  REQUIRE(logged.exit_code == 0);
  Run report = test::run_agent("report --format json " + quote(folder + "/gpu-log.jsonl"));
  INFO(report.err);
  REQUIRE(report.exit_code == 0);
  json last = json::parse(report.out)["last_sample"];
  CHECK(last["gpus"] == 1);
  CHECK(last["mig_instances"] == 2);
  CHECK(last["states"]["free"] == 1);
  CHECK(last["states"]["in_use"] == 1);
  CHECK_THAT(last["summary"].get<std::string>(),
             Catch::EndsWith("1 GPU, 2 MIG instances: 1 free \u00b7 1 in use"));
}

TEST_CASE("snapshot: an nvidia-smi -L that fails or says what no driver says leaves the UUIDs "
          "and profiles unknown, in one line on stderr, the rest printed") {
  std::string folder = test::temporary_folder();
  test::write_file(folder + "/garbled.txt", "GPU 0: A100 (UUID: GPU-x)\n\x1b[2J owned\n");
  for (const std::string &listing : {folder + "/missing.txt", folder + "/garbled.txt"}) {
    INFO(listing);
    Run run =
        test::run_shell(mig_nvidia_smi(listing) + " snapshot --format json --nvidia-smi " + fake());
    CHECK(run.exit_code == 0);
    CHECK_THAT(run.err, Catch::Matches("nvsmi-agent: [0-9TZ:-]+ MIG devices' UUIDs and profiles "
                                       "unknown: [^\n]*(exited with code 9|nvidia-smi -L: line "
                                       "not understood)[^\n]*\n"));
    CHECK(std::count(run.err.begin(), run.err.end(), '\n') == 1);
    CHECK(run.err.find('\x1b') == std::string::npos);
    json devices = json::parse(run.out)["gpus"].at(0)["mig_devices"];
    REQUIRE(devices.size() == 2);
    CHECK(devices[0]["uuid"].is_null());
    CHECK(devices[0]["profile"].is_null());
    CHECK(devices[0]["state"] == "free"); // the processes still say who holds what
  }
}

TEST_CASE("pick --mig: a free instance's MIG UUID, for CUDA_VISIBLE_DEVICES; a profile asked for "
          "is kept to") {
  std::string lock_dir = " --lock-dir " + quote(test::temporary_folder());
  Run run = test::run_shell(mig_nvidia_smi(a100_listing()) + " pick --mig --nvidia-smi " + fake() +
                            lock_dir);
  INFO(run.err);
  CHECK(run.exit_code == 0);
  CHECK(run.out == device0 + "\n"); // device 1 holds pid 3131
  Run env = test::run_shell(mig_nvidia_smi(a100_listing()) + " pick --mig 3g.40gb --format env " +
                            "--nvidia-smi " + fake() + lock_dir);
  CHECK(env.exit_code == 0);
  CHECK(env.out == "export CUDA_VISIBLE_DEVICES=" + device0 + "\n");
  Run as_json = test::run_shell(mig_nvidia_smi(a100_listing()) + " pick --mig --format json " +
                                "--nvidia-smi " + fake() + lock_dir);
  REQUIRE(as_json.exit_code == 0);
  json picked = json::parse(as_json.out);
  CHECK(picked["gpus"][0]["index"] == 0);
  CHECK(picked["gpus"][0]["uuid"] == device0);
  CHECK(picked["gpus"][0]["mig_device"] == 0);
  CHECK(picked["gpus"][0]["profile"] == "3g.40gb");
  CHECK(picked["gpus"][0]["free_mib"] == 40179);
  CHECK(picked["cuda_visible_devices"] == device0);

  Run other_profile = test::run_shell(mig_nvidia_smi(a100_listing()) + " pick --mig 7g.80gb " +
                                      "--nvidia-smi " + fake() + lock_dir);
  CHECK(other_profile.exit_code == 9);
  CHECK(other_profile.out.empty());
  CHECK(other_profile.err ==
        "nvsmi-agent: 0 of 1 MIG instances free: GPU 0 MIG 0 (3g.40gb) is not 7g.80gb, "
        "GPU 0 MIG 1 (2g.20gb) is not 7g.80gb\n");
  Run two = test::run_shell(mig_nvidia_smi(a100_listing()) + " pick 2 --mig --nvidia-smi " +
                            fake() + lock_dir);
  CHECK(two.exit_code == 9);
  CHECK(two.err == "nvsmi-agent: 1 of 2 MIG instances free: GPU 0 MIG 1 (2g.20gb) in use\n");
}

TEST_CASE("pick: without --mig a GPU with MIG on is refused naming its free instances; --mig "
          "refuses a GPU without MIG and an instance without a UUID") {
  std::string lock_dir = " --lock-dir " + quote(test::temporary_folder());
  Run whole =
      test::run_shell(mig_nvidia_smi(a100_listing()) + " pick --nvidia-smi " + fake() + lock_dir);
  CHECK(whole.exit_code == 9);
  CHECK(whole.err == "nvsmi-agent: 0 of 1 GPUs free: GPU 0 has MIG on (1 of 2 instances free: "
                     "3g.40gb; --mig picks them)\n");
  Run h100 = test::run_agent("pick --mig --fixture " +
                             quote(test::fixture_path("xml/h100-8gpu-v12.xml")) + lock_dir);
  CHECK(h100.exit_code == 9);
  CHECK_THAT(h100.err, Catch::StartsWith("nvsmi-agent: 0 of 1 MIG instances free: GPU 0 has MIG "
                                         "off, GPU 1 has MIG off"));
  // A recording has no -L: its instances have no UUID to hand out or claim.
  Run recording = test::run_agent("pick --mig --fixture " +
                                  quote(test::fixture_path("xml/a100-mig-v12.xml")) + lock_dir);
  CHECK(recording.exit_code == 9);
  CHECK(recording.err == "nvsmi-agent: 0 of 1 MIG instances free: GPU 0 MIG 0 has no usable UUID "
                         "(from nvidia-smi -L), GPU 0 MIG 1 has no usable UUID (from nvidia-smi "
                         "-L)\n");
}

TEST_CASE("pick --mig: an instance claimed by a running job is not offered; the next free one is") {
  std::string folder = test::temporary_folder();
  std::string idle = test::idle_mig_recording(folder);
  std::string lock_dir = " --lock-dir " + quote(folder);
  Run both = test::run_shell(mig_nvidia_smi(a100_listing(), idle) + " pick 2 --mig --nvidia-smi " +
                             fake() + lock_dir);
  CHECK(both.exit_code == 0);
  CHECK(both.out == device0 + "," + device1 + "\n");
  Run smaller = test::run_shell(mig_nvidia_smi(a100_listing(), idle) +
                                " pick --mig 2g.20gb --nvidia-smi " + fake() + lock_dir);
  CHECK(smaller.exit_code == 0);
  CHECK(smaller.out == device1 + "\n");
  test::ClaimHolder holder(folder, device0);
  Run run = test::run_shell(mig_nvidia_smi(a100_listing(), idle) + " pick --mig --nvidia-smi " +
                            fake() + lock_dir);
  CHECK(run.exit_code == 0);
  CHECK(run.out == device1 + "\n");
  Run none = test::run_shell(mig_nvidia_smi(a100_listing(), idle) + " pick 2 --mig --nvidia-smi " +
                             fake() + lock_dir);
  CHECK(none.exit_code == 9);
  CHECK_THAT(none.err, Catch::Matches("nvsmi-agent: 1 of 2 MIG instances free: GPU 0 MIG 0 "
                                      "claimed by pid [0-9]+\n"));
}

TEST_CASE("pick --mig: a hostile listing (an escape in a profile, a UUID no claim file may be "
          "named by) is said printable and never handed out; a bad --mig value is refused") {
  std::string folder = test::temporary_folder();
  test::write_file(folder + "/hostile.txt",
                   "GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-00000000-0000-0000-0000-0000000000a1)\n"
                   "  MIG 3g\x1b]0;owned\x07.40gb Device  0: (UUID: MIG-0929581a)\n"
                   "  MIG 3g.40gb Device  1: (UUID: MIG-../../etc/passwd)\n");
  std::string lock_dir = " --lock-dir " + quote(folder);
  Run run =
      test::run_shell(mig_nvidia_smi(folder + "/hostile.txt", test::idle_mig_recording(folder)) +
                      " pick 2 --mig 3g.40gb --nvidia-smi " + fake() + lock_dir);
  INFO(run.err);
  CHECK(run.exit_code == 9);
  CHECK(run.out.empty());
  CHECK(run.err.find('\x1b') == std::string::npos);
  CHECK(run.err.find('\x07') == std::string::npos);
  CHECK_THAT(run.err, Catch::Contains("GPU 0 MIG 1 (3g.40gb) has no usable UUID"));
  CHECK_THAT(run.err, Catch::Contains("is not 3g.40gb"));
  for (const char *value : {"2", "3G.40GB", "x;rm"}) {
    Run refused = test::run_agent(std::string("pick --mig ") + quote(value) + " --fixture " +
                                  quote(test::fixture_path("xml/a100-mig-v12.xml")) + lock_dir);
    INFO(value << ": " << refused.err);
    CHECK(refused.exit_code == 2);
    CHECK_THAT(refused.err, Catch::Contains("is not a MIG profile such as 3g.40gb"));
  }
  Run count_first = test::run_agent("pick --mig 2 --fixture " +
                                    quote(test::fixture_path("xml/a100-mig-v12.xml")));
  CHECK_THAT(count_first.err, Catch::Contains("a count goes before --mig: pick 2 --mig"));
}

TEST_CASE("pick --mig: an instance of a GPU that a job holds whole is not offered") {
  std::string folder = test::temporary_folder();
  std::string idle = test::idle_mig_recording(folder);
  test::ClaimHolder whole(folder, "GPU-00000000-0000-0000-0000-0000000000a1");
  Run run = test::run_shell(mig_nvidia_smi(a100_listing(), idle) + " pick --mig --nvidia-smi " +
                            fake() + " --lock-dir " + quote(folder));
  CHECK(run.exit_code == 9);
  CHECK(run.out.empty());
  CHECK_THAT(run.err, Catch::Matches("nvsmi-agent: 0 of 1 MIG instances free: GPU 0 claimed by "
                                     "pid [0-9]+, GPU 0 claimed by pid [0-9]+\n"));
}

TEST_CASE("run --gpu refuses a GPU with MIG on: its instances are handed out one by one") {
  std::string folder = test::temporary_folder();
  Run run = test::run_shell(mig_nvidia_smi(a100_listing(), test::idle_mig_recording(folder)) +
                            " run --source xml --gpu 0 --interval 0.2 --lock-dir " + quote(folder) +
                            " --nvidia-smi " + fake() + " -- true");
  CHECK(run.exit_code == 2);
  CHECK_THAT(run.err, Catch::Contains("--gpu: GPU 0 has MIG on: its instances are handed out one "
                                      "by one (pick --mig)\n"));
  CHECK_FALSE(nvsmi::claimed(folder, "GPU-00000000-0000-0000-0000-0000000000a1"));
}

TEST_CASE("pick --mig: refused with --ssh and with --source csv, which list no instances; an -L "
          "that hangs is killed at --timeout and its UUIDs are unknown") {
  Run ssh = test::run_agent("pick --mig --ssh localhost");
  CHECK(ssh.exit_code == 2);
  CHECK_THAT(ssh.err, Catch::Contains("--mig cannot go with --ssh"));
  Run csv = test::run_agent("pick --mig --source csv --fixture " +
                            quote(test::fixture_path("csv/h100-8gpu.csv")));
  CHECK(csv.exit_code == 2);
  CHECK(csv.err == "nvsmi-agent: pick: --mig needs --source xml: the CSV query lists no MIG "
                   "instances\n");
  // cat on a FIFO nobody writes to: -L never answers.
  std::string folder = test::temporary_folder();
  REQUIRE(test::run_shell("mkfifo " + quote(folder + "/never")).exit_code == 0);
  auto started = std::chrono::steady_clock::now();
  Run hung = test::run_shell(mig_nvidia_smi(folder + "/never") +
                             " snapshot --format json --timeout 2 --nvidia-smi " + fake());
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  CHECK(hung.exit_code == 0);
  CHECK(took < 30);
  CHECK_THAT(hung.err, Catch::Contains("MIG devices' UUIDs and profiles unknown: "));
  CHECK(json::parse(hung.out)["gpus"][0]["mig_devices"][0]["uuid"].is_null());
  CHECK(test::run_shell("pgrep -xf " + quote("cat " + folder + "/never")).exit_code ==
        1); // nothing left
}

TEST_CASE("run --mig: the job gets a free instance's MIG UUID, and says which") {
  std::string folder = test::temporary_folder();
  Run run =
      test::run_shell(mig_nvidia_smi(a100_listing()) + " run --mig --interval 0.2 " +
                      "--lock-dir " + quote(folder) + " --report " + quote(folder + "/report") +
                      " --nvidia-smi " + fake() + " -- sh -c 'echo $CUDA_VISIBLE_DEVICES'");
  INFO(run.err);
  CHECK(run.exit_code == 0);
  CHECK(run.out == device0 + "\n"); // device 1 holds pid 3131
  CHECK_THAT(run.err, Catch::Contains("nvsmi-agent run: GPU 0 MIG 0 (3g.40gb, NVIDIA "
                                      "A100-SXM4-80GB, 00000000:07:00.0) claimed for this job; "
                                      "CUDA_VISIBLE_DEVICES=" +
                                      device0 + "\n"));
  // The report names the instance the job had.
  CHECK_THAT(test::read_file(folder + "/report"), Catch::Contains("\n  GPU 0 MIG 0  "));
  Run csv = test::run_agent("run --mig --source csv --lock-dir " + quote(folder) +
                            " --nvidia-smi " + fake() + " -- true");
  CHECK(csv.exit_code == 2);
  CHECK_THAT(csv.err, Catch::Contains("run: --mig needs --source xml"));
}

TEST_CASE("run --mig: two jobs started together never get the same instance") {
  std::string folder = test::temporary_folder();
  std::string idle = test::idle_mig_recording(folder);
  auto job = [&](const std::string &name) {
    return mig_nvidia_smi(a100_listing(), idle) + " run --mig --interval 0.2 --lock-dir " +
           quote(folder) + " --report " + quote(folder + "/" + name + ".report") +
           " --nvidia-smi " + fake() + " -- sh -c 'echo $CUDA_VISIBLE_DEVICES >" + folder + "/" +
           name + "; sleep 2' 2>" + quote(folder + "/" + name + ".err");
  };
  for (int round = 0; round < 3; ++round) {
    Run both = test::run_shell("( " + job("a") + " & " + job("b") + " & wait )");
    std::string a = test::read_file(folder + "/a"), b = test::read_file(folder + "/b");
    INFO("round " << round << ": " << a << b << test::read_file(folder + "/a.err")
                  << test::read_file(folder + "/b.err"));
    CHECK(a != b);
    CHECK((a == device0 + "\n" || a == device1 + "\n"));
    CHECK((b == device0 + "\n" || b == device1 + "\n"));
  }
}

} // namespace test_mig_cli
