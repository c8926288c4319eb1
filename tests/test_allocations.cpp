// Which batch job holds each GPU (issue 29): the job mapping folder that deploy/slurm/'s prolog
// writes, read by the built agent with every sample (--job-mapping-dir), the allocated-but-idle
// state, and what serve withholds. The folder here is written by the test; tests/test_slurm.py
// has a real Slurm write it.
#include "snapshot_builders.hpp"
#include "support.hpp"

#include "formats/prometheus_metrics.hpp"
#include "host/job_mapping.hpp"
#include "nvsmi/gpu_state.hpp"
#include "serve/serve_exposure.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
#include <string>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

using test::quote;
using test::run_agent;
using json = nlohmann::json;
using namespace std::chrono_literals;

namespace {

const std::string fake = quote(SCRIPTS_DIR "/fake-nvidia-smi");

// Sets a file's mtime `ago` before now: the prolog wrote it then.
void written_ago(const std::string &path, std::chrono::seconds ago) {
  timeval times[2];
  ::gettimeofday(&times[0], nullptr);
  times[0].tv_sec -= static_cast<time_t>(ago.count());
  times[1] = times[0];
  REQUIRE(::utimes(path.c_str(), times) == 0);
}

// A record as the shipped prolog writes it.
void record(const std::string &dir, int gpu, const std::string &job, const std::string &user,
            std::chrono::seconds ago) {
  test::write_file(dir + "/" + std::to_string(gpu), job + "\n");
  if (!user.empty())
    test::write_file(dir + "/" + std::to_string(gpu) + ".user", user + "\n");
  written_ago(dir + "/" + std::to_string(gpu), ago);
}

} // namespace

TEST_CASE("allocations: each GPU gets the job, user and since of its record, null without one") {
  std::string dir = test::temporary_folder();
  record(dir, 0, "1234", "alice", 40min);
  record(dir, 1, "77", "bob", 1s);
  test::Run run = run_agent("snapshot --format json --source csv --kernel-log none --nvidia-smi " +
                            fake + " --job-mapping-dir " + quote(dir));
  REQUIRE(run.exit_code == 0);
  json snapshot = json::parse(run.out);
  const json &gpu0 = snapshot["gpus"][0]["allocation"];
  CHECK(gpu0["scheduler"] == "slurm");
  CHECK(gpu0["job_id"] == "1234");
  CHECK(gpu0["user"] == "alice");
  CHECK(gpu0["held_s"].get<long long>() >= 40 * 60);
  CHECK(gpu0["since"].get<std::string>().size() >= 20);
  CHECK(snapshot["gpus"][1]["allocation"]["job_id"] == "77");
  CHECK(snapshot["gpus"][1]["allocation"]["user"] == "bob");
  CHECK(snapshot["gpus"][2]["allocation"].is_null());
  CHECK(snapshot["gpus"][2].contains("allocation"));
}

TEST_CASE("allocations: the Slurm account from the record's .account file, null without one or "
          "where it is no account name or no plain file") {
  std::string dir = test::temporary_folder();
  record(dir, 0, "1234", "alice", 1s);
  test::write_file(dir + "/0.account", "physics\n");
  record(dir, 1, "77", "bob", 1s); // a DCGM-only prolog, or a site without accounting
  record(dir, 2, "78", "bob", 1s);
  test::write_file(dir + "/2.account", "phys/../root\n");
  record(dir, 3, "79", "bob", 1s);
  test::write_file(dir + "/3.account", "\x1b]0;title\x07\n");
  record(dir, 4, "80", "bob", 1s);
  test::write_file(dir + "/elsewhere", "physics\n");
  REQUIRE(::symlink((dir + "/elsewhere").c_str(), (dir + "/4.account").c_str()) == 0);
  record(dir, 5, "81", "bob", 1s);
  REQUIRE(::mkfifo((dir + "/5.account").c_str(), 0644) == 0);
  test::Run run = run_agent("snapshot --format json --source csv --kernel-log none --nvidia-smi " +
                            fake + " --job-mapping-dir " + quote(dir));
  REQUIRE(run.exit_code == 0);
  json snapshot = json::parse(run.out);
  CHECK(snapshot["gpus"][0]["allocation"]["account"] == "physics");
  for (int gpu : {1, 2, 3, 4, 5}) {
    INFO("GPU " << gpu);
    CHECK(snapshot["gpus"][gpu]["allocation"]["job_id"] == std::to_string(76 + gpu));
    CHECK(snapshot["gpus"][gpu]["allocation"]["account"].is_null());
  }
}

