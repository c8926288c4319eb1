// Who uses each GPU, end to end through the built agent and the stand-in nvidia-smi: compute-apps
// and pmon pointing at real processes this test starts (as root and as nobody), enriched from
// /proc, in `snapshot`, `watch` and `serve`.
#include "process_support.hpp"
#include "serve_support.hpp"
#include "support.hpp"
#include "tmux_session.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <sstream>
#include <unistd.h>

namespace test_processes {

using test::Background;
using test::quote;
using test::run_agent;
using test::run_shell;
using json = nlohmann::json;

namespace {

const std::string fake = quote(SCRIPTS_DIR "/fake-nvidia-smi");
const std::string gpu0 = "GPU-00000000-0000-0000-0000-000000000000";
const std::string gpu1 = "GPU-00000000-0000-0000-0000-000000000001";

// A pid no process has: one this test started and reaped.
int vanished_pid() {
  test::Run run = run_shell("sh -c 'echo $$'");
  return std::stoi(run.out);
}

// The processes the stand-in reports: a `sleep` as root on GPU 0, a shell as nobody on GPU 1 (a
// busy loop where a test needs CPU time), and a pid that has gone on GPU 0; pmon gives the sleep
// SM and memory shares.
struct Workload {
  Background sleeper{"exec sleep 300"};
  Background busy;
  int gone = vanished_pid();
  std::string folder = test::temporary_folder();

