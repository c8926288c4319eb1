// `pick` through the built agent: the free GPUs of the states fixture (0, 7, 4 best first), the
// claims `run` holds, --wait, and the shell that evals its output.
#include "claims_support.hpp"
#include "jobs/gpu_claims.hpp"
#include "process_support.hpp"
#include "support.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <sys/stat.h>
#include <thread>

namespace test_pick {

using test::quote;
using test::Run;

namespace {

const std::string states = quote(test::fixture_path("xml/h100-8gpu-states-v12.xml"));
const std::string gpu0 = "GPU-00000000-0000-0000-0000-000000000000";
const std::string gpu4 = "GPU-00000000-0000-0000-0000-000000000004";
const std::string gpu7 = "GPU-00000000-0000-0000-0000-000000000007";

std::string agent() { return quote(AGENT_BIN); }
std::string fake() { return quote(std::string(SCRIPTS_DIR) + "/fake-nvidia-smi"); }

// pick on the states fixture, with claims in `folder`.
Run pick(const std::string &folder, const std::string &arguments) {
  return test::run_agent("pick --fixture " + states + " --lock-dir " + quote(folder) + " " +
                         arguments);
}

void check_not_enough(const Run &run, int exit_code, const std::string &start) {
  INFO("stderr: " << run.err);
  CHECK(run.exit_code == exit_code);
  CHECK(run.out.empty());
  CHECK_THAT(run.err, Catch::StartsWith("nvsmi-agent: " + start));
  CHECK(std::count(run.err.begin(), run.err.end(), '\n') == 1);
}

} // namespace

TEST_CASE("pick: the best free GPUs, most free memory first, as a list by default") {
  std::string folder = test::temporary_folder();
  Run one = pick(folder, "");
  CHECK(one.exit_code == 0);
  CHECK(one.out == "0\n");
  CHECK(one.err.empty());
  Run two = pick(folder, "2");
  CHECK(two.exit_code == 0);
  CHECK(two.out == "0,7\n");
  CHECK(pick(folder, "3").out == "0,7,4\n");
  CHECK(pick(folder, "2 --uuid").out == gpu0 + "," + gpu7 + "\n");
}

TEST_CASE("pick: --format env exports for eval, --format json names each GPU") {
  std::string folder = test::temporary_folder();
  CHECK(pick(folder, "2 --format env").out ==
        "export CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES=0,7\n");
  // UUIDs name a GPU whatever CUDA's order.
  CHECK(pick(folder, "2 --format env --uuid").out ==
        "export CUDA_VISIBLE_DEVICES=" + gpu0 + "," + gpu7 + "\n");
  Run json = pick(folder, "2 --format json");
  CHECK(json.exit_code == 0);
  CHECK(json.out == R"({"gpus":[{"index":0,"uuid":")" + gpu0 +
                        R"(","free_mib":81230,"temperature_c":30},{"index":7,"uuid":")" + gpu7 +
                        R"(","free_mib":81223,"temperature_c":37}],"cuda_visible_devices":"0,7"})"
                        "\n");
  CHECK(nlohmann::json::parse(pick(folder, "1 --format json --uuid").out)["cuda_visible_devices"] ==
        gpu0);
}

TEST_CASE("pick: the shell's eval exports CUDA_VISIBLE_DEVICES to the job") {
  std::string folder = test::temporary_folder();
  Run run = test::run_shell("eval \"$(" + agent() + " pick 2 --format env --fixture " + states +
                            " --lock-dir " + quote(folder) +
                            ")\" && sh -c 'echo $CUDA_VISIBLE_DEVICES $CUDA_DEVICE_ORDER'");
  CHECK(run.exit_code == 0);
  CHECK(run.out == "0,7 PCI_BUS_ID\n");
}

TEST_CASE("pick: --min-free-mib and --max-utilization change the answer") {
  std::string folder = test::temporary_folder();
  // GPU 4 has 81218 MiB free and 3% utilization; 0 and 7 have more and 0%.
  CHECK(pick(folder, "3 --min-free-mib 81220").exit_code == 9);
  CHECK(pick(folder, "2 --min-free-mib 81220").out == "0,7\n");
  CHECK(pick(folder, "3 --max-utilization 3").exit_code == 9);
  CHECK(pick(folder, "3 --max-utilization 3.5").out == "0,7,4\n");
  // GPU 1 (10%, no process) counts as free under 11%, with the least free memory of them.
  CHECK(pick(folder, "4 --max-utilization 11").out == "0,7,4,1\n");
  check_not_enough(pick(folder, "3 --min-free-mib 81220"), 9,
                   "2 of 3 GPUs free: GPU 1 in use (10% >= 5%), GPU 2 hot, GPU 3 idle but held, "
                   "GPU 4 has 81218 MiB free < 81220, GPU 5 at power limit, GPU 6 in use (99% >= "
                   "5%)\n");
}