TEST_CASE("allocations: a GPU held 40 minutes with no process is allocated_idle, in JSON and the "
          "summary") {
  std::string dir = test::temporary_folder();
  std::string folder = test::temporary_folder();
  record(dir, 0, "1234", "alice", 40min); // no process on GPU 0
  record(dir, 1, "77", "bob", 40min);     // a process on GPU 1
  record(dir, 4, "88", "carol", 1min);    // no process yet, but just started
  test::write_file(folder + "/apps",
                   "GPU-00000000-0000-0000-0000-000000000001, 4242, 1024 MiB, python3\n");
  std::string env = "FAKE_NVSMI_APPS=" + quote(folder + "/apps") + " ";
  test::Run run = test::run_shell(env + quote(AGENT_BIN) +
                                  " snapshot --format json --source csv --kernel-log none "
                                  "--nvidia-smi " +
                                  fake + " --job-mapping-dir " + quote(dir));
  REQUIRE(run.exit_code == 0);
  json snapshot = json::parse(run.out);
  CHECK(snapshot["gpus"][0]["state"] == "allocated_idle");
  CHECK(snapshot["gpus"][1]["state"] != "allocated_idle");
  CHECK(snapshot["gpus"][4]["state"] != "allocated_idle");
  CHECK(snapshot["gpus"][7]["state"] == "free"); // no record, no process, 0 %
  test::Run table = test::run_shell(env + quote(AGENT_BIN) +
                                    " snapshot --format table --source csv --kernel-log none "
                                    "--nvidia-smi " +
                                    fake + " --job-mapping-dir " + quote(dir));
  REQUIRE(table.exit_code == 0);
  CHECK_THAT(table.out, Catch::Contains("1 allocated but idle (job 1234 of alice)"));
}

TEST_CASE(
    "allocations: without the folder read, no GPU has an allocation key (unknown, not none)") {
  test::Run run = run_agent("snapshot --format json --source csv --kernel-log none --nvidia-smi " +
                            fake + " --job-mapping-dir none");
  REQUIRE(run.exit_code == 0);
  json snapshot = json::parse(run.out);
  CHECK_FALSE(snapshot["gpus"][0].contains("allocation"));
}

TEST_CASE("allocations: a named folder that cannot be read is one line on stderr, and no "
          "allocation is invented") {
  std::string missing = test::temporary_folder() + "/missing";
  test::Run run = test::run_shell(quote(AGENT_BIN) +
                                  " snapshot --format json --source csv --kernel-log none "
                                  "--nvidia-smi " +
                                  fake + " --job-mapping-dir " + quote(missing));
  REQUIRE(run.exit_code == 0);
  CHECK_THAT(run.err, Catch::StartsWith("nvsmi-agent: "));
  CHECK_THAT(run.err, Catch::Contains("job mapping folder " + missing +
                                      ": No such file or directory: allocations unknown\n"));
  CHECK(test::non_empty_lines_of(run.err).size() == 1);
  CHECK_FALSE(json::parse(run.out)["gpus"][0].contains("allocation"));
}

TEST_CASE("allocations: hostile records are no allocation (links, FIFOs, non-numbers, odd users, "
          "huge files)") {
  std::string dir = test::temporary_folder();
  std::string outside = test::temporary_folder() + "/secret";
  test::write_file(outside, "999\n");
  REQUIRE(::symlink(outside.c_str(), (dir + "/0").c_str()) == 0); // a link is never followed
  REQUIRE(::mkfifo((dir + "/1").c_str(), 0644) == 0);             // would block a plain read
  test::write_file(dir + "/2", "12; rm -rf /\n");                 // not a job id
  test::write_file(dir + "/3", "55\n");
  test::write_file(dir + "/3.user", "evil\x1b[31mred\n"); // not an account name: user unknown
  test::write_file(dir + "/4", "66\n" + std::string(1 << 20, 'x'));
  test::write_file(dir + "/5x", "77\n");    // not a GPU index: DCGM's reader skips it too
  test::write_file(dir + "/00005", "78\n"); // more digits than any GPU index
  test::Run run = run_agent("snapshot --format json --source csv --kernel-log none --nvidia-smi " +
                            fake + " --job-mapping-dir " + quote(dir));
  REQUIRE(run.exit_code == 0);
  json gpus = json::parse(run.out)["gpus"];
  CHECK(gpus[0]["allocation"].is_null());
  CHECK(gpus[1]["allocation"].is_null());
  CHECK(gpus[2]["allocation"].is_null());
  CHECK(gpus[3]["allocation"]["job_id"] == "55");
  CHECK(gpus[3]["allocation"]["user"].is_null());
  CHECK(gpus[4]["allocation"]["job_id"] == "66"); // its first line; the rest is never read
  CHECK(gpus[5]["allocation"].is_null());
}