  explicit Workload(bool busy_loop = false)
      : busy("exec setpriv --reuid=nobody --regid=nogroup --clear-groups sh -c " +
             std::string(busy_loop ? "'while :; do :; done'" : "'exec sleep 300'")) {
    std::ostringstream apps;
    apps << gpu0 << ", " << sleeper.pid() << ", 1024 MiB, /usr/bin/sleep\n"
         << gpu1 << ", " << busy.pid() << ", 2048 MiB, sh, with a comma\n"
         << gpu0 << ", " << gone << ", 512 MiB, python3\n";
    test::write_file(folder + "/apps", apps.str());
    std::ostringstream pmon;
    pmon << "    0    " << sleeper.pid()
         << "     C   1024      -     42      7      -      -      -      -    sleep\n"
         << "    1    " << busy.pid()
         << "     C   2048      -      -      -      -      -      -      -    sh\n";
    for (int gpu = 2; gpu < 8; ++gpu)
      pmon << "    " << gpu
           << "          -     -      -      -      -      -      -      -      -      -    -\n";
    test::write_file(folder + "/pmon", pmon.str());
  }
  std::string environment() const {
    return "FAKE_NVSMI_APPS=" + quote(folder + "/apps") +
           " FAKE_NVSMI_PMON=" + quote(folder + "/pmon") +
           " FAKE_NVSMI_PROCESS_ARGS=" + quote(folder + "/calls") + " ";
  }
};

const json *process_with_pid(const json &snapshot, int gpu, int pid) {
  for (const json &process : snapshot["gpus"][gpu]["processes"])
    if (process["pid"] == pid)
      return &process;
  return nullptr;
}

std::vector<json> json_lines(const std::string &text) {
  std::vector<json> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    lines.push_back(json::parse(line));
  return lines;
}

} // namespace

TEST_CASE("snapshot --source csv lists each GPU's compute processes with who runs them") {
  Workload work;
  test::Run run = run_shell(work.environment() + AGENT_BIN " snapshot --source csv --format json " +
                            "--nvidia-smi " + fake);
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  json snapshot = json::parse(run.out);
  const json *sleeper = process_with_pid(snapshot, 0, work.sleeper.pid());
  REQUIRE(sleeper);
  CHECK((*sleeper)["name"] == "/usr/bin/sleep");
  CHECK((*sleeper)["used_memory_mib"] == 1024);
  CHECK((*sleeper)["type"] == "C");
  CHECK((*sleeper)["user"] == "root");
  CHECK((*sleeper)["uid"] == 0);
  CHECK((*sleeper)["command"] == "sleep 300");
  CHECK((*sleeper)["started"].is_string());
  CHECK((*sleeper)["host_memory_mib"].is_number());
  CHECK((*sleeper)["cpu_percent"].is_null()); // one look cannot tell a share of time
  const json *busy = process_with_pid(snapshot, 1, work.busy.pid());
  REQUIRE(busy);
  CHECK((*busy)["name"] == "sh, with a comma");
  CHECK((*busy)["user"] == "nobody");
  // The pid that has gone keeps what nvidia-smi said, and nothing of any other process.
  const json *gone = process_with_pid(snapshot, 0, work.gone);
  REQUIRE(gone);
  CHECK((*gone)["name"] == "python3");
  CHECK((*gone)["used_memory_mib"] == 512);
  for (const char *field : {"user", "uid", "command", "started", "cpu_percent", "host_memory_mib"})
    CHECK((*gone)[field].is_null());
  CHECK(snapshot["gpus"][2]["processes"] == json::array());
  char hostname[256] = {};
  ::gethostname(hostname, sizeof hostname - 1);
  CHECK(snapshot["host"]["hostname"] == hostname);
  CHECK(snapshot["host"]["memory_total_mib"].get<long>() > 0);
}

TEST_CASE("snapshot says once when the processes cannot be read, and prints the GPUs") {
  test::Run run = run_shell("FAKE_NVSMI_PROCESS_MODE=exit9 " AGENT_BIN
                            " snapshot --source csv --format json --nvidia-smi " +
                            fake);
  REQUIRE(run.exit_code == 0);
  CHECK(run.err.find("processes unknown") != std::string::npos);
  json snapshot = json::parse(run.out);
  REQUIRE(snapshot["gpus"].size() == 8);
  CHECK(snapshot["gpus"][0]["processes"].is_null());
}

TEST_CASE("snapshot --no-processes does not ask for them") {
  std::string calls = test::temporary_folder() + "/calls";
  test::Run run = run_shell(
      "FAKE_NVSMI_PROCESS_ARGS=" + quote(calls) +
      " " AGENT_BIN " snapshot --source csv --no-processes --format json --nvidia-smi " + fake);
  REQUIRE(run.exit_code == 0);
  CHECK(json::parse(run.out)["gpus"][0]["processes"].is_null());
  CHECK(run_shell("test -e " + quote(calls)).exit_code != 0);
}

TEST_CASE("watch follows the processes: CPU shares from the second sample, pmon's SM share") {
  Workload work(true);
  Background watch(work.environment() + AGENT_BIN " watch --source csv --interval 0.5 --format " +
                   "json --nvidia-smi " + fake);
  // pmon's first sample is known complete when its second begins, a second or two in.
  REQUIRE(test::wait_until([&] {
    std::vector<json> lines;
    try {
      lines = json_lines(watch.out());
    } catch (const std::exception &) {
      return false; // a line being written
    }
    if (lines.size() < 3)
      return false;
    const json *sleeper = process_with_pid(lines.back(), 0, work.sleeper.pid());
    const json *busy = process_with_pid(lines.back(), 1, work.busy.pid());
    return sleeper && busy && (*sleeper)["sm_utilization_percent"] == 42 &&
           (*busy)["cpu_percent"].is_number() && (*busy)["cpu_percent"].get<double>() > 5;
  }));
  std::vector<json> lines = json_lines(watch.out());
  const json &last = lines.back();
  CHECK((*process_with_pid(last, 0, work.sleeper.pid()))["memory_utilization_percent"] == 7);
  // `-` in pmon is unknown, not 0.
  CHECK((*process_with_pid(last, 1, work.busy.pid()))["sm_utilization_percent"].is_null());
  CHECK((*process_with_pid(last, 1, work.busy.pid()))["user"] == "nobody");
  CHECK(last["host"]["cpu_percent"].is_number());
  CHECK(lines.front()["host"]["cpu_percent"].is_null());
  ::kill(watch.pid(), SIGTERM);
  CHECK(watch.wait() == 0); // SIGTERM is the normal way to end it
  CHECK_FALSE(test::running_here(test::fake_nvidia_smi_process));
}

TEST_CASE("watch runs one compute-apps loop at max(interval, 1 s), or --process-interval") {
  Workload work;
  std::string calls = work.folder + "/calls";
  auto compute_apps_calls = [&](const std::string &pattern) {
    return run_shell("grep -c -- " + quote(pattern) + " " + quote(calls) + " || true").out;
  };
  {
    Background watch(work.environment() + AGENT_BIN " watch --source csv --interval 0.1 " +
                     "--count 40 --format csv --nvidia-smi " + fake);
    REQUIRE(watch.wait(std::chrono::seconds(60)) == 0);
  }
  // 40 samples at 10 Hz: one nvidia-smi for the processes, in its own loop every second, never
  // one started per sample; and one pmon, every 5 s (--pmon auto: a GPU has a process).
  CHECK(compute_apps_calls("query-compute-apps") == "1\n");
  CHECK(compute_apps_calls("^--query-compute-apps=timestamp,gpu_uuid,pid,used_gpu_memory,"
                           "process_name --format=csv,nounits -lms 1000$") == "1\n");
  CHECK(run_shell("grep -c '^pmon -s um -d 5$' " + quote(calls)).out == "1\n");

  // --pmon on: at the process interval, from the start.
  ::unlink(calls.c_str());
  {
    Background watch(work.environment() + AGENT_BIN " watch --source csv --interval 0.1 " +
                     "--count 20 --pmon on --format csv --nvidia-smi " + fake);
    REQUIRE(watch.wait(std::chrono::seconds(60)) == 0);
  }
  CHECK(run_shell("grep -c '^pmon -s um -d 1$' " + quote(calls)).out == "1\n");

  ::unlink(calls.c_str());
  {
    Background watch(work.environment() + AGENT_BIN " watch --source csv --interval 0.1 " +
                     "--count 20 --process-interval 0.5 --format csv --nvidia-smi " + fake);
    REQUIRE(watch.wait(std::chrono::seconds(60)) == 0);
  }
  CHECK(compute_apps_calls("query-compute-apps") == "1\n");
  CHECK(compute_apps_calls("-lms 500$") == "1\n");
}

// --pmon auto (the default) runs pmon, the costliest stream, only while a GPU has a process.
TEST_CASE("--pmon auto: no pmon while no GPU has a process; one for a process, stopped after it") {
  Workload work;
  std::string apps = test::read_file(work.folder + "/apps"), calls = work.folder + "/calls";
  test::write_file(work.folder + "/apps", "");
  auto pmon_calls = [&] { return run_shell("grep -c '^pmon' " + quote(calls) + " || true").out; };
  const std::string pmon_running = test::fake_nvidia_smi_process + " pmon";
  Background watch(work.environment() + AGENT_BIN " watch --source csv --interval 0.2 " +
                   "--process-interval 0.2 --format json --nvidia-smi " + fake);
  auto last = [&]() -> std::optional<json> {
    try {
      std::vector<json> lines = json_lines(watch.out());
      if (lines.size() >= 10)
        return lines.back();
    } catch (const std::exception &) {
    }
    return std::nullopt; // a line being written, or not ten yet
  };
  // Ten samples, every GPU's list known and empty: no pmon was started.
  REQUIRE(test::wait_until([&] {
    std::optional<json> sample = last();
    return sample && (*sample)["gpus"][0]["processes"] == json::array();
  }));
  CHECK(pmon_calls() == "0\n");
  CHECK_FALSE(test::running_here(pmon_running));

  // A process: pmon every 5 s, its shares said with their age (at least that interval: pmon's
  // sample is known whole when the next begins).
  test::write_file(work.folder + "/apps", apps);
  REQUIRE(test::wait_until(
      [&] {
        std::optional<json> sample = last();
        const json *sleeper = sample ? process_with_pid(*sample, 0, work.sleeper.pid()) : nullptr;
        return sleeper && (*sleeper)["sm_utilization_percent"] == 42;
      },
      std::chrono::seconds(60)));
  std::optional<json> sample = last();
  REQUIRE(sample);
  const json *sleeper = process_with_pid(*sample, 0, work.sleeper.pid());
  REQUIRE(sleeper);
  REQUIRE((*sleeper)["utilization_age_seconds"].is_number());
  CHECK((*sleeper)["utilization_age_seconds"].get<double>() >= 5);
  CHECK((*sleeper)["utilization_age_seconds"].get<double>() < 60);
  CHECK(run_shell("grep -c '^pmon -s um -d 5$' " + quote(calls)).out == "1\n");

  // None again: pmon is stopped within two of its intervals, and its shares go with it.
  test::write_file(work.folder + "/apps", "");
  REQUIRE(test::wait_until([&] { return !test::running_here(pmon_running); },
                           std::chrono::seconds(60)));
  CHECK(pmon_calls() == "1\n");
  // A process once more: pmon starts again.
  test::write_file(work.folder + "/apps", apps);
  REQUIRE(test::wait_until([&] { return pmon_calls() == "2\n"; }, std::chrono::seconds(60)));
  ::kill(watch.pid(), SIGTERM);
  CHECK(watch.wait() == 0);
  CHECK_FALSE(test::running_here(test::fake_nvidia_smi_process));
}

TEST_CASE("--pmon off never runs pmon; with compute-apps refused, auto runs it all along") {
  Workload work;
  std::string calls = work.folder + "/calls";
  SECTION("off, with processes on the GPUs") {
    test::Run run = run_shell(work.environment() + AGENT_BIN " watch --source csv --interval 0.2 " +
                              "--count 15 --pmon off --format json --nvidia-smi " + fake);
    REQUIRE(run.exit_code == 0);
    CHECK(run_shell("grep -c '^pmon' " + quote(calls) + " || true").out == "0\n");
    json last = json_lines(run.out).back();
    const json *sleeper = process_with_pid(last, 0, work.sleeper.pid());
    REQUIRE(sleeper);
    CHECK((*sleeper)["sm_utilization_percent"].is_null());
    CHECK((*sleeper)["utilization_age_seconds"].is_null());
  }
  SECTION("auto, compute-apps refused: pmon's rows are the only list") {
    test::Run run = run_shell(
        "FAKE_NVSMI_PROCESS_MODE=apps-refused " + work.environment() + AGENT_BIN +
        " watch --source csv --interval 0.2 --count 15 --format json --nvidia-smi " + fake);
    REQUIRE(run.exit_code == 0);
    CHECK(run.err.find("going on without processes") != std::string::npos);
    CHECK(run_shell("grep -c '^pmon -s um -d 5$' " + quote(calls)).out == "1\n");
  }
  SECTION("--pmon with --no-processes, or a mode it does not know, is a usage error") {
    for (const char *options : {"--pmon on --no-processes", "--pmon sometimes"}) {
      test::Run run =
          run_shell(AGENT_BIN " watch --count 1 " + std::string(options) + " --nvidia-smi " + fake);
      INFO(options << ": " << run.err);
      CHECK(run.exit_code == 2);
      CHECK(run.err.find("--pmon") != std::string::npos);
    }
  }
}

namespace {

// How many times the stand-in was started for each stream, from the calls it wrote down.
struct Starts {
  std::string gpu_query, compute_apps, pmon;
};
Starts starts_in(const std::string &folder) {
  auto count = [](const std::string &pattern, const std::string &file) {
    return run_shell("grep -c -- " + quote(pattern) + " " + quote(file) + " || true").out;
  };
  return {count(".", folder + "/args"), count("query-compute-apps", folder + "/calls"),
          count("^pmon ", folder + "/calls")};
}

// Until `file` has `lines` lines (a JSON log's samples).
bool lines_reach(const std::string &file, std::size_t lines) {
  return test::wait_until([&] { return test::lines_of(test::read_file(file)).size() >= lines; });
}

} // namespace

// Issue 25's promise for every long-running mode, as a count: however many samples, nvidia-smi
// is started once for the GPUs, once for the processes' loop and once for pmon (run chooses its
// GPU from the loop's first sample, with no one-shot before it).
TEST_CASE("serve, run and top start one nvidia-smi per stream, however many samples") {
  const std::string query_args = " FAKE_NVSMI_ARGS=";
  SECTION("serve") {
    Workload work;
    test::Server serve("--interval 0.1 --nvidia-smi " + fake,
                       work.environment() + query_args + quote(work.folder + "/args") + " ");
    REQUIRE(test::wait_until([&] {
      test::Http metrics = serve.get("/metrics");
      std::size_t at = metrics.body.find("\nnvsmi_history_samples ");
      return at != std::string::npos && std::stod(metrics.body.substr(at + 23)) >= 30;
    }));
    CHECK(serve.stop() == 0);
    Starts starts = starts_in(work.folder);
    CHECK(starts.gpu_query == "1\n");
    CHECK(starts.compute_apps == "1\n");
    CHECK(starts.pmon == "1\n");
  }
  SECTION("run: one of each for a job of 5 samples and of 30") {
    std::vector<Starts> seen;
    for (int samples : {5, 30}) {
      Workload work;
      std::string log = work.folder + "/samples.json";
      // The job ends once run's log holds `samples` samples (or after a minute).
      std::string job = "for i in $(seq 600); do [ $(wc -l <" + quote(log) + ") -ge " +
                        std::to_string(samples) + " ] 2>/dev/null && break; sleep 0.1; done";
      // --pmon on: started with the other streams, not at the first sample with a process, which
      // a job of 5 samples may end before pmon's start is written down.
      test::Run run =
          run_shell(work.environment() + query_args + quote(work.folder + "/args") +
                    " " AGENT_BIN " run --interval 0.1 --pmon on --nvidia-smi " + fake +
                    " --lock-dir " + quote(work.folder + "/locks") + " --log " + quote(log) +
                    " --report " + quote(work.folder + "/report") + " -- sh -c " + quote(job));
      INFO(run.err);
      REQUIRE(run.exit_code == 0);
      REQUIRE(lines_reach(log, samples));
      seen.push_back(starts_in(work.folder));
    }
    for (const Starts &starts : seen) {
      CHECK(starts.gpu_query == "1\n");
      CHECK(starts.compute_apps == "1\n");
      CHECK(starts.pmon == "1\n");
    }
  }
  SECTION("top") {
    if (!test::installed("tmux"))
      return; // top's own tests warn once
    Workload work;
    test::Tmux tmux(120, 40);
    tmux.run(work.environment() + query_args + quote(work.folder + "/args") +
             " LC_ALL=C.UTF-8 " AGENT_BIN " top --interval 0.1 --nvidia-smi " + fake);
    // Up and listing the loop's processes: then three seconds, thirty samples on an idle
    // machine, fewer on a busy one; the counts below hold for any number.
    REQUIRE(tmux.wait_for("sleep 300"));
    ::usleep(3'000'000);
    tmux.keys("q");
    REQUIRE(test::wait_until([&] { return !test::running_here(test::fake_nvidia_smi_process); }));
    Starts starts = starts_in(work.folder);
    CHECK(starts.gpu_query == "1\n");
    CHECK(starts.compute_apps == "1\n");
    CHECK(starts.pmon == "1\n");
  }
}

TEST_CASE("watch: a process the loop stops listing is gone, and an empty list is [] not null") {
  Workload work;
  Background watch(work.environment() + AGENT_BIN " watch --source csv --interval 0.2 " +
                   "--process-interval 0.2 --format json --nvidia-smi " + fake);
  auto last = [&]() -> std::optional<json> {
    try {
      std::vector<json> lines = json_lines(watch.out());
      if (!lines.empty())
        return lines.back();
    } catch (const std::exception &) {
    }
    return std::nullopt; // a line being written
  };
  // The loop's rows come in: the sleeper on GPU 0, the shell on GPU 1; GPU 2 has none listed yet
  // a known list.
  REQUIRE(test::wait_until([&] {
    std::optional<json> sample = last();
    return sample && process_with_pid(*sample, 0, work.sleeper.pid()) &&
           process_with_pid(*sample, 1, work.busy.pid()) &&
           (*sample)["gpus"][2]["processes"] == json::array();
  }));
  // The shell leaves GPU 1: the next iterations list the sleeper alone, and pmon no longer has
  // it either (pmon's rows add processes the loop lacks).
  auto pmon_without = [&](bool sleeper) {
    std::ostringstream pmon;
    if (sleeper)
      pmon << "    0    " << work.sleeper.pid()
           << "     C   1024      -     42      7      -      -      -      -    sleep\n";
    for (int gpu = sleeper ? 1 : 0; gpu < 8; ++gpu)
      pmon << "    " << gpu
           << "          -     -      -      -      -      -      -      -      -      -    -\n";
    test::write_file(work.folder + "/pmon", pmon.str());
  };
  pmon_without(true);
  test::write_file(work.folder + "/apps", std::string(gpu0) + ", " +
                                              std::to_string(work.sleeper.pid()) +
                                              ", 1024 MiB, /usr/bin/sleep\n");
  REQUIRE(test::wait_until([&] {
    std::optional<json> sample = last();
    return sample && process_with_pid(*sample, 0, work.sleeper.pid()) &&
           (*sample)["gpus"][1]["processes"] == json::array();
  }));
  // None left: the loop prints nothing at all, which after two iterations and a second is an
  // empty list on every GPU, never the last list kept and never null.
  test::write_file(work.folder + "/apps", "");
  pmon_without(false);
  REQUIRE(test::wait_until([&] {
    std::optional<json> sample = last();
    return sample && (*sample)["gpus"][0]["processes"] == json::array();
  }));
  std::optional<json> sample = last();
  REQUIRE(sample);
  for (const json &gpu : (*sample)["gpus"])
    CHECK(gpu["processes"] == json::array());
  // Still one nvidia-smi for the processes.
  CHECK(run_shell("grep -c query-compute-apps " + quote(work.folder + "/calls")).out == "1\n");
  ::kill(watch.pid(), SIGTERM);
  CHECK(watch.wait() == 0);
}

TEST_CASE("watch goes on without processes when nvidia-smi cannot give them") {
  Workload work;
  SECTION("compute-apps fails: GPU samples go on, processes unknown") {
    test::Run run = run_shell("FAKE_NVSMI_PROCESS_MODE=exit9 " + work.environment() + AGENT_BIN +
                              " watch --source csv --interval 0.2 --count 15 --format json " +
                              "--nvidia-smi " + fake);
    REQUIRE(run.exit_code == 0);
    std::vector<json> lines = json_lines(run.out);
    REQUIRE(lines.size() == 15);
    CHECK(lines.back()["gpus"][0]["processes"].is_null());
    CHECK(run.err.find("NVIDIA-SMI has failed") != std::string::npos);
  }
  SECTION("pmon is not supported: said once, never started again") {
    test::Run run = run_shell("FAKE_NVSMI_PROCESS_MODE=unsupported FAKE_NVSMI_PROCESS_ARGS=" +
                              quote(work.folder + "/calls") + " " + AGENT_BIN +
                              " watch --source xml --interval 0.2 --count 25 --pmon on " +
                              "--format json --nvidia-smi " + fake);
    REQUIRE(run.exit_code == 0);
    CHECK(run.err.find("going on without per-process utilization") != std::string::npos);
    CHECK(run_shell("grep -c '^pmon' " + quote(work.folder + "/calls")).out == "1\n");
  }
}

TEST_CASE("serve shows each GPU process with its user in /metrics and the snapshot API") {
  Workload work;
  test::Server server("--metrics-processes --source csv --interval 0.5 --nvidia-smi " + fake,
                      work.environment());
  std::string busy_pid = std::to_string(work.busy.pid());
  REQUIRE(test::wait_until([&] {
    std::string metrics = server.get("/metrics").body;
    return metrics.find("pid=\"" + busy_pid + "\"") != std::string::npos &&
           metrics.find("user=\"nobody\"") != std::string::npos;
  }));
  std::string metrics = server.get("/metrics").body;
  CHECK(metrics.find("nvsmi_user_gpus{user=\"nobody\"} 1") != std::string::npos);
  CHECK(metrics.find("nvsmi_user_gpu_memory_used_bytes{user=\"nobody\"} 2147483648") !=
        std::string::npos);
  CHECK(metrics.find("nvsmi_host_memory_total_bytes") != std::string::npos);
  json snapshot = json::parse(server.get("/api/v1/snapshot").body);
  const json *busy = process_with_pid(snapshot, 1, work.busy.pid());
  REQUIRE(busy);
  CHECK((*busy)["user"] == "nobody");
  CHECK(server.stop() == 0);
}

TEST_CASE("--no-host: an nvidia-smi elsewhere gets no user or command from this machine") {
  Workload work;
  test::Run run = run_shell(work.environment() + AGENT_BIN " snapshot --source csv --format json " +
                            "--no-host --nvidia-smi " + fake);
  REQUIRE(run.exit_code == 0);
  json snapshot = json::parse(run.out);
  CHECK(snapshot["host"].is_null());
  const json *sleeper = process_with_pid(snapshot, 0, work.sleeper.pid());
  REQUIRE(sleeper);
  CHECK((*sleeper)["used_memory_mib"] == 1024);
  CHECK((*sleeper)["user"].is_null());
  CHECK((*sleeper)["command"].is_null());
}

namespace {

// A watch of the stand-in with dmon's calls recorded: its JSON lines, its stderr, the calls.
struct DmonWatch {
  std::vector<json> lines;
  std::string err, calls;
  double seconds = 0; // how long the watch ran, where a test measures it
};
// `wrapper`: what goes before the agent on its command line (an environment variable).
DmonWatch watch_with_dmon(const std::string &environment, const std::string &options, int count,
                          const std::string &wrapper = "") {
  std::string calls = test::temporary_folder() + "/calls";
  test::Run run =
      run_shell(environment + " FAKE_NVSMI_PROCESS_ARGS=" + quote(calls) + " " + wrapper +
                AGENT_BIN + " watch --source csv --no-processes --interval 0.2 " + "--count " +
                std::to_string(count) + " --format json " + options + " --nvidia-smi " + fake);
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  return {json_lines(run.out), run.err, run_shell("grep '^dmon' " + quote(calls) + " || true").out};
}

// The first line in which GPU `gpu` has `key`, or nullptr.
const json *first_with(const std::vector<json> &lines, int gpu, const char *key) {
  for (const json &line : lines)
    if (!line["gpus"][gpu][key].is_null())
      return &line;
  return nullptr;
}

} // namespace

TEST_CASE("watch runs one dmon beside the GPU query: activity and traffic per GPU, null until "
          "known") {
  constexpr std::int64_t mib = 1024 * 1024;
  DmonWatch watch = watch_with_dmon("", "", 40);
  REQUIRE(watch.lines.size() == 40);
  // Once, with the GPM metrics and PCIe (--no-processes leaves dmon running: it is about the GPU).
  CHECK(watch.calls == "dmon -s t --gpm-metrics 2,3,5,10,11,12,13,60,61 -d 1\n");
  // Before dmon's first rows (and GPM's first, `-`): unknown, never 0 or utilization's.
  CHECK(watch.lines.front()["gpus"][3]["sm_active_percent"].is_null());
  const json *active = first_with(watch.lines, 3, "sm_active_percent");
  REQUIRE(active);
  const json &gpu3 = (*active)["gpus"][3];
  CHECK(gpu3["sm_active_percent"] == 41); // the stand-in's 20 + 7g, g = 3
  CHECK(gpu3["sm_occupancy_percent"] == 19);
  CHECK(gpu3["tensor_active_percent"] == 15);
  CHECK(gpu3["dram_active_percent"] == 21);
  CHECK(gpu3["fp64_active_percent"] == 0);
  CHECK(gpu3["fp32_active_percent"] == 6);
  CHECK(gpu3["fp16_active_percent"] == 6);
  CHECK(gpu3["pcie_rx_bytes_per_second"] == 1300 * mib);
  CHECK(gpu3["pcie_tx_bytes_per_second"] == 650 * mib);
  CHECK(gpu3["nvlink_rx_bytes_per_second"] == 300 * mib);
  CHECK(gpu3["nvlink_tx_bytes_per_second"] == 150 * mib);
  CHECK(gpu3["utilization_gpu_percent"] == 100); // its own reading beside them
}

TEST_CASE("watch: dmon's shares past 100 % and rates below 0 are dropped for that GPU, said at "
          "most 5 times a minute; the rest read") {
  constexpr std::int64_t mib = 1024 * 1024;
  // GPU 3 as an odd driver gave it (issue 40): SM 250 %, occupancy 999 %, tensor 101 %, DRAM
  // 200 %, PCIe receive -5 MB/s, every second.
  DmonWatch watch = watch_with_dmon("FAKE_NVSMI_DMON_MODE=out-of-range", "", 80);
  for (const json &line : watch.lines)
    for (const char *key : {"sm_active_percent", "sm_occupancy_percent", "tensor_active_percent",
                            "dram_active_percent", "pcie_rx_bytes_per_second"}) {
      INFO(key);
      CHECK(line["gpus"][3][key].is_null());
    }
  // Its other figures are readings, and every other GPU's.
  const json *fp32 = first_with(watch.lines, 3, "fp32_active_percent");
  REQUIRE(fp32);
  CHECK((*fp32)["gpus"][3]["fp32_active_percent"] == 6);
  CHECK((*fp32)["gpus"][3]["pcie_tx_bytes_per_second"] == 650 * mib);
  CHECK((*fp32)["gpus"][3]["nvlink_rx_bytes_per_second"] == 300 * mib);
  CHECK((*fp32)["gpus"][2]["sm_active_percent"] == 34);
  CHECK((*fp32)["gpus"][4]["pcie_rx_bytes_per_second"] == 1400 * mib);
  // Said in one line a row, what and why, printable; at most 5 in a minute, then counted.
  CHECK_THAT(watch.err, Catch::Contains("dmon GPU 3: dropped, never read: rxpci -5 MB/s (a rate "
                                        "is at least 0), smutil 250 % (a share is 0-100 %), "
                                        "smocc 999 % (a share is 0-100 %), mmaact 101 % (a share "
                                        "is 0-100 %), dram 200 % (a share is 0-100 %)"));
  std::size_t said = 0;
  for (std::size_t at = watch.err.find("dmon GPU 3: dropped"); at != std::string::npos;
       at = watch.err.find("dmon GPU 3: dropped", at + 1))
    ++said;
  CHECK(said >= 1);
  CHECK(said <= 5);
  // dmon printed a row a second for the run's 16 s: the rest were counted.
  CHECK_THAT(watch.err, Catch::Contains("dmon: more than 5 messages in 60 s"));
  for (char c : watch.err)
    CHECK((c == '\n' || static_cast<unsigned char>(c) >= 0x20));
}

TEST_CASE("a C+G process keeps its type: pmon's over compute-apps' assumed C, and the XML's, "
          "through JSON and the table") {
  // A Windows desktop process as the corpus's RTX 2080 SUPER capture shows it: C+G in pmon (and
  // -q), listed by compute-apps as every process with a compute context. The stand-in plays it on
  // GPU 0 with a real process here.
  test::Background desktop("exec sleep 300");
  std::string folder = test::temporary_folder();
  std::string pid = std::to_string(desktop.pid());
  test::write_file(folder + "/apps", gpu0 + ", " + pid + ", 300 MiB, dwm.exe\n");
  // pmon -s um's columns: gpu, pid, type, fb, ccpm, sm, mem, enc, dec, jpg, ofa, command.
  std::string pmon = "    0 " + pid +
                     "   C+G    300      -      3      1      -      -      -      -    dwm.exe\n";
  for (int gpu = 1; gpu < 8; ++gpu)
    pmon += "    " + std::to_string(gpu) +
            "          -     -      -      -      -      -      -      -      -      -    -\n";
  test::write_file(folder + "/pmon", pmon);
  std::string environment = "FAKE_NVSMI_APPS=" + quote(folder + "/apps") +
                            " FAKE_NVSMI_PMON=" + quote(folder + "/pmon") + " ";
  test::Server server("--metrics-processes --source csv --interval 0.5 --nvidia-smi " + fake,
                      environment);
  // Before pmon's first sample is complete compute-apps' "C" stands; from then on, pmon's C+G.
  json snapshot;
  const json *process = nullptr;
  REQUIRE(test::wait_until([&] {
    snapshot = json::parse(server.get("/api/v1/snapshot").body);
    if (!snapshot.contains("gpus")) // 503 before the first sample
      return false;
    process = process_with_pid(snapshot, 0, desktop.pid());
    return process && (*process)["type"] == "C+G";
  }));
  CHECK((*process)["sm_utilization_percent"] == 3);
  // A compute context: it holds the GPU (idle but held, at the stand-in's 0 %), never free.
  CHECK(snapshot["gpus"][0]["state"] != "free");
  CHECK(server.stop() == 0);

  // The XML's own type, as the corpus's RTX 4000 SFF Ada recording gives it: in JSON and the
  // table (the GPU held by it). The fixture's python3 on GPU 2 given `type`: its snapshot.
  auto typed = [&](const std::string &type, const std::string &format) {
    std::string xml = folder + "/typed-" + std::to_string(type.size()) + ".xml";
    REQUIRE(run_shell("sed 's|<type>C</type>|<type>" + type + "</type>|' " +
                      quote(test::fixture_path("xml/h100-8gpu-v12.xml")) + " >" + quote(xml))
                .exit_code == 0);
    test::Run run = run_agent("snapshot --format " + format + " --fixture " + quote(xml));
    REQUIRE(run.exit_code == 0);
    return run.out;
  };
  CHECK(json::parse(typed("C+G", "json"))["gpus"][2]["processes"][0]["type"] == "C+G");
  // its holder, as any compute process
  CHECK_THAT(typed("C+G", "table"), Catch::Contains("python3"));
  // A type nvidia-smi does not document is unknown, never kept as text.
  CHECK(json::parse(typed("C+G+Z", "json"))["gpus"][2]["processes"][0]["type"].is_null());
}

namespace {

// A watch of the stand-in whose `nvlink -s` answers as `mode` says (FAKE_NVSMI_NVLINK_MODE):
// its JSON lines, its stderr, and the nvlink calls it made.
DmonWatch watch_with_nvlink(const std::string &mode) {
  std::string calls = test::temporary_folder() + "/nvlink-calls";
  test::Run run = run_shell("FAKE_NVSMI_NVLINK_MODE=" + mode +
                            " FAKE_NVSMI_NVLINK_ARGS=" + quote(calls) + " " + AGENT_BIN +
                            " watch --source csv --no-processes --interval 0.2 --count 4 "
                            "--format json --nvidia-smi " +
                            fake);
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  return {json_lines(run.out), run.err, run_shell("cat " + quote(calls) + " || true").out};
}

std::size_t occurrences(const std::string &text, const std::string &part) {
  std::size_t count = 0;
  for (std::size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1))
    ++count;
  return count;
}

} // namespace