TEST_CASE("pick: more GPUs than are free exits 9, prints nothing and says why") {
  std::string folder = test::temporary_folder();
  check_not_enough(pick(folder, "4"), 9,
                   "3 of 4 GPUs free: GPU 1 in use (10% >= 5%), GPU 2 hot, GPU 3 idle but held, "
                   "GPU 5 at power limit, GPU 6 in use (99% >= 5%)\n");
}

TEST_CASE("pick: a GPU another process claims is skipped, and offered again when it is let go") {
  std::string folder = test::temporary_folder();
  test::ClaimHolder holder(folder, gpu0);
  Run run = pick(folder, "2");
  CHECK(run.exit_code == 0);
  CHECK(run.out == "7,4\n");
  // The pid is the one that took the lock (/proc/locks): here flock(1), which has left since.
  Run three = pick(folder, "3");
  check_not_enough(three, 9, "2 of 3 GPUs free: GPU 0 claimed by pid ");
  CHECK_THAT(three.err, Catch::Contains(", GPU 1 in use"));
  // The folder also comes from NVSMI_LOCK_DIR.
  CHECK(test::run_shell("NVSMI_LOCK_DIR=" + quote(folder) + " " + agent() + " pick --fixture " +
                        states)
            .out == "7\n");
  holder.release();
  CHECK(pick(folder, "2").out == "0,7\n");
}

TEST_CASE("pick --wait times out on time with exit 10") {
  std::string folder = test::temporary_folder();
  auto start = std::chrono::steady_clock::now();
  Run run = pick(folder, "4 --wait 2");
  auto took = std::chrono::steady_clock::now() - start;
  check_not_enough(run, 10, "3 of 4 GPUs free when --wait's 2 s were up: GPU 1 in use");
  CHECK(took >= std::chrono::seconds(2));
  CHECK(took < test::promptly);
}

TEST_CASE("pick --wait answers once enough GPUs come free while it waits") {
  std::string folder = test::temporary_folder();
  test::ClaimHolder holder(folder, gpu0);
  test::Background waiting(agent() + " pick 3 --wait 60 --interval 0.1 --fixture " + states +
                           " --lock-dir " + quote(folder));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  CHECK_FALSE(waiting.exit_code().has_value()); // still waiting: only 7 and 4 are free
  holder.release();
  CHECK(waiting.wait(test::promptly) == 0);
  CHECK(waiting.out() == "0,7,4\n");
  CHECK(waiting.err().empty());
}

TEST_CASE("pick: a failing nvidia-smi exits with its code at once, and is retried under --wait") {
  std::string folder = test::temporary_folder();
  std::string lock_dir = " --lock-dir " + quote(folder);
  Run run = test::run_shell("FAKE_NVSMI_MODE=exit9 " + agent() + " pick --nvidia-smi " + fake() +
                            lock_dir);
  CHECK(run.exit_code == 4);
  CHECK(run.out.empty());
  CHECK_THAT(run.err, Catch::Contains("exited with code 9: NVIDIA-SMI has failed"));

  // Said once on stderr while it tries again, then its failure when the time is up.
  std::string calls = folder + "/calls";
  run = test::run_shell("FAKE_NVSMI_MODE=exit9 FAKE_NVSMI_ARGS=" + quote(calls) + " " + agent() +
                        " pick --wait 1 --interval 0.2 --nvidia-smi " + fake() + lock_dir);
  CHECK(run.exit_code == 4);
  CHECK(run.out.empty());
  CHECK_THAT(run.err, Catch::Contains("sampling again until --wait's time is up"));
  CHECK(std::count(run.err.begin(), run.err.end(), '\n') == 2);
  std::string asked = test::read_file(calls);
  CHECK(std::count(asked.begin(), asked.end(), '\n') >= 2);

  // The stand-in answers with the states fixture: pick reads it as it reads the recording.
  run = test::run_shell("FAKE_NVSMI_XML=" + states + " " + agent() + " pick 3 --nvidia-smi " +
                        fake() + lock_dir);
  CHECK(run.exit_code == 0);
  CHECK(run.out == "0,7,4\n");
}