TEST_CASE("allocations: the reader looks at a bounded number of entries") {
  std::string dir = test::temporary_folder();
  for (int i = 0; i < 5000; ++i)
    test::write_file(dir + "/junk" + std::to_string(i), "");
  auto started = std::chrono::steady_clock::now();
  nvsmi::JobMapping mapping = nvsmi::read_job_mapping(dir, std::chrono::system_clock::now());
  REQUIRE(mapping.by_gpu_index);
  CHECK(mapping.by_gpu_index->empty());
  CHECK(std::chrono::steady_clock::now() - started < test::promptly);
}

TEST_CASE("allocations: allocated_idle needs the process list, the age, and no compute process") {
  nvsmi::Gpu gpu = test::quiet_gpu(0);
  nvsmi::Allocation allocation;
  allocation.job_id = "1234";
  allocation.user = "alice";
  allocation.held_s = 40 * 60;
  gpu.allocation = allocation;
  gpu.processes = std::vector<nvsmi::Process>{};
  CHECK(nvsmi::gpu_state(gpu) == nvsmi::GpuState::allocated_idle);
  CHECK(nvsmi::gpu_state_name(nvsmi::GpuState::allocated_idle) == "allocated but idle");
  nvsmi::Gpu unknown_processes = gpu;
  unknown_processes.processes.reset();
  CHECK(nvsmi::gpu_state(unknown_processes) == nvsmi::GpuState::idle);
  nvsmi::Gpu young = gpu;
  young.allocation->held_s = nvsmi::gpu_thresholds::allocated_idle_after_s - 1;
  CHECK(nvsmi::gpu_state(young) == nvsmi::GpuState::free);
  nvsmi::Gpu unknown_age = gpu;
  unknown_age.allocation->held_s.reset();
  CHECK(nvsmi::gpu_state(unknown_age) == nvsmi::GpuState::free);
  nvsmi::Gpu graphics_only = gpu;
  nvsmi::Process xorg;
  xorg.type = "G";
  graphics_only.processes->push_back(xorg);
  CHECK(nvsmi::gpu_state(graphics_only) == nvsmi::GpuState::allocated_idle);
  nvsmi::Gpu hot = gpu;
  hot.temperature_c = 95;
  CHECK(nvsmi::gpu_state(hot) == nvsmi::GpuState::hot);
}

TEST_CASE("allocations: serve withholds the job's user and account where users are not exposed") {
  nvsmi::Snapshot snapshot = test::quiet_machine(1);
  nvsmi::Allocation allocation;
  allocation.job_id = "1234";
  allocation.user = "alice";
  allocation.account = "physics";
  snapshot.gpus[0].allocation = allocation;
  nvsmi::Snapshot kept = snapshot;
  nvsmi::limit_exposure(kept, {false, true});
  CHECK(kept.gpus[0].allocation->user == nvsmi::Text("alice"));
  CHECK(kept.gpus[0].allocation->account == nvsmi::Text("physics"));
  nvsmi::limit_exposure(snapshot, {false, false});
  CHECK_FALSE(snapshot.gpus[0].allocation->user);
  CHECK_FALSE(snapshot.gpus[0].allocation->account);
  CHECK(snapshot.gpus[0].allocation->job_id == "1234");
}

TEST_CASE("allocations: the shipped tmpfiles.d line makes the job mapping folder root's alone") {
  std::string root = test::root_made_by_shipped_tmpfiles();
  if (root.empty())
    return;
  std::string folder = root + std::string(nvsmi::default_job_mapping_dir);
  struct stat info {};
  REQUIRE(::stat(folder.c_str(), &info) == 0);
  CHECK(S_ISDIR(info.st_mode));
  CHECK((info.st_mode & 07777) == 0755); // what the prolog requires: nobody else may write
  CHECK(info.st_uid == 0);
}