TEST_CASE("watch reads each GPU's NVLink capacity once at start, onto every sample; unknown, "
          "never 0, where no link is active or nvlink -s fails") {
  constexpr std::int64_t h100 = 478116000000; // 18 links of 26.562 GB/s
  SECTION("every link active: the sum of their speeds, from one run of nvlink -s") {
    DmonWatch watch = watch_with_nvlink("ok");
    REQUIRE(watch.lines.size() == 4);
    for (const json &line : watch.lines)
      for (const json &gpu : line["gpus"])
        CHECK(gpu["nvlink_bandwidth_bytes_per_second"] == h100);
    CHECK(watch.calls == "nvlink -s\n");
    CHECK(watch.err.find("NVLink") == std::string::npos);
  }
  SECTION("inactive links add nothing; a GPU with none active is unknown") {
    DmonWatch watch = watch_with_nvlink("inactive");
    for (const json &line : watch.lines) {
      CHECK(line["gpus"][0]["nvlink_bandwidth_bytes_per_second"] == 16 * 26562000000);
      CHECK(line["gpus"][1]["nvlink_bandwidth_bytes_per_second"] == h100);
      CHECK(line["gpus"][7]["nvlink_bandwidth_bytes_per_second"].is_null());
    }
  }
  SECTION("no active link anywhere (nothing printed): unknown, and nothing said") {
    DmonWatch watch = watch_with_nvlink("none");
    for (const json &line : watch.lines)
      for (const json &gpu : line["gpus"])
        CHECK(gpu["nvlink_bandwidth_bytes_per_second"].is_null());
    CHECK(watch.err.find("NVLink") == std::string::npos);
  }
  SECTION("refused, not understood, or hung past its deadline: unknown, said once") {
    for (const char *mode : {"unsupported", "garbage", "hang"}) {
      INFO(mode);
      DmonWatch watch = watch_with_nvlink(mode);
      REQUIRE(watch.lines.size() == 4);
      for (const json &line : watch.lines)
        for (const json &gpu : line["gpus"])
          CHECK(gpu["nvlink_bandwidth_bytes_per_second"].is_null());
      CHECK(occurrences(watch.err, "NVLink capacity unknown: ") == 1);
      CHECK(watch.calls == "nvlink -s\n");
    }
  }
}