TEST_CASE("pick: a GPU with MIG on is never offered whole") {
  // The A100 recording with its MIG instances' processes gone: free by every other test.
  std::string folder = test::temporary_folder();
  test::idle_mig_recording(folder);
  Run run = test::run_agent("pick --fixture " + quote(folder + "/idle-mig.xml") + " --lock-dir " +
                            quote(folder));
  check_not_enough(
      run, 9,
      "0 of 1 GPUs free: GPU 0 has MIG on (2 of 2 instances free; their UUIDs unknown: "
      "nvidia-smi -L not read)\n");
}

TEST_CASE("pick: the README's session is what the agent prints") {
  std::string readme = test::read_file(SCRIPTS_DIR "/../README.md");
  std::size_t begin = readme.find("```console\n$ nvsmi-agent pick 2\n");
  REQUIRE(begin != std::string::npos);
  begin += 11;
  std::string session = readme.substr(begin, readme.find("```", begin) - begin);
  // Its commands run in one shell on the recording; the rest is what they print.
  std::string folder = test::temporary_folder();
  std::string agent_on_states =
      agent() + " pick --fixture " + states + " --lock-dir " + quote(folder);
  std::string script, printed;
  std::size_t start = 0;
  while (start < session.size()) {
    std::size_t end = session.find('\n', start);
    std::string line = session.substr(start, end - start);
    start = end + 1;
    if (line.rfind("$ ", 0) != 0) {
      printed += line + "\n";
      continue;
    }
    std::string command = line.substr(2);
    for (std::size_t at = command.find("nvsmi-agent pick"); at != std::string::npos;
         at = command.find("nvsmi-agent pick", at + agent_on_states.size()))
      command.replace(at, 16, agent_on_states);
    script += command + "\n";
  }
  Run run = test::run_shell("exec 2>&1\n" + script);
  CHECK(run.out == printed);
}

// An attacker's hand in the claims folder: they are a local user who can plant files in the
// shared folder, make folders of their own, and run in a container of their own.

TEST_CASE("pick: a FIFO, a symlink or a folder at a claim's path is never offered, said once, "
          "and blocks nothing") {
  std::string folder = test::temporary_folder();
  REQUIRE(::mkfifo((folder + "/" + gpu0 + ".lock").c_str(), 0666) == 0); // opened, it would block
  REQUIRE(::symlink("/etc/passwd", (folder + "/" + gpu7 + ".lock").c_str()) == 0);
  Run one = test::run_shell("timeout 30 " + agent() + " pick --fixture " + states + " --lock-dir " +
                            quote(folder));
  INFO("stderr: " << one.err);
  CHECK(one.exit_code == 0);
  CHECK(one.out == "4\n");
  CHECK_THAT(one.err, Catch::Contains(gpu0 + ".lock is a FIFO: its GPU is not offered"));
  CHECK_THAT(one.err, Catch::Contains(gpu7 + ".lock is a symbolic link"));
  // Under --wait, every sample finds them: each is said once, and the wait ends on time.
  Run waited = test::run_shell("timeout 30 " + agent() + " pick 2 --wait 1 --interval 0.1 " +
                               "--fixture " + states + " --lock-dir " + quote(folder));
  INFO("stderr: " << waited.err);
  CHECK(waited.exit_code == 10);
  CHECK(test::lines_of(waited.err).size() == 3);
  CHECK_THAT(waited.err, Catch::Contains("GPU 0 claim unusable"));
  // Another user's claim file name is a claim's path too.
  REQUIRE(::mkdir((folder + "/" + gpu4 + ".1000.lock").c_str(), 0755) == 0);
  Run none = pick(folder, "");
  CHECK(none.exit_code == 9);
  CHECK_THAT(none.err, Catch::Contains(gpu4 + ".1000.lock is a folder"));
  CHECK_THAT(none.err, Catch::Contains("0 of 1 GPUs free: "));
}