namespace {

// A `watch --json-log` line of one idle H100 with no process, held by job 1234 of `user` for
// `held_s`, `seconds` after 10:00 UTC.
std::string allocated_line(int seconds, long long held_s, const json &user) {
  json gpu = {{"index", 0},
              {"uuid", "GPU-00000000-0000-0000-0000-000000000000"},
              {"name", "NVIDIA H100"},
              {"memory_total_mib", 81559},
              {"memory_used_mib", 0},
              {"utilization_gpu_percent", 0},
              {"processes", json::array()},
              {"allocation",
               {{"scheduler", "slurm"},
                {"job_id", "1234"},
                {"user", user},
                {"since", "2024-03-14T09:20:00+00:00"},
                {"held_s", held_s}}}};
  char stamp[64];
  std::snprintf(stamp, sizeof stamp, "2024-03-14T10:%02d:%02d+00:00", seconds / 60, seconds % 60);
  json line = {{"schema", "nvsmi-agent.snapshot/1"},
               {"source", "csv"},
               {"timestamp", stamp},
               {"gpus", json::array({gpu})},
               {"host", nullptr}};
  return line.dump() + "\n";
}

} // namespace

TEST_CASE("allocations: report reads the allocation back and finds the GPU allocated but idle") {
  std::string log = test::temporary_folder() + "/gpu-log.jsonl";
  std::string text;
  for (int i = 0; i <= 10; ++i)
    text += allocated_line(i * 5, 40 * 60 - 50 + i * 5, "alice");
  test::write_file(log, text);
  test::Run run = run_agent("report " + quote(log));
  INFO(run.out << run.err);
  REQUIRE(run.exit_code == 0);
  CHECK_THAT(run.out,
             Catch::Contains("allocated to job 1234 of alice for 40 min, no process on it"));

  // A user that no prolog writes is not repeated: the job is still named.
  text.clear();
  for (int i = 0; i <= 10; ++i)
    text += allocated_line(i * 5, 40 * 60 - 50 + i * 5, "\x1b[31mevil");
  test::write_file(log, text);
  run = run_agent("report " + quote(log));
  REQUIRE(run.exit_code == 0);
  CHECK_THAT(run.out, Catch::Contains("allocated to job 1234 for 40 min, no process on it"));
  CHECK_THAT(run.out, !Catch::Contains("evil"));
}

TEST_CASE("allocations: watch reads the folder with every sample, and says a missing one once") {
  std::string dir = test::temporary_folder();
  record(dir, 2, "4321", "bob", 1s);
  std::string watch = quote(AGENT_BIN) +
                      " watch --format json --count 3 --interval 0.2 --source "
                      "csv --kernel-log none --nvidia-smi " +
                      fake + " --job-mapping-dir ";
  test::Run run = test::run_shell(watch + quote(dir));
  REQUIRE(run.exit_code == 0);
  std::vector<std::string> lines = test::non_empty_lines_of(run.out);
  REQUIRE(lines.size() == 3);
  for (const std::string &line : lines) {
    json gpus = json::parse(line)["gpus"];
    CHECK(gpus[2]["allocation"]["job_id"] == "4321");
    CHECK(gpus[3]["allocation"].is_null());
  }

  std::string missing = dir + "/missing";
  run = test::run_shell(watch + quote(missing));
  REQUIRE(run.exit_code == 0);
  CHECK(test::non_empty_lines_of(run.out).size() == 3);
  std::size_t said = 0;
  for (const std::string &line : test::non_empty_lines_of(run.err))
    said += line.find("job mapping folder " + missing) != std::string::npos;
  CHECK(said == 1);
}

TEST_CASE("allocations: /metrics has one info series per held GPU, with the user only where "
          "serve shows users") {
  nvsmi::Snapshot snapshot = test::quiet_machine(3);
  nvsmi::Allocation allocation;
  allocation.job_id = "1234";
  allocation.user = "alice";
  snapshot.gpus[1].allocation = allocation;
  snapshot.allocations_read = true;
  auto series = [](const std::string &metrics) {
    std::vector<std::string> found;
    for (const std::string &line : test::lines_of(metrics))
      if (line.rfind("nvsmi_gpu_allocation_info{", 0) == 0)
        found.push_back(line);
    return found;
  };
  std::vector<std::string> shown = series(nvsmi::format_snapshot_metrics(snapshot));
  REQUIRE(shown.size() == 1);
  CHECK_THAT(shown[0], Catch::StartsWith("nvsmi_gpu_allocation_info{gpu=\"1\""));
  CHECK_THAT(shown[0], Catch::EndsWith(",job_id=\"1234\",user=\"alice\"} 1"));
  nvsmi::limit_exposure(snapshot, {false, false});
  std::vector<std::string> withheld = series(nvsmi::format_snapshot_metrics(snapshot));
  REQUIRE(withheld.size() == 1);
  CHECK_THAT(withheld[0], Catch::EndsWith(",job_id=\"1234\"} 1"));
}