namespace {

// A watch of the stand-in with NVLink counters asked for every second (the tests' shorter minimum)
// or not at all (`counters` empty): its JSON lines, stderr and the nvlink calls it made. `dmon` is
// FAKE_NVSMI_DMON_MODE: nogpm plays an A100, whose dmon gives no NVLink figures.
DmonWatch watch_with_counters(const std::string &dmon, const std::string &counters,
                              const std::string &counters_mode = "ok", int count = 40) {
  std::string calls = test::temporary_folder() + "/nvlink-calls";
  auto started = std::chrono::steady_clock::now();
  test::Run run = run_shell(
      "FAKE_NVSMI_DMON_MODE=" + dmon + " FAKE_NVSMI_NVLINK_COUNTERS=" + counters_mode +
      " NVSMI_TEST_NVLINK_COUNTERS_MIN_SECONDS=1 FAKE_NVSMI_NVLINK_ARGS=" + quote(calls) + " " +
      AGENT_BIN + " watch --source csv --no-processes --interval 0.2 --count " +
      std::to_string(count) + " --format json " +
      (counters.empty() ? "" : "--nvlink-counters " + counters) + " --nvidia-smi " + fake);
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  std::chrono::duration<double> seconds = std::chrono::steady_clock::now() - started;
  return {json_lines(run.out), run.err, run_shell("cat " + quote(calls) + " || true").out,
          seconds.count()};
}

// The stand-in's counters: GPU g sends 18 432 000 (g + 1) B/s and receives half that.
void check_counters_rates(const json &gpu, int g) {
  INFO("GPU " << g << ": " << gpu.dump());
  std::int64_t tx = 18432000LL * (g + 1), rx = tx / 2;
  // Within a third: each reading's time is its run's middle, and a loaded machine stretches runs.
  CHECK(std::llabs(gpu["nvlink_tx_bytes_per_second"].get<std::int64_t>() - tx) < tx / 3);
  CHECK(std::llabs(gpu["nvlink_rx_bytes_per_second"].get<std::int64_t>() - rx) < rx / 3);
}

} // namespace