TEST_CASE("pick: a claims folder another user owns, or anyone may empty, is refused (exit 7)") {
  std::string parent = test::temporary_folder();
  std::string theirs = parent + "/theirs", open = parent + "/open", shared = parent + "/shared";
  for (const std::string &folder : {theirs, open, shared})
    REQUIRE(::mkdir(folder.c_str(), 0755) == 0);
  REQUIRE(::chown(theirs.c_str(), 65534, 65534) == 0);
  REQUIRE(::chmod(open.c_str(), 0777) == 0);
  REQUIRE(::chmod(shared.c_str(), 01777) == 0);
  check_not_enough(pick(theirs, ""), 7,
                   "refusing the claims folder " + theirs +
                       ": it belongs to uid 65534, neither "
                       "root nor you");
  check_not_enough(pick(open, ""), 7,
                   "refusing the claims folder " + open +
                       ": it is writable by others without the sticky bit");
  CHECK(pick(shared, "").out == "0\n");
  // A run that would claim there is refused too, and starts nothing.
  Run run = test::run_shell(agent() + " run --nvidia-smi " + fake() + " --lock-dir " +
                            quote(theirs) + " -- touch " + quote(parent + "/ran"));
  CHECK(run.exit_code == 7);
  CHECK_THAT(run.err, Catch::Contains("refusing the claims folder"));
  CHECK_FALSE(::access((parent + "/ran").c_str(), F_OK) == 0);
}

TEST_CASE("pick: a lock on another file system's file with the same inode number claims nothing") {
  if (!test::can_unshare("--mount"))
    return;
  // Two fresh tmpfs number their first files alike: a lock on one's, a claim file in the other.
  std::string folder = test::temporary_folder();
  std::string elsewhere = quote(folder + "/elsewhere"), claims = quote(folder + "/claims");
  Run run = test::run_shell("mkdir " + elsewhere + " " + claims + " && unshare --mount sh -c '" +
                            "mount -t tmpfs none \"$1\" && mount -t tmpfs none \"$2\" || exit 77; "
                            ": >\"$1/x\"; : >\"$2/" +
                            gpu0 +
                            ".lock\"; "
                            "[ \"$(stat -c %i \"$1/x\")\" = \"$(stat -c %i \"$2/" +
                            gpu0 +
                            ".lock\")\" ] || exit 77; "
                            "exec 9<\"$1/x\" && flock -n 9 && exec " +
                            agent() + " pick --fixture " + states + " --lock-dir \"$2\"' sh " +
                            elsewhere + " " + claims);
  if (run.exit_code == 77) {
    WARN("skipped: no two tmpfs with the same inode numbers here");
    return;
  }
  INFO("stderr: " << run.err);
  CHECK(run.exit_code == 0);
  CHECK(run.out == "0\n");
}

TEST_CASE("pick in a PID namespace of its own says a claim held outside it is unknown, not free") {
  if (!test::can_unshare("--pid --fork --mount-proc"))
    return;
  std::string folder = test::temporary_folder();
  test::ClaimHolder holder(folder,
                           gpu0); // a run on the host: /proc/locks in the namespace hides it
  std::string contained = "unshare --pid --fork --mount-proc " + agent() + " pick --fixture " +
                          states + " --lock-dir " + quote(folder);
  Run one = test::run_shell(contained);
  INFO("stderr: " << one.err);
  CHECK(one.exit_code == 0);
  CHECK(one.out == "7\n");
  Run three = test::run_shell(contained + " 3");
  check_not_enough(three, 9,
                   "2 of 3 GPUs free: GPU 0 claim unknown (held by a process not "
                   "visible here)");
}

