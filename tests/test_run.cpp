// `nvsmi-agent run` end to end through the built agent and the stand-in nvidia-smi: the job's
// exit code passed through, signals forwarded, claims that keep concurrent runs on different GPUs
// and die with their holder, the job's GPU processes told from a stranger's, and the end-of-run
// report's figures.
#include "claims_support.hpp"
#include "jobs/gpu_claims.hpp"
#include "process_support.hpp"
#include "support.hpp"
#include "tmux_session.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <csignal>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <sys/stat.h>

namespace test_run {

using test::Background;
using test::quote;
using test::run_shell;
using json = nlohmann::json;

namespace {

const std::string fake = SCRIPTS_DIR "/fake-nvidia-smi";
const std::string gpu0 = "GPU-00000000-0000-0000-0000-000000000000";

// `run` with a lock folder of its own and quick samples from the stand-in.
std::string run_command(const std::string &locks, const std::string &options,
                        const std::string &smi = fake) {
  return std::string(AGENT_BIN) + " run --nvidia-smi " + quote(smi) +
         " --interval 0.2 --lock-dir " + quote(locks) + " " + options;
}

// Kills a process the test started (through its job) when the test ends, however it ends.
struct KillAtEnd {
  std::string pid_file;
  ~KillAtEnd() {
    if (int pid = test::pid_in_file(pid_file); pid > 0)
      ::kill(pid, SIGKILL);
  }
};

// A shell loop, for a job's sh -c '...', that ends once `log` (run's --log) lists `pid` (a number,
// or shell text that prints one) as a GPU process in two samples, or after a minute: the first
// sample in the log is the one the GPU was chosen by, taken before the job started.
std::string until_logged(const std::string &pid, const std::string &log) {
  return "for i in $(seq 600); do [ \"$(grep -cs \"\\\"pid\\\":" + pid + ",\" " + log +
         ")\" -ge 2 ] && break; sleep 0.1; done";
}

// What run said on stderr less the sampler's notice that its first sample went out without the
// process list (the stand-in's process stream, started with the first GPU sample, can take longer
// than the 2 s it is waited for on a busy machine).
std::string said(const std::string &err) {
  std::string kept;
  for (const std::string &line : test::lines_of(err))
    if (line.find("first sample without its process list: ") == std::string::npos)
      kept += line + "\n";
  return kept;
}

} // namespace

TEST_CASE("run exits with the job's exit code, 128 + N when signal N ended it") {
  std::string folder = test::temporary_folder();
  std::string locks = folder + "/locks", report = " --report " + quote(folder + "/report");
  CHECK(run_shell(run_command(locks, report + " -- true")).exit_code == 0);
  CHECK(run_shell(run_command(locks, report + " -- sh -c 'exit 3'")).exit_code == 3);
  CHECK(run_shell(run_command(locks, report + " -- sh -c 'kill -TERM $$'")).exit_code == 143);
  CHECK(test::read_file(folder + "/report").find("killed by signal 15") != std::string::npos);
}

TEST_CASE("run says why when the job cannot start: 127 not found, 126 not executable") {
  std::string folder = test::temporary_folder();
  test::write_file(folder + "/not-executable", "#!/bin/sh\n");
  test::Run missing = run_shell(run_command(folder + "/locks", "-- no-such-program-here"));
  CHECK(missing.exit_code == 127);
  CHECK(missing.err.find("no-such-program-here: command not found") != std::string::npos);
  test::Run denied =
      run_shell(run_command(folder + "/locks", "-- " + quote(folder + "/not-executable")));
  CHECK(denied.exit_code == 126);
}

TEST_CASE("run forwards SIGTERM to the job and exits with what the job made of it") {
  std::string folder = test::temporary_folder();
  std::string started = folder + "/started", got = folder + "/got";
  Background run("exec " +
                 run_command(folder + "/locks", "--report " + quote(folder + "/report") +
                                                    " -- sh -c 'trap \"echo TERM >" + got +
                                                    "; exit 5\" TERM; touch " + started +
                                                    "; for i in $(seq 600); do sleep 0.1; done'"));
  REQUIRE(test::wait_until([&] { return std::ifstream(started).good(); }));
  ::kill(run.pid(), SIGTERM);
  CHECK(run.wait() == 5);
  CHECK(test::read_file(got) == "TERM\n");
}

// run does not send the terminal's SIGINT again (the job would see two); that part cannot be
// told here: the second would arrive while the first is pending, and standard signals coalesce.
TEST_CASE("Ctrl-C at the terminal reaches the job, and run waits for it and exits as it does") {
  if (!test::installed("tmux")) {
    WARN("tmux is not installed (scripts/install-deps installs it): Ctrl-C is not tested");
    return;
  }
  std::string folder = test::temporary_folder();
  std::string started = folder + "/started", got = folder + "/got", release = folder + "/release";
  test::Tmux tmux(120, 30);
  // The job counts the SIGINTs it gets, and ends (7) once told to; `sleep` dies of each one.
  tmux.run(run_command(folder + "/locks", "--report " + quote(folder + "/report") +
                                              " -- sh -c 'trap \"echo INT >>" + got +
                                              "\" INT; touch " + started + "; until [ -e " +
                                              release + " ]; do sleep 0.1; done; exit 7'") +
           "; echo run-exit=$?");
  REQUIRE(test::wait_until([&] { return std::ifstream(started).good(); }));
  tmux.key("C-c");
  REQUIRE(test::wait_until([&] { return std::ifstream(got).good(); }));
  test::write_file(release, "");
  REQUIRE(tmux.wait_for("run-exit=7"));
  CHECK(test::read_file(got) == "INT\n");
}

TEST_CASE("run sets CUDA_VISIBLE_DEVICES in PCI order, and NVSMI_RUN_GPUS to the UUIDs") {
  std::string folder = test::temporary_folder();
  test::Run run =
      run_shell(run_command(folder + "/locks", "--gpus 2 --report " + quote(folder + "/report") +
                                                   " -- sh -c 'echo $CUDA_VISIBLE_DEVICES "
                                                   "$CUDA_DEVICE_ORDER $NVSMI_RUN_GPUS'"));
  REQUIRE(run.exit_code == 0);
  // The stand-in's free GPUs, most free memory first: 0, then 7.
  CHECK(run.out == "0,7 PCI_BUS_ID " + gpu0 + ",GPU-00000000-0000-0000-0000-000000000007\n");
  test::Run by_uuid = run_shell(
      run_command(folder + "/locks", "--gpu-ids 4 --uuid --report " + quote(folder + "/report") +
                                         " -- sh -c 'echo $CUDA_VISIBLE_DEVICES'"));
  CHECK(by_uuid.exit_code == 0);
  CHECK(by_uuid.out == "GPU-00000000-0000-0000-0000-000000000004\n");
}

TEST_CASE("run --gpu takes an index, a UUID or a PCI bus id; --gpu-ids still works; one not "
          "listed is exit 2") {
  std::string folder = test::temporary_folder();
  std::string report = " --report " + quote(folder + "/report");
  auto devices = [&](const std::string &choice) {
    return run_shell(
        run_command(folder + "/locks", choice + report + " -- sh -c 'echo $CUDA_VISIBLE_DEVICES'"));
  };
  // A UUID nvidia-smi does not list, among ones it does: the job does not start.
  test::Run named = devices("--gpu 00000000:59:00.0,GPU-00000000-0000-0000-0000-00000000000A "
                            "--gpu 9B:00.0");
  INFO("stderr: " << named.err);
  CHECK(named.exit_code == 2);
  CHECK(said(named.err) == "nvsmi-agent: --gpu: nvidia-smi lists no GPU "
                           "GPU-00000000-0000-0000-0000-00000000000A\n");
  test::Run chosen =
      devices("--gpu 00000000:59:00.0 --gpu GPU-00000000-0000-0000-0000-000000000007");
  INFO("stderr: " << chosen.err);
  CHECK(chosen.exit_code == 0);
  CHECK(chosen.out == "4,7\n");
  // GPU 4 by its bus id as nvidia-smi prints it and short, GPU 7 by its UUID.
  test::Run by_bus = devices("--gpu 59:00.0");
  CHECK(by_bus.out == "4\n");
  test::Run alias = devices("--gpu-ids 3");
  CHECK(alias.exit_code == 0);
  CHECK(alias.out == "3\n");
  // The alias is for old scripts: the help names --gpu alone.
  test::Run help = test::run_agent("run --help");
  CHECK_THAT(help.out, Catch::Contains("--gpu ID"));
  CHECK(help.out.find("--gpu-ids") == std::string::npos);
  CHECK(devices("--gpu '0;1'").exit_code == 2);
}

TEST_CASE("eight runs at once on four free GPUs: four run on four different GPUs") {
  std::string folder = test::temporary_folder();
  std::string locks = folder + "/locks", xml = folder + "/four-free.xml";
  // The states fixture has GPUs 0, 4 and 7 free; GPU 1 at 0% makes four.
  REQUIRE(run_shell("sed '0,/<gpu_util>10 %/s//<gpu_util>0 %/' " +
                    quote(test::fixture_path("xml/h100-8gpu-states-v12.xml")) + " >" + quote(xml))
              .exit_code == 0);
  std::string environment = "FAKE_NVSMI_XML=" + quote(xml) + " ";

  SECTION("without --wait the other four exit 9") {
    std::string release = folder + "/release";
    std::vector<std::unique_ptr<Background>> runs;
    for (int i = 0; i < 8; ++i)
      runs.push_back(std::make_unique<Background>(
          environment + "exec " +
          run_command(locks, "--source xml --gpus 1 --report " + quote(folder + "/report") +
                                 " -- sh -c 'echo "
                                 "$CUDA_VISIBLE_DEVICES $NVSMI_RUN_GPUS >" +
                                 folder + "/job.$$; for i in $(seq 1200); do [ -e " + release +
                                 " ] && exit 0; sleep 0.1; done; exit 1'")));
    auto ended = [&] {
      return std::count_if(runs.begin(), runs.end(),
                           [](const auto &run) { return run->exit_code().has_value(); });
    };
    REQUIRE(test::wait_until([&] { return ended() == 4; }));
    for (const auto &run : runs)
      if (run->exit_code()) {
        CHECK(*run->exit_code() == 9);
        CHECK(run->err_contains("0 of 1 GPUs free: "));
        CHECK(run->err_contains(" claimed by pid "));
      }
    std::set<std::string> gpus;
    test::Run jobs = run_shell("cat " + quote(folder) + "/job.*");
    for (const std::string &line : test::non_empty_lines_of(jobs.out))
      gpus.insert(line.substr(0, line.find(' ')));
    CHECK(gpus == std::set<std::string>{"0", "1", "4", "7"});
    test::write_file(release, "");
    for (const auto &run : runs)
      if (!run->exit_code() || *run->exit_code() != 9)
        CHECK(run->wait(test::patience) == 0);
  }

  SECTION("with --wait they all run, never two at once on one GPU") {
    std::vector<std::unique_ptr<Background>> runs;
    for (int i = 0; i < 8; ++i)
      runs.push_back(std::make_unique<Background>(
          environment + "exec " +
          run_command(locks, "--source xml --gpus 1 --wait 120 --report " +
                                 quote(folder + "/report") +
                                 " -- sh -c 's=$(date "
                                 "+%s%N); sleep 1; echo \"$s $(date +%s%N)\" >>" +
                                 folder + "/gpu.$CUDA_VISIBLE_DEVICES'")));
    for (const auto &run : runs) {
      CHECK(run->wait(std::chrono::seconds(150)) == 0);
      INFO(run->err());
    }
    int jobs = 0;
    for (const char *gpu : {"0", "1", "4", "7"}) {
      std::vector<std::pair<long long, long long>> spans;
      std::ifstream file(folder + "/gpu." + std::string(gpu));
      for (long long start = 0, end = 0; file >> start >> end;)
        spans.emplace_back(start, end);
      std::sort(spans.begin(), spans.end());
      for (std::size_t i = 1; i < spans.size(); ++i)
        CHECK(spans[i].first >= spans[i - 1].second);
      jobs += static_cast<int>(spans.size());
    }
    CHECK(jobs == 8);
  }
}

TEST_CASE("a run killed with SIGKILL releases its claims; the job goes on") {
  std::string folder = test::temporary_folder();
  std::string locks = folder + "/locks";
  KillAtEnd job{folder + "/job.pid"};
  Background run("exec " + run_command(locks, "--gpu-ids 0 --report " + quote(folder + "/report") +
                                                  " -- sh -c 'echo $$ >" + job.pid_file +
                                                  "; exec sleep 300'"));
  REQUIRE(test::wait_until([&] { return test::pid_in_file(job.pid_file) > 0; }));
  test::Run refused = run_shell(run_command(locks, "--gpu-ids 0 -- true"));
  CHECK(refused.exit_code == 9);
  CHECK(refused.err.find("GPU 0 is claimed by process " + std::to_string(run.pid())) !=
        std::string::npos);
  ::kill(run.pid(), SIGKILL);
  CHECK(run.wait() == 137);
  CHECK(run_shell(
            run_command(locks, "--gpu-ids 0 --report " + quote(folder + "/report") + " -- true"))
            .exit_code == 0);
  CHECK(!test::process_ended(test::pid_in_file(job.pid_file)));
}

TEST_CASE("run tells the job's GPU processes from a stranger's, and reports what the job held") {
  std::string folder = test::temporary_folder();
  std::string apps = folder + "/apps";
  Background stranger("exec setpriv --reuid=nobody --regid=nogroup --clear-groups sleep 300");
  test::write_file(apps, gpu0 + ", " + std::to_string(stranger.pid()) + ", 2048 MiB, sleep\n");
  KillAtEnd child{folder + "/child.pid"};
  // The job starts a child that the stand-in lists as a GPU process with 20480 MiB on GPU 0, and
  // waits for it after the kill: ended at once, run would find it still there and say so.
  std::string job = "sh -c 'sleep 300 & echo $! >" + child.pid_file + "; echo \"" + gpu0 +
                    ", $!, 20480 MiB, python\" >>" + apps +
                    "; sleep 4; kill $!; { wait $!; } 2>/dev/null || true'";
  std::string report = folder + "/report", log = folder + "/samples.json";
  // Rows stamped as printed: the report needs a span of time to measure.
  test::Run run = run_shell(
      "FAKE_NVSMI_STAMP_NOW=1 FAKE_NVSMI_APPS=" + quote(apps) + " " +
      run_command(folder + "/locks", "--gpu-ids 0 --process-interval 0.2 --report " +
                                         quote(report) + " --log " + quote(log) + " -- " + job));
  INFO(run.err);
  CHECK(run.exit_code == 0);
  // The report went to its file: stderr has the line that said which GPU the job got.
  std::string err = said(run.err);
  CHECK(err.find('\n') == err.size() - 1);
  std::string text = test::read_file(report);
  INFO(text);
  CHECK(text.find("peak memory 20480 MiB of 81559 MiB (25.1%)") != std::string::npos);
  // A job of seconds: no batch advice (the test below has a job of minutes).
  CHECK(text.find("how much larger a batch might fit: advice needs 5 min of samples") !=
        std::string::npos);
  CHECK(text.find("GPU 0 was shared with nobody's sleep for ") != std::string::npos);
  CHECK(text.find("shared with root's python") == std::string::npos); // the job's child
  CHECK(text.find("  GPU 0        NVIDIA H100 80GB HBM3: peak memory ") != std::string::npos);
  CHECK(text.find("ended        exit code 0") != std::string::npos);
  // Only the job's GPU.
  CHECK(text.find("GPU-00000000-0000-0000-0000-000000000001") == std::string::npos);
  // The log is report's to read later.
  test::Run later = test::run_agent("report --gpu 0 " + quote(log));
  CHECK(later.exit_code == 0);
  CHECK(later.out.find("GPU 0 ") != std::string::npos);
}

TEST_CASE("run --format json adds the job to report's JSON") {
  std::string folder = test::temporary_folder();
  std::string report = folder + "/report.json";
  test::Run run =
      run_shell("FAKE_NVSMI_STAMP_NOW=1 " +
                run_command(folder + "/locks", "--gpus 1 --format json --report " + quote(report) +
                                                   " -- sh -c 'sleep 1; exit 3'"));
  CHECK(run.exit_code == 3);
  json document = json::parse(test::read_file(report));
  CHECK(document["schema"] == "nvsmi-agent.report/1");
  CHECK(document["job"]["exit_code"] == 3);
  CHECK(document["job"]["gpus"][0]["uuid"] == gpu0);
  CHECK(document["job"]["gpus"][0]["peak_job_memory_mib"].is_null());
  CHECK(document["job"]["gpus"][0]["batch_growth_estimate"].is_null());
}

// Issue 24, item 5: the job's section is rendered by report's page, not pasted into it.
TEST_CASE("run --format html puts the job in report's page, before the GPUs' figures") {
  std::string folder = test::temporary_folder();
  std::string report = folder + "/report.html";
  test::Run run =
      run_shell("FAKE_NVSMI_STAMP_NOW=1 " +
                run_command(folder + "/locks", "--gpu-ids 0 --format html --report " +
                                                   quote(report) + " -- sh -c 'sleep 1; exit 3'"));
  CHECK(run.exit_code == 3);
  std::string html = test::read_file(report);
  INFO(run.err << html);
  std::size_t job = html.find("<section class=\"job\" id=\"job\"><h2>Job <code>sh -c sleep 1; "
                              "exit 3</code></h2>");
  REQUIRE(job != std::string::npos);
  CHECK(job < html.find("<h2>All GPUs</h2>"));
  CHECK(html.find("<section class=\"job\"", job + 1) == std::string::npos);
  CHECK(html.find("<p class=\"meta\">exit code 3 after ") != std::string::npos);
  CHECK(html.find("<p class=\"meta\">samples taken while the job ran</p>") != std::string::npos);
  CHECK(html.find("Times as nvidia-smi stamped the samples (") != std::string::npos);
  CHECK(html.find("</body></html>\n") == html.size() - 15);
}

// Claims against a local user who attacks them: the shared folder as the package ships it, and
// the user `nobody` running jobs there too and planting and removing what they can.
namespace {

// A folder `nobody` may write its reports in.
std::string nobodys_folder(const std::string &claims) {
  std::string folder = claims + "/../nobody";
  REQUIRE(::mkdir(folder.c_str(), 0700) == 0);
  REQUIRE(::chown(folder.c_str(), 65534, 65534) == 0);
  return folder;
}

// `run --gpu-ids 0 -- true` with claims in `claims`, as `user` ("" for root).
test::Run run_on_gpu0(const std::string &claims, const std::string &user,
                      const std::string &report) {
  return run_shell(user +
                   run_command(claims, "--gpu-ids 0 --report " + quote(report) + " -- true"));
}

} // namespace

TEST_CASE("run: another user who removes every claim file of theirs frees no GPU a run holds") {
  if (!test::can_be_nobody())
    return;
  std::string claims = test::shared_claims_folder(), theirs = nobodys_folder(claims);
  // nobody ran on GPU 0 first, so a claim file of theirs is there.
  REQUIRE(run_on_gpu0(claims, test::as_nobody, theirs + "/report").exit_code == 0);
  std::string folder = test::temporary_folder();
  KillAtEnd job{folder + "/job.pid"};
  Background holder("exec " +
                    run_command(claims, "--gpu-ids 0 --report " + quote(folder + "/report") +
                                            " -- sh -c 'echo $$ >" + job.pid_file +
                                            "; exec sleep 300'"));
  REQUIRE(test::wait_until([&] { return test::pid_in_file(job.pid_file) > 0; }));
  // All the sticky folder lets them remove.
  REQUIRE(
      run_shell(test::as_nobody + "find " + quote(claims) + " -user nobody -delete").exit_code ==
      0);
  test::Run root = run_on_gpu0(claims, "", folder + "/again");
  INFO("stderr: " << root.err);
  CHECK(root.exit_code == 9);
  CHECK_THAT(root.err,
             Catch::Contains("GPU 0 is claimed by process " + std::to_string(holder.pid())));
  CHECK(run_on_gpu0(claims, test::as_nobody, theirs + "/report").exit_code == 9);
  ::kill(holder.pid(), SIGKILL);
  CHECK(holder.wait() == 137);
  CHECK(run_on_gpu0(claims, "", folder + "/free").exit_code == 0);
}

TEST_CASE("run: under fs.protected_regular=2, another user's run on a GPU leaves it to the next") {
  if (!test::can_be_nobody())
    return;
  test::ProtectedRegular protected_regular;
  if (!protected_regular.set())
    return;
  std::string claims = test::shared_claims_folder(), theirs = nobodys_folder(claims);
  std::string folder = test::temporary_folder();
  REQUIRE(run_on_gpu0(claims, test::as_nobody, theirs + "/report").exit_code == 0);
  test::Run root = run_on_gpu0(claims, "", folder + "/report");
  INFO("stderr: " << root.err);
  CHECK(root.exit_code == 0);
  CHECK(run_on_gpu0(claims, test::as_nobody, theirs + "/report").exit_code == 0);
  CHECK(run_on_gpu0(claims, "", folder + "/report").exit_code == 0);
}

TEST_CASE("run: a FIFO or a symlink at a claim's path: run takes another GPU, never blocks") {
  std::string folder = test::temporary_folder(), locks = folder + "/locks";
  REQUIRE(::mkdir(locks.c_str(), 0700) == 0);
  REQUIRE(::mkfifo((locks + "/" + gpu0 + ".lock").c_str(), 0666) == 0);
  const std::string gpu7 = "GPU-00000000-0000-0000-0000-000000000007";
  REQUIRE(::symlink("/etc/passwd", (locks + "/" + gpu7 + ".lock").c_str()) == 0);
  std::string states =
      "FAKE_NVSMI_XML=" + quote(test::fixture_path("xml/h100-8gpu-states-v12.xml"));
  std::string report = " --report " + quote(folder + "/report");
  test::Run free = run_shell("timeout -s KILL 60 env " + states + " " +
                             run_command(locks, "--source xml --gpus 1" + report +
                                                    " -- sh -c 'echo $CUDA_VISIBLE_DEVICES'"));
  INFO("stderr: " << free.err);
  CHECK(free.exit_code == 0);
  CHECK(free.out == "4\n"); // GPUs 0 and 7 are free but cannot be claimed
  for (const char *gpu : {"0", "7"}) {
    test::Run named =
        run_shell("timeout -s KILL 60 " +
                  run_command(locks, std::string("--gpu-ids ") + gpu + report + " -- true"));
    INFO("stderr: " << named.err);
    CHECK(named.exit_code == 9);
    CHECK_THAT(named.err, Catch::Contains("GPU " + std::string(gpu) + " cannot be claimed"));
  }
}

TEST_CASE("run: a file another user plants under root's claim name is not root's to claim") {
  if (!test::can_be_nobody())
    return;
  std::string claims = test::shared_claims_folder(), folder = test::temporary_folder();
  // Its owner could remove it under root's lock: root never locks it.
  REQUIRE(run_shell(test::as_nobody + "touch " + quote(claims + "/" + gpu0 + ".lock")).exit_code ==
          0);
  test::Run named = run_on_gpu0(claims, "", folder + "/report");
  INFO("stderr: " << named.err);
  CHECK(named.exit_code == 9);
  CHECK_THAT(named.err, Catch::Contains(gpu0 + ".lock belongs to uid 65534, not to you"));
  CHECK_THAT(named.err, Catch::Contains("GPU 0 cannot be claimed"));
  test::Run other = run_shell(
      "FAKE_NVSMI_XML=" + quote(test::fixture_path("xml/h100-8gpu-states-v12.xml")) + " " +
      run_command(claims, "--source xml --gpus 1 --report " + quote(folder + "/report") +
                              " -- sh -c 'echo $CUDA_VISIBLE_DEVICES'"));
  INFO("stderr: " << other.err);
  CHECK(other.exit_code == 0);
  CHECK(other.out == "7\n"); // GPU 0, the best, is not offered to root
  // nobody's own runs are not hindered by it.
  CHECK(run_on_gpu0(claims, test::as_nobody, nobodys_folder(claims) + "/report").exit_code == 0);
}

TEST_CASE("run: a claims folder that is a symbolic link, or that another user could swap, is "
          "refused") {
  if (!test::can_be_nobody())
    return;
  std::string parent = test::temporary_folder();
  REQUIRE(::chmod(parent.c_str(), 0755) == 0);
  std::string pub = parent + "/pub", root_claims = parent + "/A", ran = parent + "/ran";
  for (const std::string &folder : {pub, root_claims}) {
    REQUIRE(::mkdir(folder.c_str(), 0700) == 0);
    REQUIRE(::chmod(folder.c_str(), 01777) == 0);
  }
  auto run_in = [&](const std::string &locks, const std::string &in = "") {
    return run_shell((in.empty() ? "" : "cd " + quote(in) + " && ") +
                     run_command(locks, "--gpu-ids 0 --report " + quote(parent + "/report") +
                                            " -- touch " + quote(ran)));
  };
  auto check_refused = [&](const test::Run &run, const std::string &why) {
    INFO("stderr: " << run.err);
    CHECK(run.exit_code == 7);
    CHECK_THAT(said(run.err), Catch::StartsWith("nvsmi-agent: refusing the claims folder "));
    CHECK_THAT(run.err, Catch::Contains(why));
    CHECK(test::lines_of(said(run.err)).size() == 1);
    CHECK_FALSE(::access(ran.c_str(), F_OK) == 0);
  };
  // nobody's link to a folder of root's: they could repoint it to another while a run holds GPU
  // 0 through it, and the next run would get GPU 0 too.
  REQUIRE(run_shell(test::as_nobody + "ln -s " + quote(root_claims) + " " + quote(pub + "/claims"))
              .exit_code == 0);
  const std::string link = "it is a symbolic link, which its owner (uid 65534) could repoint";
  check_refused(run_in(pub + "/claims"), link);
  check_refused(run_in(pub + "/claims/"), link);
  check_refused(run_in("claims", pub), link); // a relative path: from the current folder
  // A folder of root's in one of nobody's, which they could rename away and put theirs there.
  std::string theirs = pub + "/theirs";
  REQUIRE(run_shell(test::as_nobody + "mkdir -m 755 " + quote(theirs)).exit_code == 0);
  REQUIRE(::mkdir((theirs + "/claims").c_str(), 0700) == 0);
  check_refused(run_in(theirs + "/claims"),
                "its parent " + theirs + " belongs to uid 65534, neither root nor you");
  // A link of nobody's above the folder.
  REQUIRE(
      run_shell(test::as_nobody + "ln -s " + quote(parent) + " " + quote(pub + "/up")).exit_code ==
      0);
  check_refused(run_in(pub + "/up/A"),
                "its parent " + pub + "/up is a symbolic link of uid 65534, who could repoint it");
  // A folder above that anyone may rename things in.
  std::string open = parent + "/open";
  REQUIRE(::mkdir(open.c_str(), 0700) == 0);
  REQUIRE(::chmod(open.c_str(), 0777) == 0);
  REQUIRE(::mkdir((open + "/claims").c_str(), 0700) == 0);
  check_refused(run_in(open + "/claims"),
                "its parent " + open + " is writable by others without the sticky bit");
  // Root's own links above the folder are followed, as /var/run is.
  REQUIRE(::symlink(parent.c_str(), (parent + "/rootlink").c_str()) == 0);
  test::Run trusted = run_in(parent + "/rootlink/A");
  INFO("stderr: " << trusted.err);
  CHECK(trusted.exit_code == 0);
  CHECK(::access(ran.c_str(), F_OK) == 0);
}

// Issue 23, item 6: `--gpu-ids` took the `--` as the end of its list, and the job's own `-c` was
// then read as an option of run's (exit 2).
TEST_CASE("run --gpu-ids 0 -- sh -c CMD runs the job, as the README writes it") {
  std::string folder = test::temporary_folder();
  std::string report = "--report " + quote(folder + "/report") + " ";
  test::Run one =
      run_shell(run_command(folder + "/locks", report + "--gpu-ids 0 -- sh -c " +
                                                   quote("echo on $CUDA_VISIBLE_DEVICES")));
  INFO(one.err);
  CHECK(one.exit_code == 0);
  CHECK(one.out == "on 0\n");
  test::Run two =
      run_shell(run_command(folder + "/locks", report + "--gpu-ids 0,4 -- sh -c " +
                                                   quote("echo on $CUDA_VISIBLE_DEVICES")));
  INFO(two.err);
  CHECK(two.exit_code == 0);
  CHECK(two.out == "on 0,4\n");
}

// Issue 23, item 7: what reaches the operator's terminal goes through top's printable filter.
TEST_CASE("a stranger's process name and the job's words reach the report without their escapes") {
  std::string folder = test::temporary_folder();
  std::string apps = folder + "/apps";
  // A title change, a clear screen and a C1 CSI (U+009B) in the command line (argv[0]) that
  // names it, and in the name nvidia-smi lists.
  Background stranger("exec setpriv --reuid=nobody --regid=nogroup --clear-groups bash -c "
                      "'exec -a \"$(printf \"\\033]0;owned\\007\\033[2Jevil\\302\\23331m\")\" "
                      "sleep 300'");
  REQUIRE(test::wait_until([&] {
    return test::read_file("/proc/" + std::to_string(stranger.pid()) + "/cmdline")
               .rfind("\x1b]0;owned", 0) == 0;
  }));
  test::write_file(apps, gpu0 + ", " + std::to_string(stranger.pid()) +
                             ", 2048 MiB, \x1b]0;owned\x07\x1b[2Jevil\xc2\x9b"
                             "31m\n");
  // The job ends once a sample has shown the stranger.
  std::string log = folder + "/samples.json";
  std::string job = "sh -c '" + until_logged(std::to_string(stranger.pid()), log) + "' ";
  test::Run run = run_shell(
      "FAKE_NVSMI_STAMP_NOW=1 FAKE_NVSMI_APPS=" + quote(apps) + " " +
      run_command(folder + "/locks", "--gpu-ids 0 --process-interval 0.2 --log " + quote(log) +
                                         " -- " + job + quote("\x1b[2Jword")));
  CHECK(run.exit_code == 0);
  INFO(run.err);
  // Named as every screen names it: each control marked U+FFFD, none obeyed.
  CHECK(run.err.find("was shared with nobody's \uFFFD]0;owned\uFFFD\uFFFD[2Jevil\uFFFD31m for ") !=
        std::string::npos);
  CHECK(run.err.find("; sleep 0.1; done [2Jword\n") != std::string::npos);
  CHECK(run.err.find('\x1b') == std::string::npos);
  CHECK(run.err.find('\x07') == std::string::npos);
  CHECK(run.err.find("\xc2\x9b") == std::string::npos);
}

// Issue 23, item 8.
TEST_CASE("a --report or --log that cannot be written is said before the job starts") {
  std::string folder = test::temporary_folder();
  std::string started = folder + "/started", job = " -- touch " + quote(started);
  test::Run report =
      run_shell(run_command(folder + "/locks", "--report " + quote(folder + "/no/report") + job));
  CHECK(report.exit_code == 7);
  CHECK(report.err == "nvsmi-agent: cannot create a temporary file beside " + folder +
                          "/no/report: No such file or directory\n");
  test::Run log =
      run_shell(run_command(folder + "/locks", "--report " + quote(folder + "/report") + " --log " +
                                                   quote(folder + "/no/log") + job));
  CHECK(log.exit_code == 7);
  CHECK(log.err.find("nvsmi-agent: cannot open ") == 0);
  CHECK(log.err.find(folder + "/no/log: No such file or directory\n") != std::string::npos);
  CHECK(!std::ifstream(started).good());
}

// Issue 24, item 5: the samples are only in memory, so a report that cannot go to its file goes
// to standard error rather than nowhere.
TEST_CASE("a report that cannot be written after the job goes to standard error instead") {
  std::string folder = test::temporary_folder();
  std::string out = folder + "/out";
  REQUIRE(run_shell("mkdir " + quote(out)).exit_code == 0);
  // The job takes the report's folder away.
  test::Run run = run_shell(
      "FAKE_NVSMI_STAMP_NOW=1 " +
      run_command(folder + "/locks", "--gpu-ids 0 --report " + quote(out + "/report") +
                                         " -- sh -c 'sleep 1; rm -r " + quote(out) + "; exit 4'"));
  CHECK(run.exit_code == 4); // the job's
  INFO(run.err);
  CHECK(run.err.find(" no end-of-run report in " + out +
                     "/report: cannot create a temporary file beside " + out +
                     "/report: No such file or directory; it follows on standard error\n") !=
        std::string::npos);
  CHECK(run.err.find("\nJob  sh -c sleep 1; rm -r ") != std::string::npos);
  CHECK(run.err.find("  ended        exit code 4 after ") != std::string::npos);
}

// Issue 24, item 5: the report is made of the samples in memory, not of a file written for it.
TEST_CASE("run without --log writes no file for its samples") {
  std::string folder = test::temporary_folder();
  std::string temporary = folder + "/tmp", listing = folder + "/listing";
  REQUIRE(run_shell("mkdir " + quote(temporary)).exit_code == 0);
  // The job looks into TMPDIR while samples are being taken: the report's samples are not there.
  test::Run run =
      run_shell("FAKE_NVSMI_STAMP_NOW=1 TMPDIR=" + quote(temporary) + " " +
                run_command(folder + "/locks",
                            "--gpu-ids 0 --details -- sh -c 'sleep 1; ls -A \"$TMPDIR\" >" +
                                quote(listing) + "'"));
  INFO(run.err);
  CHECK(run.exit_code == 0);
  CHECK(test::read_file(listing).empty());
  CHECK(run_shell("ls -A " + quote(temporary)).out.empty());
  CHECK(run.err.find("samples: taken while the job ran\n") != std::string::npos);
  CHECK(run.err.find("\nGPU 0  ") != std::string::npos);
  CHECK(run.err.find("\nJob  sh -c sleep 1; ls -A ") != std::string::npos);
}

TEST_CASE("a job that cannot start leaves no temporary folder behind") {
  std::string folder = test::temporary_folder();
  std::string temporary = folder + "/tmp";
  REQUIRE(run_shell("mkdir " + quote(temporary)).exit_code == 0);
  test::write_file(folder + "/not-executable", "#!/bin/sh\n");
  std::string environment = "TMPDIR=" + quote(temporary) + " ";
  CHECK(run_shell(environment + run_command(folder + "/locks", "-- no-such-program-here"))
            .exit_code == 127);
  CHECK(run_shell(environment +
                  run_command(folder + "/locks", "-- " + quote(folder + "/not-executable")))
            .exit_code == 126);
  CHECK(run_shell("ls -A " + quote(temporary)).out.empty());
}

// Issue 23, item 9: a worker that leaves the job's parent chain is still the job's.
TEST_CASE("a double-forked worker is the job's, and named when the job leaves it running") {
  std::string folder = test::temporary_folder();
  std::string apps = folder + "/apps";
  test::write_file(apps, "");
  KillAtEnd worker{folder + "/worker.pid"};
  // The subshell starts the worker and exits at once: the worker's parent is no longer the job.
  // The job ends once a sample has shown the worker.
  std::string report = folder + "/report", log = folder + "/samples.json";
  std::string job = "sh -c '(sleep 300 & echo $! >" + worker.pid_file + "; echo \"" + gpu0 +
                    ", $!, 20480 MiB, python\" >>" + apps + "); " +
                    until_logged("$(cat " + worker.pid_file + ")", log) + "'";
  test::Run run = run_shell("FAKE_NVSMI_STAMP_NOW=1 FAKE_NVSMI_APPS=" + quote(apps) + " " +
                            run_command(folder + "/locks", "--gpu-ids 0 --process-interval 0.2 "
                                                           "--report " +
                                                               quote(report) + " --log " +
                                                               quote(log) + " -- " + job));
  CHECK(run.exit_code == 0);
  std::string pid = std::to_string(test::pid_in_file(worker.pid_file));
  std::string text = test::read_file(report);
  INFO(run.err << text);
  CHECK(text.find("peak memory 20480 MiB of 81559 MiB (25.1%)") != std::string::npos);
  CHECK(text.find("shared with") == std::string::npos);
  // A job of seconds: its batch is not judged (a job of minutes is, below).
  CHECK(text.find("how much larger a batch might fit: advice needs 5 min of samples") !=
        std::string::npos);
  CHECK(text.find("left running pid " + pid + " (sleep)") != std::string::npos);
  CHECK(run.err.find(" left running by the job: pid " + pid + " (sleep)\n") != std::string::npos);
  CHECK(!test::process_ended(std::stoi(pid))); // named, not killed
}

TEST_CASE("run: a GPU process of the job's that it has reaped stays the job's while listed") {
  // nvidia-smi lists a process a moment after it ended; by then the job may have reaped it, and
  // its pid names no process here. It was the job's, and nothing else's.
  std::string folder = test::temporary_folder();
  std::string apps = folder + "/apps", log = folder + "/samples.json";
  std::string reaped = folder + "/reaped", release = folder + "/release";
  test::write_file(apps, "");
  KillAtEnd child{folder + "/child.pid"};
  Background run(
      "FAKE_NVSMI_STAMP_NOW=1 FAKE_NVSMI_APPS=" + quote(apps) + " exec " +
      run_command(folder + "/locks",
                  "--gpu-ids 0 --process-interval 0.2 --report " + quote(folder + "/report") +
                      " --log " + quote(log) + " -- sh -c 'sleep 300 & echo $! >" + child.pid_file +
                      "; echo \"" + gpu0 + ", $!, 20480 MiB, python\" >>" + apps + "; " +
                      until_logged("$!", log) + "; kill $!; { wait $!; } 2>/dev/null; touch " +
                      reaped + "; until [ -e " + release + " ]; do sleep 0.1; done'"));
  REQUIRE(test::wait_until([&] { return std::ifstream(reaped).good(); }));
  std::string listed = "\"pid\":" + std::to_string(test::pid_in_file(child.pid_file)) + ",";
  auto times_listed = [&] {
    std::string text = test::read_file(log);
    std::size_t count = 0;
    for (std::size_t at = text.find(listed); at != std::string::npos;
         at = text.find(listed, at + 1))
      ++count;
    return count;
  };
  std::size_t before = times_listed();
  REQUIRE(test::wait_until([&] { return times_listed() >= before + 2; }));
  test::write_file(release, "");
  CHECK(run.wait() == 0);
  std::string text = test::read_file(folder + "/report");
  INFO(run.err() << text);
  CHECK(text.find("peak memory 20480 MiB of 81559 MiB (25.1%)\n") != std::string::npos);
  CHECK(text.find("also had") == std::string::npos);
  CHECK(text.find("perhaps incomplete") == std::string::npos);
}

TEST_CASE("no batch advice while a GPU process that may be the job's cannot be told") {
  std::string folder = test::temporary_folder();
  std::string apps = folder + "/apps", log = folder + "/samples.json";
  std::string started = folder + "/started", release = folder + "/release";
  test::write_file(apps, "");
  Background run("FAKE_NVSMI_STAMP_NOW=1 FAKE_NVSMI_APPS=" + quote(apps) + " exec " +
                 run_command(folder + "/locks", "--gpu-ids 0 --process-interval 0.2 --report " +
                                                    quote(folder + "/report") + " --log " +
                                                    quote(log) + " -- sh -c 'echo \"" + gpu0 +
                                                    ", $$, 20480 MiB, python\" >>" + apps +
                                                    "; touch " + started + "; until [ -e " +
                                                    release + " ]; do sleep 0.1; done'"));
  REQUIRE(test::wait_until([&] { return std::ifstream(started).good(); }));
  // Started after the job, outside its tree, as a container that a daemon starts for it.
  Background outsider("exec sleep 300");
  std::ofstream(apps, std::ios::app) << gpu0 << ", " << outsider.pid() << ", 10240 MiB, worker\n";
  std::string listed = "\"pid\":" + std::to_string(outsider.pid()) + ",";
  REQUIRE(test::wait_until([&] { return test::read_file(log).find(listed) != std::string::npos; }));
  test::write_file(release, "");
  CHECK(run.wait() == 0);
  std::string text = test::read_file(folder + "/report");
  INFO(run.err() << text);
  CHECK(text.find("peak memory 20480 MiB of 81559 MiB (25.1%), perhaps incomplete") !=
        std::string::npos);
  CHECK(text.find("a batch about") == std::string::npos);
  CHECK(text.find("how much larger a batch might fit: unknown (the peak may miss") !=
        std::string::npos);
  CHECK(text.find("GPU 0 also had ") != std::string::npos);
  CHECK(text.find("'s sleep for ") !=
        std::string::npos); // its command line's name, not nvidia-smi's
  CHECK(text.find("shared with") == std::string::npos);
}

TEST_CASE("what the job leaves behind: an ended worker is reaped at once, many left running are "
          "named up to 20") {
  std::string folder = test::temporary_folder();
  std::string orphan = folder + "/orphan.pid", left = folder + "/left.pids";
  std::string result = folder + "/result", report = folder + "/report";
  struct KillAllAtEnd {
    std::string pid_file;
    ~KillAllAtEnd() {
      std::ifstream file(pid_file);
      for (int pid = 0; file >> pid;)
        if (pid > 0)
          ::kill(pid, SIGKILL);
    }
  } left_running{left};
  // A worker that ends soon after leaving the job's chain is run's to reap: the job waits for it to
  // vanish from /proc (a zombie stays there), then leaves 25 workers running.
  std::string job = "sh -c '(sleep 0.2 & echo $! >" + orphan + "); o=$(cat " + orphan +
                    "); for i in $(seq 600); do [ -e /proc/$o ] || break; sleep 0.1; done; "
                    "[ -e /proc/$o ] && echo zombie >" +
                    result + " || echo reaped >" + result +
                    "; for i in $(seq 25); do (sleep 300 & echo $! >>" + left + "); done'";
  test::Run run = run_shell(
      run_command(folder + "/locks", "--gpu-ids 0 --report " + quote(report) + " -- " + job));
  CHECK(run.exit_code == 0);
  INFO(run.err);
  CHECK(test::read_file(result) == "reaped\n");
  std::string text = test::read_file(report);
  INFO(text);
  CHECK(text.find("  left running pid ") != std::string::npos);
  CHECK(text.find(" (sleep), and 5 more\n") != std::string::npos);
  CHECK(run.err.find(" (sleep), and 5 more\n") != std::string::npos);
}

TEST_CASE("workers that make a session of their own and end are reaped while the job runs; "
          "nvidia-smi's own runs are left to the sampler") {
  std::string folder = test::temporary_folder();
  std::string apps = folder + "/apps", pids = folder + "/pids", report = folder + "/report";
  std::string started = folder + "/started", release = folder + "/release";
  test::write_file(apps, "");
  // Each worker leads a session and a process group of its own (as a daemon does), leaves the
  // job's chain for run (the subreaper) and ends at once. --process-interval 0.2: a run of
  // nvidia-smi that exits (the compute-apps query) every 0.2 s, for run's reaping to steal.
  Background run(
      "FAKE_NVSMI_STAMP_NOW=1 FAKE_NVSMI_APPS=" + quote(apps) + " exec " +
      run_command(folder + "/locks", "--gpu-ids 0 --process-interval 0.2 --report " +
                                         quote(report) + " -- sh -c 'echo \"" + gpu0 +
                                         ", $$, 20480 MiB, python\" >>" + apps +
                                         "; for i in $(seq 30); do (setsid sh -c \"sleep 0.2\" & "
                                         "echo $! >>" +
                                         pids + "); done; touch " + started + "; until [ -e " +
                                         release + " ]; do sleep 0.1; done'"));
  REQUIRE(test::wait_until([&] { return std::ifstream(started).good(); }));
  std::vector<std::string> workers = test::non_empty_lines_of(test::read_file(pids));
  REQUIRE(workers.size() == 30);
  // A zombie stays in /proc: gone means reaped, while the job still runs.
  bool reaped = test::wait_until([&] {
    return std::all_of(workers.begin(), workers.end(), [](const std::string &pid) {
      return test::process_stat(std::stoi(pid)).state == 0;
    });
  });
  std::string zombies;
  for (const std::string &pid : workers)
    if (test::process_stat(std::stoi(pid)).state == 'Z')
      zombies += " " + pid;
  test::write_file(release, "");
  CHECK(run.wait() == 0);
  std::string text = test::read_file(report);
  INFO(run.err() << text << "zombies:" << zombies);
  CHECK(reaped);
  CHECK(text.find("peak memory 20480 MiB of 81559 MiB") != std::string::npos);
  CHECK(run.err().find("restarting") == std::string::npos);
  CHECK(run.err().find("exited with code") == std::string::npos);
}

// Moved from the unit suite, which links the libraries only: it runs the built agent.
TEST_CASE("jobs: a claims folder of the caller's own is accepted; made by a user, it is private") {
  if (!test::can_be_nobody())
    return;
  std::string parent = test::temporary_folder();
  REQUIRE(::chmod(parent.c_str(), 01777) ==
          0); // as /tmp: without the sticky bit, refused (test_jobs.cpp)
  std::string folder = parent + "/nobodys";
  test::Run run = test::run_shell(test::as_nobody + AGENT_BIN + " run --nvidia-smi " +
                                  SCRIPTS_DIR "/fake-nvidia-smi --lock-dir " + test::quote(folder) +
                                  " --report " + test::quote(parent + "/report") + " -- true");
  INFO(run.err);
  CHECK(run.exit_code == 0);
  struct stat info {};
  REQUIRE(::stat(folder.c_str(), &info) == 0);
  CHECK(info.st_uid == 65534);
  CHECK((info.st_mode & 07777) == 0700);
  REQUIRE(::stat((folder + "/GPU-00000000-0000-0000-0000-000000000000.65534.lock").c_str(),
                 &info) == 0);
  CHECK((info.st_mode & 0777) == 0644);
  // Root's own is not nobody's: refused by root.
  CHECK_THROWS_WITH(nvsmi::GpuClaim::try_take(folder, "GPU-00000000-0000-0000-0000-000000000000"),
                    Catch::Contains("belongs to uid 65534, neither root nor you"));
}

TEST_CASE("run: a job busy on two GPUs whose peer traffic goes over PCIe is told NVLink idle, "
          "one whose links are nearly full NVLink saturated; busy on one, neither") {
  std::string folder = test::temporary_folder();
  // The job runs until run's log holds three samples with dmon's SM activity of `sm` (GPM's first
  // reading is `-`), or a minute.
  auto run_job = [&](const std::string &mode, const std::string &sm) {
    std::string report = folder + "/report-" + mode + ".json",
                log = folder + "/samples-" + mode + ".json";
    std::string job = "sh -c 'for i in $(seq 600); do [ $(cat " + log +
                      " 2>/dev/null | grep -c \"\\\"sm_active_percent\\\":" + sm +
                      ",\") -ge 3 ] && break; sleep 0.1; done'";
    // Rows stamped as printed: the report needs a span of time to measure.
    test::Run run =
        run_shell("FAKE_NVSMI_STAMP_NOW=1 FAKE_NVSMI_DMON_MODE=" + mode + " " +
                  run_command(folder + "/locks-" + mode, "--gpu 1 --gpu 5 --format json --report " +
                                                             quote(report) + " --log " +
                                                             quote(log) + " -- " + job));
    INFO(run.err);
    CHECK(run.exit_code == 0);
    return json::parse(test::read_file(report));
  };
  // The stand-in's nvlink-idle: SMs 82 % on both, NVLink 1 MiB/s each way, PCIe 1.6 and 2.2 GiB/s.
  json idle = run_job("nvlink-idle", "82");
  REQUIRE(idle["gpus"].size() == 2);
  for (const json &gpu : idle["gpus"])
    CHECK_THAT(gpu["finding"].get<std::string>(),
               Catch::StartsWith("NVLink idle over ") &&
                   Catch::Contains(" s: SMs active 82% here and on 1 other GPU(s) of the job, but "
                                   "NVLink carried 2.1 MB/s while PCIe carried"));
  // The stand-in's nvlink-saturated: SMs 82 % on both, NVLink 391,000 MiB/s each way, 86 % of the
  // 18 links' 478 GB/s that `nvlink -s` gave at the start.
  json saturated = run_job("nvlink-saturated", "82");
  REQUIRE(saturated["gpus"].size() == 2);
  for (const json &gpu : saturated["gpus"])
    CHECK_THAT(gpu["finding"].get<std::string>(),
               Catch::StartsWith("NVLink saturated over ") &&
                   Catch::Contains(" s: SMs active 82% here and on 1 other GPU(s) of the job") &&
                   Catch::Contains("410.0 GB/s each way, 86%"));
  // Its usual figures: SMs 27 % on GPU 1 and 55 % on GPU 5, so only one GPU is busy.
  json one_busy = run_job("ok", "27");
  REQUIRE(one_busy["gpus"].size() == 2);
  for (const json &gpu : one_busy["gpus"])
    CHECK(gpu["finding"].get<std::string>().find("NVLink") == std::string::npos);
}

// Issue 39, item 4: a 5 s job said "3 s covered by 4 samples": the sample the GPU was chosen by
// and one after the job's end were not the report's.
TEST_CASE(
    "run: the report covers the job's time, from a sample at its start to one after its end") {
  std::string folder = test::temporary_folder();
  std::string report = folder + "/report.json";
  test::Run run =
      run_shell("FAKE_NVSMI_STAMP_NOW=1 " + std::string(AGENT_BIN) + " run --nvidia-smi " +
                quote(fake) + " --interval 1 --lock-dir " + quote(folder + "/locks") +
                " --gpu-ids 0 --format json --report " + quote(report) + " -- sleep 4");
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  json document = json::parse(test::read_file(report));
  double seconds = document["job"]["seconds"].get<double>();
  REQUIRE(document["gpus"].size() == 1);
  const json &time = document["gpus"][0]["time"];
  INFO(time.dump() << ", job " << seconds << " s");
  CHECK(seconds >= 4);
  double covered = time["covered_s"].get<double>();
  // The first sample is the one the GPU was taken by, just before the start (held for the
  // process list up to 2 s, or an interval where samples come slower: a busy machine's stand-in
  // can take 2 s a sample), the last the first after the end (read a moment after it, it may have
  // been printed a moment before).
  double every = time["interval_s"].get<double>();
  CHECK(covered >= seconds - 0.1);
  CHECK(covered <= seconds + std::max(every, 2.0) + every + 1);
  CHECK(time["gaps"] == 0);
}

// Issue 39, item 4: run says which GPU it took before the job's first word, and its end report
// opens with the job in a screen's corner; the internals only with --details.
TEST_CASE("run: its first line on stderr names the GPU it took and the claim") {
  std::string folder = test::temporary_folder();
  test::Run run = run_shell(run_command(folder + "/locks",
                                        "--gpu 4 -- sh -c 'echo job on $CUDA_VISIBLE_DEVICES "
                                        ">&2'"));
  INFO(run.err);
  CHECK(run.exit_code == 0);
  std::vector<std::string> lines = test::lines_of(said(run.err));
  REQUIRE(lines.size() >= 2);
  CHECK(lines[0] == "nvsmi-agent run: GPU 4 (NVIDIA H100 80GB HBM3, 00000000:59:00.0) claimed "
                    "for this job; CUDA_VISIBLE_DEVICES=4");
  CHECK(lines[1] == "job on 4"); // before the job's own output

  test::Run two = run_shell(run_command(folder + "/locks", "--gpu 0,4 --uuid -- true"));
  CHECK(test::lines_of(said(two.err)).at(0) ==
        "nvsmi-agent run: GPUs 0 (NVIDIA H100 80GB HBM3, 00000000:19:00.0), 4 (NVIDIA H100 80GB "
        "HBM3, 00000000:59:00.0) claimed for this job; CUDA_VISIBLE_DEVICES=" +
            gpu0 + ",GPU-00000000-0000-0000-0000-000000000004");
}

TEST_CASE("run: the end report opens with the job in at most 15 lines; --details adds the "
          "internals") {
  std::string folder = test::temporary_folder();
  std::string job = " -- sh -c 'echo on GPU $CUDA_VISIBLE_DEVICES; sleep 2; exit 3'";
  test::Run run =
      run_shell("FAKE_NVSMI_STAMP_NOW=1 " + run_command(folder + "/locks", "--gpu 0" + job));
  test::keep_artifact("run-report.txt", run.err);
  INFO(run.err);
  CHECK(run.exit_code == 3);
  std::vector<std::string> lines = test::lines_of(said(run.err));
  REQUIRE(lines.size() >= 3);
  CHECK_THAT(lines[0], Catch::StartsWith("nvsmi-agent run: GPU 0 "));
  // The report: the job first, and short.
  CHECK(lines[1] == "Job  sh -c echo on GPU $CUDA_VISIBLE_DEVICES; sleep 2; exit 3");
  CHECK_THAT(lines[2], Catch::StartsWith("  ended        exit code 3 after "));
  CHECK(lines.size() - 1 <= 15);
  CHECK_THAT(run.err, Catch::Contains("  GPU 0        NVIDIA H100 80GB HBM3: peak memory "));
  // A job of seconds gets no batch advice: too short a window.
  CHECK_THAT(run.err, Catch::Contains("how much larger a batch might fit: advice needs 5 min of "
                                      "samples; these cover "));
  CHECK_THAT(run.err, Catch::Contains("info: idle 100% of "));
  for (const char *internal : {"rows:", "GPU-hours covered", "1 GPU: 1 ", "samples: taken",
                               "At the last sample", "utilization  mean", "of 0.00"})
    CHECK(run.err.find(internal) == std::string::npos);

  test::Run details = run_shell("FAKE_NVSMI_STAMP_NOW=1 " +
                                run_command(folder + "/locks", "--gpu 0 --details" + job));
  test::keep_artifact("run-report-details.txt", details.err);
  INFO(details.err);
  CHECK(test::lines_of(said(details.err)).at(1) == lines[1]);
  CHECK_THAT(details.err, Catch::Contains("               the job's processes were on it in "));
  CHECK_THAT(details.err, Catch::Contains("\nsamples: taken while the job ran\nrows: "));
  CHECK_THAT(details.err, Catch::Contains("\n1 GPU: "));
  CHECK_THAT(details.err, Catch::Contains("\nGPU 0  NVIDIA H100 80GB HBM3  " + gpu0));
}

TEST_CASE("run: batch advice from 5 minutes of samples of the job, not less") {
  // The stand-in stamps its rows 100 times as fast: a job of 5 s covers minutes of samples.
  std::string folder = test::temporary_folder();
  std::string apps = folder + "/apps";
  test::write_file(apps, "");
  KillAtEnd child{folder + "/child.pid"};
  std::string job = "sh -c 'sleep 300 & echo $! >" + child.pid_file + "; echo \"" + gpu0 +
                    ", $!, 20480 MiB, python\" >>" + apps +
                    "; sleep 5; kill $!; { wait $!; } 2>/dev/null || true'";
  test::Run run = run_shell(
      "FAKE_NVSMI_STAMP_NOW=1 FAKE_NVSMI_STAMP_SCALE=100 FAKE_NVSMI_STAMP_ORIGIN=$(date +%s) "
      "FAKE_NVSMI_APPS=" +
      quote(apps) + " " +
      run_command(folder + "/locks", "--gpu 0 --process-interval 0.2 -- " + job));
  test::keep_artifact("run-report-batch.txt", run.err);
  INFO(run.err);
  CHECK(run.exit_code == 0);
  CHECK_THAT(run.err, Catch::Contains("peak memory 20480 MiB of 81559 MiB (25.1%)"));
  CHECK_THAT(run.err, Catch::Contains("a batch about 3.9 times as large might fit (an estimate"));
}

} // namespace test_run