TEST_CASE("watch: nvlink -s's real answers for GPU 3 (all links inactive, no NVLink, MIG mode) "
          "leave its capacity unknown, said once, and every other GPU's known") {
  constexpr std::int64_t h100 = 478116000000;
  struct Answer {
    const char *mode, *words;
  };
  for (Answer answer :
       {Answer{"all-links-inactive",
               "NVML: Unable to retrieve Nvlink information as all links are inActive"},
        Answer{"no-nvlink", "Device does not have or support Nvlink"},
        Answer{"mig", "Nvlink queries are not supported for Devices in MIG mode"}}) {
    INFO(answer.mode);
    DmonWatch watch = watch_with_nvlink(answer.mode);
    REQUIRE(watch.lines.size() == 4);
    for (const json &line : watch.lines)
      for (int g = 0; g < 8; ++g) {
        INFO("GPU " << g);
        if (g == 3)
          CHECK(line["gpus"][g]["nvlink_bandwidth_bytes_per_second"].is_null());
        else
          CHECK(line["gpus"][g]["nvlink_bandwidth_bytes_per_second"] == h100);
      }
    CHECK(occurrences(watch.err, "NVLink capacity unknown: GPU 3: nvlink -s says \"" +
                                     std::string(answer.words) + "\"") == 1);
    CHECK(occurrences(watch.err, "NVLink capacity unknown") == 1);
    CHECK(watch.calls == "nvlink -s\n");
  }
}

