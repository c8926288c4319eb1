// End to end: the built nvsmi-agent on fixtures and on the stand-in nvidia-smi.
#include "process_support.hpp"
#include "support.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
#include <csignal>
#include <cstring>
#include <regex>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

namespace test_cli {

using test::quote;
using test::Run;
using test::run_agent;

namespace {

std::string fixture(const std::string &name) { return quote(test::fixture_path(name)); }
std::string fake() { return quote(std::string(SCRIPTS_DIR) + "/fake-nvidia-smi"); }
// Runs the agent against the stand-in nvidia-smi in `mode`.
Run run_fake(const std::string &mode, const std::string &arguments) {
  return test::run_shell("FAKE_NVSMI_MODE=" + mode + " " + quote(AGENT_BIN) + " snapshot " +
                         "--nvidia-smi " + fake() + " " + arguments);
}

void check_failure(const Run &run, int exit_code, const std::string &message) {
  INFO("stderr: " << run.err);
  CHECK(run.exit_code == exit_code);
  CHECK(run.out.empty());
  CHECK_THAT(run.err, Catch::StartsWith("nvsmi-agent: ") && Catch::Contains(message));
  CHECK(std::count(run.err.begin(), run.err.end(), '\n') == 1);
}

const std::string legacy_8gpu_start =
    R"({"temp":[{"data":["30","30C"],"name":0},{"data":["31","31C"],"name":1},)";

} // namespace

TEST_CASE("snapshot --fixture prints the legacy document by default") {
  Run run = run_agent("snapshot --fixture " + fixture("xml/h100-8gpu-v12.xml"));
  CHECK(run.exit_code == 0);
  CHECK(run.err.empty());
  CHECK_THAT(run.out, Catch::StartsWith(legacy_8gpu_start));
  CHECK(std::count(run.out.begin(), run.out.end(), '\n') == 1);
  auto document = nlohmann::json::parse(run.out);
  CHECK(document["usage"][3]["data"][1] == "81000MiB/81559MiB");
  CHECK(document["usedPercent"][3]["data"][0] == "99.31");
}

TEST_CASE("the CSV recordings of the same GPUs give the same document as the XML") {
  std::string expected = run_agent("snapshot --fixture " + fixture("xml/h100-8gpu-v12.xml")).out;
  for (const char *name :
       {"csv/h100-8gpu.csv", "csv/h100-8gpu-nounits.csv", "csv/h100-8gpu-noheader-nounits.csv"}) {
    INFO(name);
    Run run = run_agent(std::string("snapshot --fixture ") + fixture(name));
    CHECK(run.exit_code == 0);
    CHECK(run.out == expected);
  }
}

TEST_CASE("--format json and csv") {
  Run json = run_agent("snapshot --format json --fixture " + fixture("xml/a100-mig-v12.xml"));
  REQUIRE(json.exit_code == 0);
  auto document = nlohmann::json::parse(json.out);
  CHECK(document["schema"] == "nvsmi-agent.snapshot/1");
  CHECK(document["source"] == "xml");
  CHECK(document["gpus"][0]["utilization_gpu_percent"].is_null());
  CHECK(document["gpus"][0]["mig_devices"].size() == 2);
  // The timestamp carries the offset of the zone the agent runs in.
  Run utc = test::run_shell("TZ=UTC " + quote(AGENT_BIN) + " snapshot --format json --fixture " +
                            fixture("xml/a100-mig-v12.xml"));
  CHECK(nlohmann::json::parse(utc.out)["timestamp"] == "2023-11-15T09:12:44+00:00");
  Run berlin =
      test::run_shell("TZ=Europe/Berlin " + quote(AGENT_BIN) +
                      " snapshot --format json --fixture " + fixture("xml/a100-mig-v12.xml"));
  CHECK(nlohmann::json::parse(berlin.out)["timestamp"] == "2023-11-15T09:12:44+01:00");

  Run csv = run_agent("snapshot --format csv --fixture " + fixture("csv/rtx4080-windows-crlf.csv"));
  CHECK(csv.exit_code == 0);
  CHECK_THAT(csv.out, Catch::StartsWith("timestamp,index,uuid,name,pstate,temperature.gpu,"));
  CHECK_THAT(csv.out, Catch::Contains(",NVIDIA GeForce RTX 4080 SUPER,P2,47,23,11,16376,"));
  CHECK(csv.out.find('\r') == std::string::npos);
}

TEST_CASE("--fixture - reads standard input") {
  Run run = test::run_shell("cat " + fixture("xml/gtx1080ti-2gpu-v10-nodoctype.xml") + " | " +
                            quote(AGENT_BIN) + " snapshot --fixture -");
  CHECK(run.exit_code == 0);
  CHECK_THAT(run.out, Catch::StartsWith(R"({"temp":[{"data":["51","51C"],"name":0},)"));
}

TEST_CASE("--output replaces the file whole, and leaves it alone on failure") {
  std::string folder = test::temporary_folder();
  std::string target = folder + "/gpus.json";
  Run run = run_agent("snapshot --fixture " + fixture("xml/h100-8gpu-v12.xml") + " --output " +
                      quote(target));
  CHECK(run.exit_code == 0);
  CHECK(run.out.empty());
  std::string written = test::read_file(target);
  CHECK_THAT(written, Catch::StartsWith(legacy_8gpu_start));

  Run failed = run_agent("snapshot --fixture " + fixture("broken/truncated.xml") + " --output " +
                         quote(target));
  check_failure(failed, 6, "not well-formed XML");
  CHECK(test::read_file(target) == written);

  Run unwritable = run_agent("snapshot --fixture " + fixture("xml/h100-8gpu-v12.xml") +
                             " --output " + quote(folder + "/no/such/folder/gpus.json"));
  check_failure(unwritable, 7, "no/such/folder");
}

TEST_CASE("broken fixtures fail with one line and a documented code") {
  check_failure(run_agent("snapshot --fixture " + fixture("broken/empty.xml")), 6, "empty output");
  check_failure(run_agent("snapshot --fixture " + fixture("broken/truncated.xml")), 6,
                "truncated.xml: not well-formed XML");
  check_failure(run_agent("snapshot --fixture " + fixture("broken/garbage.bin")), 6, "garbage.bin");
  check_failure(run_agent("snapshot --fixture " + fixture("broken/driver-failure.txt")), 6,
                "driver-failure.txt");
  check_failure(run_agent("snapshot --fixture " + fixture("broken/bad-unit.csv")), 6,
                "memory.total");
  check_failure(run_agent("snapshot --fixture " + fixture("broken/ragged.csv")), 6, "columns");
  check_failure(run_agent("snapshot --fixture /nonexistent/recording.xml"), 7,
                "/nonexistent/recording.xml");
}

TEST_CASE("live: runs nvidia-smi -q -x, or --query-gpu for --source csv") {
  std::string folder = test::temporary_folder();
  std::string args_log = folder + "/args";
  Run xml = test::run_shell("FAKE_NVSMI_ARGS=" + quote(args_log) + " " + quote(AGENT_BIN) +
                            " snapshot --nvidia-smi " + fake());
  CHECK(xml.exit_code == 0);
  CHECK_THAT(xml.out, Catch::StartsWith(legacy_8gpu_start));
  Run csv = test::run_shell("FAKE_NVSMI_ARGS=" + quote(args_log) + " NVIDIA_SMI=" + fake() + " " +
                            quote(AGENT_BIN) + " snapshot --source csv --format json");
  CHECK(csv.exit_code == 0);
  CHECK(nlohmann::json::parse(csv.out)["source"] == "csv");
  std::string calls = test::read_file(args_log);
  CHECK_THAT(calls, Catch::StartsWith("-q -x\n--query-gpu=timestamp,driver_version,count,index,"));
  CHECK_THAT(calls, Catch::EndsWith(" --format=csv,nounits\n"));
}

TEST_CASE("live: --nvidia-smi takes a command with arguments, run without a shell") {
  Run run = run_agent("snapshot --nvidia-smi " +
                      quote("bash " + std::string(SCRIPTS_DIR) + "/fake-nvidia-smi"));
  CHECK(run.exit_code == 0);
  CHECK_THAT(run.out, Catch::StartsWith(legacy_8gpu_start));
}

TEST_CASE("live: nvidia-smi's own failures are reported with its message") {
  check_failure(run_fake("exit9", ""), 4,
                "exited with code 9: NVIDIA-SMI has failed because it couldn't communicate with "
                "the NVIDIA driver");
  check_failure(run_fake("exit6", ""), 4, "exited with code 6: No devices were found");
  check_failure(run_fake("garbage", ""), 6, "nvidia-smi output");
}

TEST_CASE("live: under a parent that ignores SIGCHLD, nvidia-smi's failure is still its exit "
          "code") {
  // SIG_IGN for SIGCHLD passes through exec (a daemon's or a job launcher's), and with it the
  // kernel reaps every child itself: wait4 found none, and the failed nvidia-smi read as exit 0,
  // its empty output then blamed as unreadable.
  const std::string ignoring = "import os, signal, sys; signal.signal(signal.SIGCHLD, "
                               "signal.SIG_IGN); os.execv(sys.argv[1], sys.argv[1:])";
  check_failure(test::run_shell("FAKE_NVSMI_MODE=exit9 /usr/bin/python3 -c " + quote(ignoring) +
                                " " + quote(AGENT_BIN) + " snapshot --nvidia-smi " + fake()),
                4, "exited with code 9: NVIDIA-SMI has failed");
}

TEST_CASE("live: a hung nvidia-smi is killed at --timeout") {
  auto start = std::chrono::steady_clock::now();
  check_failure(run_fake("hang", "--timeout 1"), 5, "no answer within 1 s");
  CHECK(std::chrono::steady_clock::now() - start < test::promptly);
  // Its sleeping child went with it (once the kernel has taken the killed one down).
  CHECK(test::wait_until([] { return !test::running_here("sleep 3600"); }));
}

TEST_CASE("live: a grandchild holding stdout open does not hold the agent") {
  auto start = std::chrono::steady_clock::now();
  Run run = run_fake("grandchild", "--timeout 30");
  CHECK(run.exit_code == 0);
  CHECK_THAT(run.out, Catch::StartsWith(legacy_8gpu_start));
  CHECK(std::chrono::steady_clock::now() - start < test::promptly); // not at --timeout 30
  CHECK(test::wait_until([] { return !test::running_here("sleep 3600"); }));
}

TEST_CASE("live: a slow nvidia-smi inside its deadline is fine") {
  Run run = run_fake("slow", "--timeout 60"); // it takes 2 s
  CHECK(run.exit_code == 0);
}

TEST_CASE("live: nvidia-smi missing or not executable") {
  check_failure(test::run_shell("PATH=/nonexistent " + quote(AGENT_BIN) + " snapshot"), 3,
                "nvidia-smi: not found on PATH");
  check_failure(run_agent("snapshot --nvidia-smi /nonexistent/nvidia-smi"), 3,
                "/nonexistent/nvidia-smi");
  std::string folder = test::temporary_folder();
  test::write_file(folder + "/nvidia-smi", "#!/bin/sh\n");
  check_failure(run_agent("snapshot --nvidia-smi " + quote(folder + "/nvidia-smi")), 3,
                "Permission denied");
}

TEST_CASE("usage errors exit 2; --help and --version exit 0") {
  CHECK(run_agent("").exit_code == 2);
  CHECK(run_agent("snapshot --format yaml").exit_code == 2);
  CHECK(run_agent("snapshot --source json").exit_code == 2);
  CHECK(run_agent("snapshot --timeout -1").exit_code == 2);
  CHECK(run_agent("snapshot --fixture a.xml --nvidia-smi b").exit_code == 2);
  CHECK(run_agent("snapshot --nvidia-smi \"'unclosed\"").exit_code == 2);
  Run help = run_agent("snapshot --help");
  CHECK(help.exit_code == 0);
  CHECK_THAT(help.out, Catch::Contains("--fixture"));
  CHECK(run_agent("--version").exit_code == 0);
}

TEST_CASE("a misspelt command is named, with the one meant") {
  check_failure(run_agent("snap"), 2,
                "unknown command 'snap'; did you mean 'snapshot'? The commands: snapshot, watch, ");
  check_failure(run_agent("wach --count 1"), 2, "did you mean 'watch'?");
  Run far = run_agent("frobnicate");
  check_failure(far, 2, "unknown command 'frobnicate'; the commands: snapshot, watch, ");
  check_failure(run_agent(""), 2, "a command is required: snapshot, watch,");
}

TEST_CASE("a misspelt option is named, with the close option of that command") {
  check_failure(run_agent("snapshot --formt json"), 2,
                "snapshot: unknown option '--formt'; did you mean '--format'? (see nvsmi-agent "
                "snapshot --help)");
  check_failure(run_agent("pick 1 --fixtur=a.xml"), 2,
                "pick: unknown option '--fixtur'; did you mean '--fixture'?");
  // watch has --count, snapshot has not: no suggestion from another command's options.
  Run other = run_agent("snapshot --cont 3");
  check_failure(other, 2, "snapshot: unknown option '--cont'; snapshot's options: --source, ");
  CHECK_THAT(other.err, !Catch::Contains("did you mean"));
  check_failure(run_agent("watch --zzzzzz"), 2, "unknown option '--zzzzzz'; watch's options: ");
}

TEST_CASE("a whole-number option that is not one says so in words, under its name") {
  check_failure(run_agent("pick two"), 2,
                "nvsmi-agent: N: 'two' is not a whole number from 1 to 4096 (see nvsmi-agent pick "
                "--help)");
  check_failure(run_agent("pick 1.5"), 2, "N: '1.5' is not a whole number from 1 to 4096");
  check_failure(run_agent("pick 5000"), 2, "N: '5000' is not a whole number from 1 to 4096");
  check_failure(run_agent("serve --max-connections 0"), 2,
                "--max-connections: '0' is not a whole number from 1 to 100,000");
}

TEST_CASE("--help shows a plain word for each value and the default and range in words") {
  for (const char *command :
       {"snapshot", "watch", "report", "serve", "top", "pick", "run", "check", "fleet"}) {
    INFO(command);
    Run help = run_agent(std::string(command) + " --help");
    CHECK(help.exit_code == 0);
    for (const char *noise : {"POSITIVE", "Excludes:", " in ["})
      CHECK_THAT(help.out, !Catch::Contains(noise));
    // A type word anywhere, as a whole word: each value names its own where it is declared.
    // Searched for, not matched over the whole text: libstdc++'s regex recurses once a character
    // for a leading [\s\S]*, which overflowed the stack on serve's help under the sanitizers.
    CHECK_FALSE(
        std::regex_search(help.out, std::regex("\\b(FLOAT|INT|UINT|TEXT|NUMBER|VALUE)\\b")));
  }
  // Durations say SECONDS whatever their help text begins with.
  CHECK_THAT(run_agent("watch --help").out, Catch::Contains("--stall-timeout SECONDS "));
  CHECK_THAT(run_agent("pick --help").out, Catch::Contains("--wait SECONDS "));
  Run check = run_agent("check --help");
  CHECK_THAT(check.out, Catch::Contains("--temperature-critical CELSIUS|slowdown|none") &&
                            Catch::Contains("--stale-warning SECONDS|none") &&
                            Catch::Contains("--memory-warning PERCENT|none"));
  Run watch = run_agent("watch --help");
  CHECK(std::regex_search(watch.out,
                          std::regex("--interval SECONDS +Seconds between samples \\(default 1; "
                                     "0\\.01 to 86,400 seconds\\)\n")));
  CHECK_THAT(watch.out, Catch::Contains("--source xml|csv") && Catch::Contains("--fixture PATH"));
  CHECK_THAT(run_agent("pick --help").out, Catch::Contains("(default 1; 1 to 4096)"));
}

TEST_CASE("a missing nvidia-smi is said once, with the ways on") {
  for (const char *command : {"snapshot", "pick 1", "watch --count 1"}) {
    INFO(command);
    Run run = test::run_shell("PATH=/nonexistent " + quote(AGENT_BIN) + " " + std::string(command));
    check_failure(run, 3,
                  "nvsmi-agent: nvidia-smi: not found on PATH; give its path with --nvidia-smi "
                  "PATH or NVIDIA_SMI, or read a recording with --fixture FILE");
  }
}

TEST_CASE("an nvidia-smi that prints nothing on stdout is shown by what it said on stderr") {
  std::string folder = test::temporary_folder();
  std::string smi = folder + "/nvidia-smi";
  test::write_file(smi, "#!/bin/sh\necho \"NVIDIA-SMI couldn't find libnvidia-ml.so library in "
                        "your system.\" >&2\n");
  test::run_shell("chmod +x " + quote(smi));
  Run run = run_agent("snapshot --nvidia-smi " + quote(smi));
  CHECK(run.exit_code == 6);
  CHECK(run.out.empty());
  CHECK(run.err == "nvsmi-agent: " + smi +
                       " printed nothing on stdout; on stderr: NVIDIA-SMI couldn't find "
                       "libnvidia-ml.so library in your system.\n");
  // Silent on both: the readers' word for it, as before.
  test::write_file(smi, "#!/bin/sh\n");
  CHECK(run_agent("snapshot --nvidia-smi " + quote(smi)).err ==
        "nvsmi-agent: nvidia-smi output: empty output\n");
}

TEST_CASE("--version names the CMake project version, and the commit when built from git") {
  // Written at configure time: the project version, then the commit (empty outside a checkout).
  std::string info = test::read_file(VERSION_FILE);
  std::size_t end = info.find('\n');
  REQUIRE(end != std::string::npos);
  std::string version = info.substr(0, end);
  std::string commit = info.substr(end + 1, info.find('\n', end + 1) - end - 1);
  REQUIRE_THAT(version, Catch::Matches("[0-9]+\\.[0-9]+\\.[0-9]+"));

  Run run = run_agent("--version");
  CHECK(run.exit_code == 0);
  CHECK(run.err.empty());
  if (commit.empty()) {
    CHECK(run.out == "nvsmi-agent " + version + "\n");
  } else {
    CHECK(run.out == "nvsmi-agent " + version + " (git " + commit + ")\n");
    // The commit is one of this checkout's, though HEAD may have moved on since the build.
    std::string source = quote(std::string(SCRIPTS_DIR) + "/..");
    CHECK(test::run_shell("git -C " + source + " cat-file -e " + commit + "^{commit}").exit_code ==
          0);
  }
}

TEST_CASE("scripts/record-fixtures masks UUIDs and serials, and its recordings read back") {
  std::string folder = test::temporary_folder();
  // A recording with identifying values, as a real machine would print them.
  std::string xml = test::read_file(test::fixture_path("xml/a100-mig-v12.xml"));
  auto replace = [&](const std::string &from, const std::string &to) {
    std::size_t at = xml.find(from);
    REQUIRE(at != std::string::npos);
    xml.replace(at, from.size(), to);
  };
  replace("GPU-00000000-0000-0000-0000-0000000000a1", "GPU-5a3c1f20-9b7e-4d2a-8c11-7f0e2b9d4c63");
  replace("<serial>0000000000000</serial>", "<serial>1650522003820</serial>");
  test::write_file(folder + "/identifying.xml", xml);

  std::string out = folder + "/recorded";
  Run record = test::run_shell(
      "NVIDIA_SMI=" + fake() + " FAKE_NVSMI_XML=" + quote(folder + "/identifying.xml") + " " +
      quote(std::string(SCRIPTS_DIR) + "/record-fixtures") + " " + quote(out));
  INFO(record.err);
  REQUIRE(record.exit_code == 0);
  std::string recorded = test::read_file(out + "/query.xml");
  CHECK(recorded.find("5a3c1f20") == std::string::npos);
  CHECK(recorded.find("1650522003820") == std::string::npos);
  CHECK_THAT(recorded, Catch::Contains("GPU-00000000-0000-0000-0000-000000000000"));
  for (const char *file : {"/query.xml", "/query-gpu.csv", "/query-gpu-nounits.csv",
                           "/query-gpu-noheader-nounits.csv"}) {
    INFO(file);
    CHECK(run_agent("snapshot --fixture " + quote(out + file)).exit_code == 0);
  }
}

TEST_CASE("--output on a symbolic link replaces its target, keeping the target's mode and owner") {
  std::string folder = test::temporary_folder();
  REQUIRE(mkdir((folder + "/real").c_str(), 0755) == 0);
  std::string target = folder + "/real/gpus.json", link = folder + "/gpus.json";
  test::write_file(target, "old\n");
  REQUIRE(chmod(target.c_str(), 0600) == 0);
  REQUIRE(symlink("real/gpus.json", link.c_str()) == 0);
  // Root may keep a file's owner; anyone else owns what it writes, so only root can show it.
  bool root = geteuid() == 0;
  if (root)
    REQUIRE(chown(target.c_str(), 65534, 65534) == 0);

  Run run = run_agent("snapshot --fixture " + fixture("xml/h100-8gpu-v12.xml") + " --output " +
                      quote(link));
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  struct stat info {};
  REQUIRE(lstat(link.c_str(), &info) == 0);
  CHECK(S_ISLNK(info.st_mode)); // still a link, to the file that was written
  CHECK_THAT(test::read_file(target), Catch::StartsWith(legacy_8gpu_start));
  REQUIRE(stat(target.c_str(), &info) == 0);
  CHECK((info.st_mode & 07777) == 0600);
  if (root) {
    CHECK(info.st_uid == 65534);
    CHECK(info.st_gid == 65534);
  }
  // The temporary was made beside the target and is gone.
  CHECK(test::run_shell("ls -A " + quote(folder + "/real")).out == "gpus.json\n");

  // A new file: 0644 less the umask.
  std::string fresh = folder + "/fresh.json";
  REQUIRE(test::run_shell("umask 077; " + quote(AGENT_BIN) + " snapshot --fixture " +
                          fixture("xml/h100-8gpu-v12.xml") + " --output " + quote(fresh))
              .exit_code == 0);
  REQUIRE(stat(fresh.c_str(), &info) == 0);
  CHECK((info.st_mode & 07777) == 0600);
  REQUIRE(run_agent("report --output " + quote(fresh) + " " + fixture("logs/constant-100w.csv"))
              .exit_code == 0);
  REQUIRE(stat(fresh.c_str(), &info) == 0);
  CHECK((info.st_mode & 07777) == 0600); // kept on replacing
}

TEST_CASE("--output refuses what is not a regular file, and touches nothing") {
  std::string folder = test::temporary_folder();
  std::string fifo = folder + "/fifo", dangling = folder + "/dangling";
  REQUIRE(mkfifo(fifo.c_str(), 0644) == 0);
  REQUIRE(symlink("nowhere/gpus.json", dangling.c_str()) == 0);
  std::string through = folder + "/to-fifo";
  REQUIRE(symlink("fifo", through.c_str()) == 0);
  std::vector<std::string> refused = {fifo, through, folder};
  // A device node, as `--output /dev/null` run by root would meet it.
  std::string device = folder + "/null";
  if (mknod(device.c_str(), S_IFCHR | 0666, makedev(1, 3)) == 0)
    refused.push_back(device);
  for (const std::string &path : refused) {
    INFO(path);
    check_failure(run_agent("snapshot --fixture " + fixture("xml/h100-8gpu-v12.xml") +
                            " --output " + quote(path)),
                  7, "not a regular file; refusing to replace it");
    check_failure(
        run_agent("report --output " + quote(path) + " " + fixture("logs/constant-100w.csv")), 7,
        "not a regular file");
  }
  struct stat info {};
  REQUIRE(stat(fifo.c_str(), &info) == 0);
  CHECK(S_ISFIFO(info.st_mode));
  if (refused.size() == 4) {
    REQUIRE(stat(device.c_str(), &info) == 0);
    CHECK(S_ISCHR(info.st_mode));
  }
  // Like cp, no writing through a link to nothing: the link stays, and nothing is created.
  check_failure(run_agent("snapshot --fixture " + fixture("xml/h100-8gpu-v12.xml") + " --output " +
                          quote(dangling)),
                7, "dangling symbolic link");
  REQUIRE(lstat(dangling.c_str(), &info) == 0);
  CHECK(S_ISLNK(info.st_mode));
  // Refused before nvidia-smi is run: a hung one does not hold the answer up.
  Run early = run_fake("hang", "--timeout 30 --output " + quote(fifo));
  CHECK(early.exit_code == 7);
  CHECK(test::run_shell("ls -A " + quote(folder)).out ==
        "dangling\nfifo\n" + std::string(refused.size() == 4 ? "null\n" : "") + "to-fifo\n");
}

TEST_CASE("live: any stop signal during the run takes nvidia-smi's process group down, 128+N") {
  for (int signal : {SIGHUP, SIGUSR1, SIGQUIT, SIGTERM, SIGINT}) {
    INFO("signal " << signal);
    std::string marker = test::unique_marker();
    test::Background agent("FAKE_NVSMI_MODE=hang FAKE_NVSMI_MARKER=" + marker + " " +
                           quote(AGENT_BIN) + " snapshot --timeout 120 --nvidia-smi " + fake());
    REQUIRE(test::wait_until([&] { return !test::processes_named(marker).empty(); }));
    ::kill(agent.pid(), signal);
    CHECK(agent.wait() == 128 + signal);
    CHECK_THAT(agent.err(), Catch::Contains("interrupted by " + std::string(strsignal(signal)) +
                                            "; killed it and its process group"));
    CHECK(agent.out().empty());
    CHECK(test::wait_until([&] { return test::processes_named(marker).empty(); }));
  }
}

TEST_CASE("live: SIGPIPE is ignored; a reader that left is no error") {
  std::string marker = test::unique_marker();
  test::Background agent("FAKE_NVSMI_MODE=hang FAKE_NVSMI_MARKER=" + marker + " " +
                         quote(AGENT_BIN) + " snapshot --timeout 120 --nvidia-smi " + fake());
  REQUIRE(test::wait_until([&] { return !test::processes_named(marker).empty(); }));
  ::kill(agent.pid(), SIGPIPE);
  ::kill(agent.pid(), SIGTERM); // it was still there to take this one
  CHECK(agent.wait() == 128 + SIGTERM);
  CHECK(test::wait_until([&] { return test::processes_named(marker).empty(); }));

  // The reader closes its end before the agent writes: EPIPE, which is the reader's choice.
  std::string folder = test::temporary_folder();
  std::string closed = quote(folder + "/closed");
  Run run = test::run_shell("(while [ ! -e " + closed + " ]; do sleep 0.05; done; cat " +
                            fixture("xml/h100-8gpu-v12.xml") + ") | { " + quote(AGENT_BIN) +
                            " snapshot --fixture -; echo $? >" + quote(folder + "/code") +
                            "; } | { exec 0<&-; : >" + closed + "; sleep 1; }");
  CHECK(test::read_file(folder + "/code") == "0\n");
  CHECK(run.err.empty());
}

TEST_CASE("live: SIGKILL of the agent still takes nvidia-smi down (parent-death signal)") {
  std::string folder = test::temporary_folder();
  std::string pid_file = folder + "/nvidia-smi.pid";
  test::Background agent("FAKE_NVSMI_MODE=hang FAKE_NVSMI_PID_FILE=" + quote(pid_file) + " " +
                         quote(AGENT_BIN) + " snapshot --timeout 120 --nvidia-smi " + fake());
  int child = 0;
  REQUIRE(test::wait_until([&] { return (child = test::pid_in_file(pid_file)) > 0; }));
  REQUIRE_FALSE(test::process_ended(child));
  ::kill(agent.pid(), SIGKILL);
  CHECK(agent.wait() == 128 + SIGKILL);
  CHECK(test::wait_until([&] { return test::process_ended(child); }));
  // What nvidia-smi started is out of the kernel's reach here (systemd's cgroup takes it).
  ::kill(-child, SIGKILL);
}

TEST_CASE("--output past the file size limit is an error, and the old file stays whole") {
  if (!test::installed("prlimit")) {
    WARN("prlimit not installed: skipped");
    return;
  }
  std::string folder = test::temporary_folder();
  std::string out = folder + "/gpus.json";
  test::write_file(out, "the old snapshot\n");
  // The JSON of 8 GPUs is about 9 KB: past a 4 KB limit the write fails with EFBIG, which must be
  // an error like a full disk rather than SIGXFSZ ending the agent with its temporary file left.
  Run run = test::run_shell("prlimit --fsize=4096 " + quote(AGENT_BIN) + " snapshot --fixture " +
                            quote(test::fixture_path("xml/h100-8gpu-v12.xml")) +
                            " --format json --output " + quote(out));
  INFO(run.err);
  CHECK(run.exit_code == 7);
  CHECK_THAT(run.err, Catch::Contains("gpus.json"));
  CHECK(test::read_file(out) == "the old snapshot\n");
  CHECK(test::run_shell("ls -A " + quote(folder)).out == "gpus.json\n");
}

TEST_CASE("every floating-point option refuses nan and inf: usage exit 2, one line, promptly") {
  const std::string xml = fixture("xml/h100-8gpu-v12.xml");
  const std::string csv_log = fixture("csv/h100-8gpu.csv");
  struct Case {
    std::string before, option, after;
  };
  // A command line each that runs (or, unchecked, ran: nan passed every range, or hung) but for
  // the option; `timeout` makes a hang a failure instead of a stuck test.
  const std::vector<Case> cases = {
      {"snapshot --fixture " + xml, "--timeout", ""},
      {"watch --count 1 --fixture " + xml, "--interval", ""},
      {"watch --count 1 --fixture " + xml, "--stall-timeout", ""},
      {"watch --count 1 --fixture " + xml, "--process-interval", ""},
      {"serve --listen 127.0.0.1:0 --fixture " + xml, "--history", ""},
      {"serve --listen 127.0.0.1:0 --fixture " + xml, "--request-timeout", ""},
      {"serve --listen 127.0.0.1:0 --fixture " + xml, "--interval", ""},
      {"top --fixture " + xml, "--interval", ""},
      {"pick --fixture " + xml + " --wait 1", "--interval", ""},
      {"pick --fixture " + xml, "--wait", ""},
      {"pick --fixture " + xml, "--max-utilization", ""},
      {"pick --fixture " + xml, "--timeout", ""},
      {"run --fixture " + xml, "--interval", "-- true"},
      {"run --fixture " + xml, "--wait", "-- true"},
      {"run --fixture " + xml, "--max-utilization", "-- true"},
      {"run --fixture " + xml, "--stall-timeout", "-- true"},
      {"report " + csv_log, "--interval", ""},
  };
  for (const Case &c : cases)
    for (const std::string value : {"nan", "inf", "-inf", "1e999"}) {
      std::string line = c.before + " " + c.option + " " + value + " " + c.after;
      INFO(line);
      Run run = test::run_shell("timeout 20 " + quote(AGENT_BIN) + " " + line);
      INFO("stdout: " << run.out);
      check_failure(run, 2, c.option + ": '" + value + "' is not a number from ");
    }
}

namespace {

// A program of the caller's, named nvidia-smi, that leaves `ran` behind in its folder when run:
// under sudo it must never be what runs.
struct CallersProgram {
  std::string folder = test::temporary_folder();
  std::string path = folder + "/nvidia-smi", marker = folder + "/ran";
  CallersProgram() {
    test::write_file(path, "#!/bin/sh\ntouch " + quote(marker) + "\nexec " + fake() + " \"$@\"\n");
    REQUIRE(test::run_shell("chmod 755 " + quote(path)).exit_code == 0);
  }
  bool ran() const { return test::run_shell("test -e " + quote(marker)).exit_code == 0; }
};

// How the tests run the agent with more rights than the caller: as sudo leaves it (SUDO_UID), and,
// where the tests run as root, as a setuid copy would (real user nobody, effective user root).
std::vector<std::pair<std::string, std::string>> privileged_prefixes() {
  std::vector<std::pair<std::string, std::string>> prefixes = {
      {"SUDO_UID=1000 ", "refused under sudo (SUDO_UID is set)"},
      {"DOAS_USER=alice ", "refused under doas (DOAS_USER is set)"},
      {"PKEXEC_UID=1000 ", "refused under pkexec (PKEXEC_UID is set)"}};
  if (::geteuid() == 0)
    prefixes.push_back({"setpriv --ruid 65534 --euid 0 -- ",
                        "refused as setuid (effective user 0, real user 65534)"});
  else
    WARN("not root: the setuid case is not tested");
  return prefixes;
}

// nvidia-smi is in none of the system folders on a machine without a GPU.
bool trusted_nvidia_smi_absent() {
  return test::run_shell("for d in /usr/local/sbin /usr/local/bin /usr/sbin /usr/bin /sbin /bin; "
                         "do test -e $d/nvidia-smi && exit 1; done; exit 0")
             .exit_code == 0;
}

} // namespace

TEST_CASE("under sudo or setuid, every option naming a program or a file is refused: exit 2") {
  CallersProgram program;
  const std::string xml = fixture("xml/h100-8gpu-v12.xml");
  const std::string out = program.folder + "/written";
  const std::string smi = quote(program.path);
  struct Case {
    std::string line, option;
  };
  const std::vector<Case> cases = {
      {"snapshot --nvidia-smi " + smi, "--nvidia-smi"},
      {"snapshot --fixture " + xml, "--fixture"},
      {"snapshot --kernel-log " + xml, "--kernel-log"},
      {"snapshot --kernel-log none --output " + quote(out), "--output"},
      {"snapshot --kernel-log none --lock " + quote(out), "--lock"},
      {"watch --count 1 --nvidia-smi " + smi, "--nvidia-smi"},
      {"watch --count 1 --fixture " + xml, "--fixture"},
      {"watch --count 1 --kernel-log " + xml, "--kernel-log"},
      {"watch --count 1 --csv-log " + quote(out), "--csv-log"},
      {"watch --count 1 --json-log " + quote(out), "--json-log"},
      {"serve --listen 127.0.0.1:0 --nvidia-smi " + smi, "--nvidia-smi"},
      {"serve --listen 127.0.0.1:0 --fixture " + xml, "--fixture"},
      {"serve --listen 127.0.0.1:0 --kernel-log " + xml, "--kernel-log"},
      {"serve --listen 127.0.0.1:0 --web.config.file " + xml, "--web.config.file"},
      {"top --nvidia-smi " + smi, "--nvidia-smi"},
      {"top --fixture " + xml, "--fixture"},
      {"pick --nvidia-smi " + smi, "--nvidia-smi"},
      {"pick --fixture " + xml, "--fixture"},
      {"pick --lock-dir " + quote(out), "--lock-dir"},
      {"run --nvidia-smi " + smi + " -- touch " + quote(out), "--nvidia-smi"},
      {"run --fixture " + xml + " -- touch " + quote(out), "--fixture"},
      {"run --lock-dir " + quote(out) + " -- true", "--lock-dir"},
      {"run --report " + quote(out) + " -- true", "--report"},
      {"run --log " + quote(out) + " -- true", "--log"},
      {"report " + fixture("csv/h100-8gpu.csv"), "files"},
  };
  for (const auto &[prefix, refusal] : privileged_prefixes())
    for (const Case &c : cases) {
      INFO(prefix << c.line);
      Run run = test::run_shell(prefix + "timeout 20 " + quote(AGENT_BIN) + " " + c.line);
      check_failure(run, 2, c.option + ": " + refusal);
      CHECK_THAT(run.err, Catch::Contains("give sudo the fixed command line"));
      CHECK_FALSE(program.ran());
      CHECK(test::run_shell("test -e " + quote(out)).exit_code != 0);
    }
}

TEST_CASE("under sudo or setuid, NVSMI_HOST_ROOT is refused: it names the /proc whose "
          "nv-hostengine, disks and network the agent reads") {
  // A caller's tree with an nv-hostengine in it would switch GPM off, and its diskstats would be
  // read with root's rights: refused in one line before anything runs.
  CallersProgram program;
  const std::string agent = quote(AGENT_BIN);
  for (const auto &[prefix, refusal] : privileged_prefixes())
    for (const char *command : {"watch --count 1", "serve --listen 127.0.0.1:0", "run -- true"}) {
      INFO(prefix << command);
      std::string why = refusal.substr(std::string("refused ").size());
      Run run = test::run_shell("NVSMI_HOST_ROOT=" + quote(program.folder) + " " + prefix +
                                "timeout 20 " + agent + " " + command + " < /dev/null");
      check_failure(run, 2, "NVSMI_HOST_ROOT is set, and it is refused " + why);
      CHECK_FALSE(program.ran());
    }
}

TEST_CASE("under sudo or setuid, nvidia-smi is never the caller's: NVIDIA_SMI refused, PATH not "
          "used; stdin and none still work") {
  CallersProgram program;
  const std::string agent = quote(AGENT_BIN);
  // As the caller itself, both choose the program (the control: the stand-in does run).
  CHECK(
      test::run_shell("NVIDIA_SMI=" + quote(program.path) + " " + agent + " snapshot").exit_code ==
      0);
  REQUIRE(program.ran());
  test::run_shell("rm " + quote(program.marker));
  CHECK(test::run_shell("PATH=" + quote(program.folder) + ":$PATH " + agent + " snapshot")
            .exit_code == 0);
  REQUIRE(program.ran());
  test::run_shell("rm " + quote(program.marker));

  for (const auto &[prefix, refusal] : privileged_prefixes()) {
    INFO(prefix);
    std::string why = refusal.substr(std::string("refused ").size());
    Run variable =
        test::run_shell("NVIDIA_SMI=" + quote(program.path) + " " + prefix + agent + " snapshot");
    check_failure(variable, 2, "NVIDIA_SMI is set, and it is refused " + why);
    CHECK_FALSE(program.ran());

    Run path = test::run_shell("PATH=" + quote(program.folder) + ":$PATH " + prefix + agent +
                               " snapshot --kernel-log none");
    CHECK_FALSE(program.ran());
    if (trusted_nvidia_smi_absent())
      check_failure(path, 3,
                    "nvidia-smi: not found in /usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:"
                    "/sbin:/bin (the caller's PATH is not used " +
                        why + ")");

    // What names nothing of the caller's: a recording on stdin, the kernel log left out or the
    // default one.
    Run stdin_fixture = test::run_shell(prefix + agent +
                                        " snapshot --format json --fixture - "
                                        "--kernel-log none < " +
                                        fixture("xml/h100-8gpu-v12.xml"));
    INFO(stdin_fixture.err);
    CHECK(stdin_fixture.exit_code == 0);
    CHECK_THAT(stdin_fixture.out, Catch::Contains("GPU-"));
    Run kmsg = test::run_shell(prefix + agent + " snapshot --fixture - --kernel-log /dev/kmsg < " +
                               fixture("xml/h100-8gpu-v12.xml"));
    INFO(kmsg.err);
    CHECK(kmsg.exit_code == 0);
  }
}

} // namespace test_cli