TEST_CASE("pick, run: a shared lock another user holds on a claim file blocks its GPU, named") {
  if (!test::can_be_nobody())
    return;
  std::string claims = test::shared_claims_folder(), folder = test::temporary_folder();
  // Root's claim file of GPU 7, as a run leaves it: readable by all, so that they see its lock.
  std::string claim = claims + "/" + gpu7 + ".lock";
  REQUIRE(test::run_shell(": >" + quote(claim) + " && chmod 644 " + quote(claim)).exit_code == 0);
  // flock(1) with a command holds the lock itself, so /proc/locks names a live process.
  test::Background blocker(test::as_nobody + "flock -s -n " + quote(claim) + " sleep 300");
  REQUIRE(test::wait_until(
      [&] { return nvsmi::claim_state(claims, gpu7).kind == nvsmi::ClaimState::blocked; }));
  const std::string named = "GPU 7 claim blocked by pid " + std::to_string(blocker.pid()) +
                            " (uid 65534) holding a shared lock on " + claim;
  Run two = pick(claims, "2");
  INFO("stderr: " << two.err);
  CHECK(two.exit_code == 0);
  CHECK(two.out.find('7') == std::string::npos);
  check_not_enough(pick(claims, "3"), 9, "2 of 3 GPUs free: ");
  CHECK_THAT(pick(claims, "3").err, Catch::Contains(named));
  std::string run = "FAKE_NVSMI_XML=" + states + " " + agent() + " run --source xml --nvidia-smi " +
                    fake() + " --interval 0.2 --lock-dir " + quote(claims) + " --report " +
                    quote(folder + "/report") + " ";
  auto start = std::chrono::steady_clock::now();
  Run taken = test::run_shell(run + "--gpu-ids 7 -- true");
  CHECK(std::chrono::steady_clock::now() - start < test::promptly);
  check_not_enough(taken, 9, named);
  Run three = test::run_shell(run + "--gpus 3 -- true");
  CHECK(three.exit_code == 9);
  CHECK_THAT(three.err, Catch::Contains(named));
  ::kill(blocker.pid(), SIGKILL);
  blocker.wait();
}

TEST_CASE("pick: a GPU that nvidia-smi lists twice is one GPU") {
  std::string folder = test::temporary_folder();
  std::string twice = folder + "/twice.xml";
  // GPU 7 carries GPU 0's UUID.
  REQUIRE(test::run_shell("sed 's/" + gpu7 + "/" + gpu0 + "/' " + states + " >" + quote(twice))
              .exit_code == 0);
  auto pick_twice = [&](const std::string &arguments) {
    return test::run_agent("pick --fixture " + quote(twice) + " --lock-dir " + quote(folder) + " " +
                           arguments);
  };
  CHECK(pick_twice("2").out == "0,4\n");
  CHECK(pick_twice("2 --uuid").out == gpu0 + "," + gpu4 + "\n");
  check_not_enough(pick_twice("3"), 9, "2 of 3 GPUs free: ");
  CHECK_THAT(pick_twice("3").err, Catch::Contains("GPU 7 is GPU 0 listed again (same UUID)"));
}

TEST_CASE("pick: --interval nan and --wait inf are refused at once, exit 2, not a wait forever") {
  // Unchecked, nan passed the range check and `pick --wait 1 --interval nan` never returned.
  std::string folder = test::temporary_folder();
  for (const std::string &arguments :
       {std::string("--wait 1 --interval nan"), std::string("--wait inf"),
        std::string("--wait nan"), std::string("--max-utilization nan"),
        std::string("--timeout inf")}) {
    INFO(arguments);
    auto start = std::chrono::steady_clock::now();
    Run run = test::run_shell("timeout 30 " + agent() + " pick --fixture " + states +
                              " --lock-dir " + quote(folder) + " " + arguments);
    CHECK(std::chrono::steady_clock::now() - start < test::promptly);
    CHECK(run.exit_code == 2);
    CHECK(run.out.empty());
    CHECK_THAT(run.err,
               Catch::StartsWith("nvsmi-agent: --") && Catch::Contains(" is not a number from "));
  }
}

TEST_CASE("pick under sudo: the claims folder is not the caller's to name (--lock-dir, "
          "NVSMI_LOCK_DIR)") {
  std::string folder = test::temporary_folder() + "/claims";
  Run option = test::run_shell("SUDO_UID=1000 " + agent() + " pick --lock-dir " + quote(folder));
  CHECK(option.exit_code == 2);
  CHECK_THAT(option.err, Catch::StartsWith("nvsmi-agent: --lock-dir: refused under sudo"));
  // NVSMI_LOCK_DIR is read before nvidia-smi runs: refused whatever nvidia-smi would say.
  Run variable =
      test::run_shell("SUDO_UID=1000 NVSMI_LOCK_DIR=" + quote(folder) + " " + agent() + " pick");
  CHECK(variable.exit_code == 2);
  CHECK_THAT(variable.err,
             Catch::StartsWith("nvsmi-agent: NVSMI_LOCK_DIR is set, and it is refused under sudo"));
  // Nothing was made where the caller said.
  CHECK(test::run_shell("test -e " + quote(folder)).exit_code != 0);
  // As the caller itself, both still choose the folder.
  CHECK(test::run_shell("NVSMI_LOCK_DIR=" + quote(folder) + " " + agent() + " pick --fixture " +
                        states)
            .exit_code == 0);
}