TEST_CASE("--nvlink-counters: where dmon gives no NVLink figures (an A100), the rates come from "
          "nvlink -gt d's counters from the second reading on; unknown before, never 0") {
  DmonWatch watch = watch_with_counters("nogpm", "1");
  REQUIRE(watch.lines.size() == 40);
  CHECK(watch.lines.front()["gpus"][0]["nvlink_rx_bytes_per_second"].is_null());
  const json *known = first_with(watch.lines, 0, "nvlink_tx_bytes_per_second");
  REQUIRE(known);
  bool after = false;
  for (const json &line : watch.lines) {
    after = after || &line == known;
    if (!after)
      continue;
    for (int g = 0; g < 8; ++g)
      check_counters_rates(line["gpus"][g], g);
  }
  // nvlink -s once at start, then one -gt d per interval at most: 8 s of samples, 1 s apart, or
  // as long as a busy machine stretched the watch to (12 readings seen once under load).
  CHECK(watch.calls.rfind("nvlink -s\nnvlink -gt d\nnvlink -gt d\n", 0) == 0);
  std::size_t readings = occurrences(watch.calls, "nvlink -gt d\n");
  CHECK(readings >= 2);
  INFO("the watch ran " << watch.seconds << " s");
  CHECK(static_cast<double>(readings) <= std::max(8.0, watch.seconds) + 1);
  CHECK(watch.err.find("NVLink") == std::string::npos);
}

TEST_CASE("--nvlink-counters: off by default, nvlink -gt is never run; where dmon gives NVLink "
          "figures, they stay dmon's") {
  SECTION("no option, an A100-like machine: only nvlink -s, once") {
    DmonWatch watch = watch_with_counters("nogpm", "", "ok", 15);
    CHECK(watch.calls == "nvlink -s\n");
    for (const json &line : watch.lines)
      CHECK(line["gpus"][2]["nvlink_rx_bytes_per_second"].is_null());
  }
  SECTION("dmon's GPM gives NVLink (Hopper): its figures, never the counters'") {
    constexpr std::int64_t mib = 1024 * 1024;
    DmonWatch watch = watch_with_counters("ok", "1", "ok", 25);
    REQUIRE(first_with(watch.lines, 3, "nvlink_rx_bytes_per_second"));
    for (const json &line : watch.lines) {
      const json &gpu = line["gpus"][3];
      if (!gpu["nvlink_rx_bytes_per_second"].is_null()) {
        CHECK(gpu["nvlink_rx_bytes_per_second"] == 300 * mib); // the stand-in's dmon: 100g MiB/s
        CHECK(gpu["nvlink_tx_bytes_per_second"] == 150 * mib);
      }
    }
    // At most the reading due before dmon's GPM columns filled, and never a rate from it.
    CHECK(occurrences(watch.calls, "nvlink -gt d\n") <= 1);
    CHECK_THAT(watch.err, Catch::Contains("dmon gives NVLink figures for every GPU"));
  }
  SECTION("no GPU has an active link: nothing run, said once") {
    std::string calls = test::temporary_folder() + "/nvlink-calls";
    test::Run run = run_shell("FAKE_NVSMI_DMON_MODE=nogpm FAKE_NVSMI_NVLINK_MODE=none "
                              "NVSMI_TEST_NVLINK_COUNTERS_MIN_SECONDS=1 FAKE_NVSMI_NVLINK_ARGS=" +
                              quote(calls) + " " + AGENT_BIN +
                              " watch --no-processes --interval 0.2 --count 15 --format json "
                              "--nvlink-counters 1 --nvidia-smi " +
                              fake);
    REQUIRE(run.exit_code == 0);
    CHECK(run_shell("cat " + quote(calls)).out == "nvlink -s\n");
    CHECK(occurrences(run.err,
                      "--nvlink-counters: no GPU is known to have an active NVLink link") == 1);
  }
}

TEST_CASE("--nvlink-counters: a counter reset makes that interval null; a failed or garbled "
          "reading is unknown, said rate-limited, and tried again") {
  SECTION("reset after the second reading: known, then null, then known again") {
    DmonWatch watch = watch_with_counters("nogpm", "1", "reset");
    int phase = 0; // 0: not yet known, 1: known, 2: null after the reset, 3: known again
    for (const json &line : watch.lines) {
      bool known = !line["gpus"][5]["nvlink_tx_bytes_per_second"].is_null();
      if (known && (phase == 0 || phase == 2)) {
        check_counters_rates(line["gpus"][5], 5);
        ++phase;
      } else if (!known && phase == 1) {
        phase = 2;
      }
    }
    CHECK(phase == 3);
  }
  for (const char *mode : {"fail", "garbage"}) {
    SECTION(std::string("a reading that ") +
            (mode == std::string("fail") ? "fails" : "is garbled")) {
      DmonWatch watch = watch_with_counters("nogpm", "1", mode, 25);
      for (const json &line : watch.lines)
        for (const json &gpu : line["gpus"])
          CHECK(gpu["nvlink_rx_bytes_per_second"].is_null());
      CHECK(occurrences(watch.calls, "nvlink -gt d\n") >= 2); // tried again
      CHECK_THAT(watch.err, Catch::Contains("NVLink counters unknown this interval: nvidia-smi "
                                            "nvlink -gt d"));
      CHECK_THAT(watch.err,
                 Catch::Contains(mode == std::string("fail")
                                     ? "exited with code 255: Unable to get NVLink"
                                     : "line not understood: \"Link 0: Data Tx: 12 MiB"));
    }
  }
  SECTION("a reading that never ends: killed at its deadline; the samples never wait for it") {
    Background watch("FAKE_NVSMI_DMON_MODE=nogpm FAKE_NVSMI_NVLINK_COUNTERS=hang "
                     "NVSMI_TEST_NVLINK_COUNTERS_MIN_SECONDS=1 exec " +
                     std::string(AGENT_BIN) +
                     " watch --no-processes --interval 0.2 --format json --nvlink-counters 1 "
                     "--nvidia-smi " +
                     fake);
    CHECK(test::wait_until(
        [&] {
          return watch.err_contains("NVLink counters unknown this interval: nvidia-smi nvlink "
                                    "-gt d: no answer within 5 s");
        },
        std::chrono::seconds(60)));
    // Sampling went on all the while: the 5 s it hung hold 25 samples at 0.2 s, and a watch that
    // waited for the reading would have one or two. A busy machine stretches samples (fewer than
    // 15 seen once at a load of 15 on 2 cores), so the bound is well between.
    CHECK(json_lines(watch.out()).size() >= 8);
    ::kill(watch.pid(), SIGTERM);
    CHECK(watch.wait() == 0);
  }
}

TEST_CASE("--nvlink-counters: under 10 seconds is refused with the usage exit code, on every "
          "sampling command") {
  for (const char *command : {"watch", "serve", "top", "run"}) {
    INFO(command);
    test::Run run =
        run_shell(std::string(AGENT_BIN) + " " + command + " --nvlink-counters 5 --nvidia-smi " +
                  fake + (std::string(command) == "run" ? " -- true" : ""));
    CHECK(run.exit_code == 2);
    CHECK_THAT(run.err, Catch::Contains("--nvlink-counters 5: at least 10 seconds"));
  }
  // The tests' shorter minimum is a minimum too.
  test::Run run = run_shell("NVSMI_TEST_NVLINK_COUNTERS_MIN_SECONDS=1 " + std::string(AGENT_BIN) +
                            " watch --nvlink-counters 0.5 --count 1 --nvidia-smi " + fake);
  CHECK(run.exit_code == 2);
  CHECK_THAT(run.err, Catch::Contains("--nvlink-counters 0.5: at least 1 seconds"));
  // Under sudo the caller's environment lowers nothing, and a variable that is no number, or is
  // NaN or infinite, leaves the 10 s: a sudo rule or a job's environment cannot make the agent
  // start nvidia-smi many times a second.
  for (const char *environment :
       {"SUDO_UID=1000 NVSMI_TEST_NVLINK_COUNTERS_MIN_SECONDS=1 ",
        "NVSMI_TEST_NVLINK_COUNTERS_MIN_SECONDS=nan ",
        "NVSMI_TEST_NVLINK_COUNTERS_MIN_SECONDS=-inf ",
        "NVSMI_TEST_NVLINK_COUNTERS_MIN_SECONDS=1x ", "NVSMI_TEST_NVLINK_COUNTERS_MIN_SECONDS= "}) {
    INFO(environment);
    // No --nvidia-smi: under sudo that option is refused on its own.
    test::Run lowered =
        run_shell(std::string(environment) + AGENT_BIN + " watch --nvlink-counters 5 --count 1");
    CHECK(lowered.exit_code == 2);
    CHECK_THAT(lowered.err, Catch::Contains("--nvlink-counters 5: at least 10 seconds"));
  }
  // The option itself: not a number, NaN, infinite or negative is refused before anything runs.
  for (const char *value : {"nan", "inf", "-10", "ten"}) {
    INFO(value);
    test::Run refused = run_shell(std::string(AGENT_BIN) + " watch --nvlink-counters " + value +
                                  " --count 1 --nvidia-smi " + fake);
    CHECK(refused.exit_code == 2);
    CHECK_THAT(refused.err, Catch::Contains("--nvlink-counters"));
  }
}

TEST_CASE("dmon without GPM: PCIe alone, activity unknown; refused, asked again; unsupported, "
          "given up") {
  SECTION("a GPU without GPM prints `-`: unknown, never 0") {
    DmonWatch watch = watch_with_dmon("FAKE_NVSMI_DMON_MODE=nogpm", "", 15);
    const json *traffic = first_with(watch.lines, 1, "pcie_rx_bytes_per_second");
    REQUIRE(traffic);
    for (const json &line : watch.lines)
      for (const char *key :
           {"sm_active_percent", "tensor_active_percent", "nvlink_rx_bytes_per_second"})
        CHECK(line["gpus"][1][key].is_null());
  }
  SECTION("--gpm off asks for PCIe only") {
    DmonWatch watch = watch_with_dmon("", "--gpm off", 15);
    CHECK(watch.calls == "dmon -s t -d 1\n");
    CHECK(first_with(watch.lines, 1, "pcie_tx_bytes_per_second"));
    CHECK_FALSE(first_with(watch.lines, 1, "sm_active_percent"));
  }
  SECTION("dmon refuses --gpm-metrics: asked again without, said once") {
    DmonWatch watch = watch_with_dmon("FAKE_NVSMI_DMON_MODE=gpm-refused", "", 25);
    CHECK(watch.calls == "dmon -s t --gpm-metrics 2,3,5,10,11,12,13,60,61 -d 1\ndmon -s t -d 1\n");
    CHECK_THAT(watch.err, Catch::Contains("asking dmon again without GPM metrics"));
    CHECK(first_with(watch.lines, 1, "pcie_tx_bytes_per_second"));
  }
  SECTION("dmon not supported: one notice, the GPU samples go on, never started again") {
    DmonWatch watch = watch_with_dmon("FAKE_NVSMI_DMON_MODE=unsupported", "", 25);
    CHECK(watch.lines.size() == 25);
    // Its refusal does not say whether GPM or dmon is refused: once without GPM, then no more.
    CHECK(watch.calls == "dmon -s t --gpm-metrics 2,3,5,10,11,12,13,60,61 -d 1\ndmon -s t -d 1\n");
    CHECK_THAT(watch.err, Catch::Contains("going on without GPU activity and PCIe traffic"));
    CHECK_FALSE(first_with(watch.lines, 1, "pcie_tx_bytes_per_second"));
  }
}