namespace {

// A record of the job mapping folder as the shipped prolog writes it, `minutes` ago.
void allocated(const std::string &folder, int gpu, const std::string &job, int minutes) {
  std::string path = folder + "/" + std::to_string(gpu);
  test::write_file(path, job + "\n");
  test::write_file(path + ".user", "alice\n");
  REQUIRE(test::run_shell("touch -d '-" + std::to_string(minutes) + " minutes' " + quote(path))
              .exit_code == 0);
}

// pick on the states fixture as a caller whose SLURM_JOB_ID is `job` (none where empty).
Run pick_in_job(const std::string &job, const std::string &claims, const std::string &jobs,
                const std::string &arguments) {
  std::string environment =
      job.empty() ? "env -u SLURM_JOB_ID " : "env SLURM_JOB_ID=" + quote(job) + " ";
  return test::run_shell(environment + agent() + " pick --fixture " + states + " --lock-dir " +
                         quote(claims) + " --job-mapping-dir " + quote(jobs) + " " + arguments);
}

} // namespace

TEST_CASE("pick: a GPU allocated to another batch job is never offered, even with no process on "
          "it; one of the caller's own job is") {
  std::string claims = test::temporary_folder(), jobs = test::temporary_folder();
  allocated(jobs, 0, "1234", 1); // just allocated: its job may still be loading
  Run outside = pick_in_job("", claims, jobs, "2");
  INFO(outside.err);
  CHECK(outside.exit_code == 0);
  CHECK(outside.out == "7,4\n");
  Run short_of = pick_in_job("", claims, jobs, "3");
  check_not_enough(short_of, 9, "");
  CHECK_THAT(short_of.err, Catch::Contains("GPU 0 allocated to job 1234 of alice"));
  CHECK(pick_in_job("99", claims, jobs, "2").out == "7,4\n");
  CHECK(pick_in_job("1234", claims, jobs, "2").out == "0,7\n");
  // Not a job id: no job of the caller's, so every allocated GPU is another's.
  CHECK(pick_in_job("1234; x", claims, jobs, "2").out == "7,4\n");

  // Held 40 minutes with no process (allocated_idle): still the caller's job's to pick.
  allocated(jobs, 0, "1234", 40);
  CHECK(pick_in_job("1234", claims, jobs, "2").out == "0,7\n");
  Run other = pick_in_job("99", claims, jobs, "3");
  check_not_enough(other, 9, "");
  CHECK_THAT(other.err, Catch::Contains("GPU 0 allocated to job 1234 of alice"));
  // The record gone (the epilog ran): free again.
  std::remove((jobs + "/0").c_str());
  CHECK(pick_in_job("99", claims, jobs, "2").out == "0,7\n");
}

TEST_CASE("run: a GPU allocated to another batch job is never taken; one of the caller's own job "
          "is") {
  std::string claims = test::temporary_folder(), jobs = test::temporary_folder();
  std::string folder = test::temporary_folder();
  allocated(jobs, 0, "1234", 1);
  auto run = [&](const std::string &environment, const std::string &gpus) {
    return test::run_shell("FAKE_NVSMI_XML=" + states + " " + environment + " " + agent() +
                           " run --source xml --nvidia-smi " + fake() +
                           " --interval 0.2 --lock-dir " + quote(claims) + " --job-mapping-dir " +
                           quote(jobs) + " --report " + quote(folder + "/report") + " --gpus " +
                           gpus + " -- sh -c 'echo \"gpus=$CUDA_VISIBLE_DEVICES\"'");
  };
  Run outside = run("env -u SLURM_JOB_ID", "1");
  INFO("stderr: " << outside.err);
  CHECK(outside.exit_code == 0);
  CHECK_THAT(outside.out, Catch::Contains("gpus=7\n"));
  Run short_of = run("env -u SLURM_JOB_ID", "3");
  CHECK(short_of.exit_code == 9);
  CHECK_THAT(short_of.err, Catch::Contains("GPU 0 allocated to job 1234 of alice"));
  Run inside = run("env SLURM_JOB_ID=1234", "1");
  INFO("stderr: " << inside.err);
  CHECK(inside.exit_code == 0);
  CHECK_THAT(inside.out, Catch::Contains("gpus=0\n"));
}

} // namespace test_pick