TEST_CASE(
    "--gpm auto leaves GPM off where DCGM's nv-hostengine runs, and says so; on asks anyway") {
  // A host whose proc/ (NVSMI_HOST_ROOT, as node_exporter's --path.procfs) lists a process named
  // nv-hostengine: no such process on this machine, where the suites beside this one would see
  // it (a `run` test once found its stderr starting with this notice).
  std::string root = test::temporary_folder();
  REQUIRE(run_shell("mkdir -p " + quote(root + "/proc/4242") + " && printf 'nv-hostengine\\n' > " +
                    quote(root + "/proc/4242/comm"))
              .exit_code == 0);
  std::string wrapper = "NVSMI_HOST_ROOT=" + quote(root) + " ";
  DmonWatch automatic = watch_with_dmon("", "", 10, wrapper);
  CHECK(automatic.calls == "dmon -s t -d 1\n");
  CHECK_THAT(automatic.err, Catch::Contains("DCGM's nv-hostengine runs here: GPM metrics"));
  DmonWatch on = watch_with_dmon("", "--gpm on", 10, wrapper);
  CHECK(on.calls == "dmon -s t --gpm-metrics 2,3,5,10,11,12,13,60,61 -d 1\n");
  CHECK(on.err.find("nv-hostengine") == std::string::npos);
  // A FIFO planted as a process's comm, in a tree with no nv-hostengine: read without waiting for
  // a writer (a blocking open would hang the start for ever), and GPM asked for.
  std::string planted = test::temporary_folder();
  REQUIRE(run_shell("mkdir -p " + quote(planted + "/proc/4243") + " && mkfifo " +
                    quote(planted + "/proc/4243/comm"))
              .exit_code == 0);
  DmonWatch past_fifo =
      watch_with_dmon("", "", 5, "timeout 60 env NVSMI_HOST_ROOT=" + quote(planted) + " ");
  CHECK(past_fifo.calls == "dmon -s t --gpm-metrics 2,3,5,10,11,12,13,60,61 -d 1\n");
  // Anything else is refused in one line, before anything runs.
  test::Run bad = run_agent("watch --gpm sometimes --count 1 --nvidia-smi " + fake);
  CHECK(bad.exit_code == 2);
  CHECK_THAT(bad.err, Catch::Contains("--gpm"));
}

// Issue 39, item 6: one name for the work. Real processes whose command lines read as real jobs'
// do (a real python3 running a script; others with the job's words as their argv[0], as
// scripts/demo starts them), named in the JSON's `program` by what a person launched.
TEST_CASE("snapshot names each process by the script or program launched: printable and never "
          "another's") {
  std::string folder = test::temporary_folder();
  test::write_file(folder + "/train.py", "import time\ntime.sleep(300)\n");
  // argv[0] as given, then "300": the job's words as /proc gives them, joined by spaces.
  auto as = [](const std::string &argv0) {
    return "exec bash -c 'exec -a \"$0\" sleep \"$1\"' " + quote(argv0) + " 300";
  };
  const std::string hostile = "/tmp/\x1b[2J\x1b]0;owned\x07x\ny\xff\xe2\x80\xae.py";
  test::write_file(folder + "/hostile", hostile);
  std::vector<std::pair<std::string, std::string>> jobs = {
      {"exec /usr/bin/python3 -u " + quote(folder + "/train.py") + " --model x", "train.py"},
      {as("python3 -m vllm.entrypoints.openai.api_server --port 8000"), "vllm"},
      {as("torchrun --nproc-per-node 8 finetune.py --lr 1"), "finetune.py"},
      {as("/usr/bin/python3 /usr/local/bin/accelerate launch --num_processes 8 sft.py"), "sft.py"},
      {as("deepspeed --num_gpus 8 pretrain.py --deepspeed ds.json"), "pretrain.py"},
      {as("bash /srv/run.sh --fast"), "run.sh"},
      {as("python3 -c import time; time.sleep(300) --db-password=hunter2"), "python3"},
      {"exec sleep 300", "sleep"},
      {"exec bash -c 'exec -a \"$(cat " + quote(folder + "/hostile") + ")\" sleep 300'", ""},
  };
  std::vector<std::unique_ptr<Background>> running;
  std::ostringstream apps;
  for (const auto &job : jobs) {
    running.push_back(std::make_unique<Background>(job.first));
    int pid = running.back()->pid();
    // Its command line is the job's once the shells before it have exec'd it.
    REQUIRE(test::wait_until([&] {
      std::string cmdline = test::read_file("/proc/" + std::to_string(pid) + "/cmdline");
      return !cmdline.empty() && cmdline.find("exec ") == std::string::npos;
    }));
    apps << gpu0 << ", " << pid << ", 100 MiB, python3\n";
  }
  // Ended: nvidia-smi's name for it where it gave one, else unknown; never another's.
  int gone = vanished_pid(), gone_unnamed = vanished_pid();
  apps << gpu1 << ", " << gone << ", 100 MiB, /usr/bin/torchrun\n"
       << gpu1 << ", " << gone_unnamed << ", 100 MiB, [N/A]\n";
  test::write_file(folder + "/apps", apps.str());
  test::Run run =
      run_shell("FAKE_NVSMI_APPS=" + quote(folder + "/apps") +
                " " AGENT_BIN " snapshot --format json --source csv --nvidia-smi " + fake);
  INFO(run.out << run.err);
  REQUIRE(run.exit_code == 0);
  json snapshot = json::parse(run.out);
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    const json *process = process_with_pid(snapshot, 0, running[i]->pid());
    REQUIRE(process);
    INFO((*process)["command"]);
    REQUIRE((*process)["program"].is_string());
    std::string program = (*process)["program"];
    if (!jobs[i].second.empty()) {
      CHECK(program == jobs[i].second);
      continue;
    }
    // The hostile one: printable, one word, each control marked; the command line kept whole.
    CHECK(program == "\uFFFD[2J\uFFFD]0;owned\uFFFDx\uFFFDy\uFFFD\uFFFD.py");
    CHECK((*process)["command"].get<std::string>().find("owned") != std::string::npos);
  }
  const json *named = process_with_pid(snapshot, 1, gone);
  REQUIRE(named);
  CHECK((*named)["command"].is_null());
  CHECK((*named)["program"] == "torchrun");
  const json *unnamed = process_with_pid(snapshot, 1, gone_unnamed);
  REQUIRE(unnamed);
  CHECK((*unnamed)["program"].is_null());
}

} // namespace test_processes
