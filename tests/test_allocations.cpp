// Which batch job holds each GPU (issue 29): the job mapping folder that deploy/slurm/'s prolog
// writes, read by the built agent with every sample (--job-mapping-dir), the allocated-but-idle
// state, what serve withholds, and `job JOBID` from the local serve's history or the default log.
// The folder here is written by the test; tests/test_slurm.py has a real Slurm write it.
#include "process_support.hpp"
#include "serve_support.hpp"
#include "snapshot_builders.hpp"
#include "support.hpp"

#include "formats/prometheus_metrics.hpp"
#include "host/job_mapping.hpp"
#include "nvsmi/gpu_state.hpp"
#include "serve/serve_exposure.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

namespace test_allocations {

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

namespace {

// The stand-in as the A100 with MIG on (GPU instance 1 free, 2 with pid 3131 of python) and
// `dir` as the job mapping folder.
std::string mig_agent(const std::string &arguments, const std::string &dir) {
  return "FAKE_NVSMI_XML=" + quote(test::fixture_path("xml/a100-mig-v12.xml")) +
         " FAKE_NVSMI_LIST=" + quote(test::fixture_path("listing/a100-mig-3g-2g.txt")) + " " +
         quote(AGENT_BIN) + " " + arguments + " --nvidia-smi " + fake + " --job-mapping-dir " +
         quote(dir);
}

} // namespace

TEST_CASE("allocations: a MIG instance's `GPU.GPU_INSTANCE` record (the DCGM exporter's form) is "
          "its allocation: allocated_idle when held with no process, named in the summary, never "
          "picked") {
  std::string dir = test::temporary_folder();
  test::write_file(dir + "/0.1", "4321\n"); // GPU 0's GPU instance 1: no process on it
  test::write_file(dir + "/0.1.user", "bob\n");
  test::write_file(dir + "/0.1.account", "physics\n");
  written_ago(dir + "/0.1", 30min);
  test::write_file(dir + "/0.2", "77\n"); // GPU instance 2: pid 3131 runs there
  written_ago(dir + "/0.2", 30min);
  test::Run run = test::run_shell(mig_agent("snapshot --format json", dir));
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  json gpu = json::parse(run.out)["gpus"][0];
  CHECK(gpu["allocation"].is_null()); // the GPU itself has no record
  json devices = gpu["mig_devices"];
  REQUIRE(devices.size() == 2);
  CHECK(devices[0]["allocation"]["job_id"] == "4321");
  CHECK(devices[0]["allocation"]["user"] == "bob");
  CHECK(devices[0]["allocation"]["account"] == "physics");
  CHECK(devices[0]["allocation"]["held_s"].get<long>() >= 30 * 60);
  CHECK(devices[0]["state"] == "allocated_idle");
  CHECK(devices[1]["allocation"]["job_id"] == "77");
  CHECK(devices[1]["state"] == "in_use");

  test::Run table = test::run_shell(mig_agent("snapshot --format table", dir));
  REQUIRE(table.exit_code == 0);
  CHECK_THAT(table.out, Catch::StartsWith("1 GPU, 2 MIG instances: 1 in use \u00b7 1 allocated but "
                                          "idle (job 4321 of bob)"));
  // report reads each instance's allocation back from the log, and leads with the same answer.
  std::string log = test::temporary_folder() + "/gpu-log.jsonl";
  test::write_file(log, json::parse(run.out).dump() + "\n");
  test::Run report = run_agent("report " + quote(log));
  INFO(report.err);
  REQUIRE(report.exit_code == 0);
  CHECK_THAT(report.out, Catch::StartsWith("1 GPU, 2 MIG instances: 1 in use \u00b7 1 allocated "
                                           "but idle (job 4321 of bob)"));

  // A young record with no process yet is free, but its job's: pick offers it to nobody else.
  written_ago(dir + "/0.1", 1min);
  run = test::run_shell(mig_agent("snapshot --format json", dir));
  REQUIRE(run.exit_code == 0);
  CHECK(json::parse(run.out)["gpus"][0]["mig_devices"][0]["state"] == "free");
  std::string locks = " --lock-dir " + quote(test::temporary_folder());
  test::Run pick = test::run_shell(mig_agent("pick --mig" + locks, dir));
  CHECK(pick.exit_code == 9);
  CHECK_THAT(pick.err, Catch::Contains("GPU 0 MIG 0 (3g.40gb) allocated to job 4321 of bob"));
  // That job itself is given its own instance.
  test::Run own = test::run_shell("SLURM_JOB_ID=4321 " + mig_agent("pick --mig" + locks, dir));
  INFO(own.err);
  CHECK(own.exit_code == 0);
  CHECK_THAT(own.out, Catch::Contains("MIG-00000000-0000-0000-0000-0000000000b0"));
}

TEST_CASE("allocations: job and report --by-job give each MIG instance a job held, with its own "
          "memory and processes, and no utilization or energy of the GPU's") {
  std::string dir = test::temporary_folder();
  test::write_file(dir + "/0.1", "4321\n"); // GPU instance 1 (MIG 0, 3g.40gb): no process
  test::write_file(dir + "/0.1.user", "bob\n");
  test::write_file(dir + "/0.1.account", "physics\n");
  test::write_file(dir + "/0.2", "77\n"); // GPU instance 2 (MIG 1, 2g.20gb): pid 3131, 3.9 GiB
  test::Run run = test::run_shell(mig_agent("snapshot --format json", dir));
  REQUIRE(run.exit_code == 0);
  // 25 minutes of samples, 10 s apart, as watch --json-log would have logged them.
  json sample = json::parse(run.out);
  std::string text;
  for (int i = 0; i < 150; ++i) {
    char stamp[64];
    std::snprintf(stamp, sizeof stamp, "2024-03-14T10:%02d:%02d+00:00", i * 10 / 60, i * 10 % 60);
    sample["timestamp"] = stamp;
    text += sample.dump() + "\n";
  }
  std::string log = test::temporary_folder() + "/gpu-log.jsonl";
  test::write_file(log, text);

  test::Run idle = run_agent("job 4321 --log " + quote(log));
  INFO(idle.err);
  REQUIRE(idle.exit_code == 0);
  CHECK_THAT(idle.out, Catch::StartsWith("job 4321 of bob: 1 MIG instance (GPU 0 MIG 0 (3g.40gb)) "
                                         "for 24 min 50 s, account physics"));
  CHECK_THAT(idle.out, Catch::Contains("  utilization  unknown\n"));
  CHECK_THAT(idle.out, Catch::Contains("  energy       unknown\n"));
  CHECK_THAT(idle.out,
             Catch::Contains("  memory       GPU 0 MIG 0 (3g.40gb) peak 0.0 of 39.2 GiB\n"));
  CHECK_THAT(idle.out, Catch::Contains("warning: allocated but unused: no process on its 1 MIG "
                                       "instance for 100 % of the time"));
  test::Run busy = run_agent("job 77 --log " + quote(log));
  REQUIRE(busy.exit_code == 0);
  CHECK_THAT(busy.out, Catch::Contains("unused       0.0 % of the time with no process"));
  CHECK_THAT(busy.out,
             Catch::Contains("advice       a MIG instance of a smaller profile would do"));

  test::Run report = run_agent("report --by-job --format json " + quote(log));
  REQUIRE(report.exit_code == 0);
  json jobs = json::parse(report.out)["jobs"];
  REQUIRE(jobs.size() == 2);
  CHECK(jobs[0]["job_id"] == "4321");
  REQUIRE(jobs[0]["gpus"].size() == 1);
  CHECK(jobs[0]["gpus"][0]["index"] == 0);
  CHECK(jobs[0]["gpus"][0]["mig_device"] == 0);
  CHECK(jobs[0]["gpus"][0]["profile"] == "3g.40gb");
  CHECK(jobs[0]["gpus"][0]["memory_total_mib"] == 40192);
  CHECK(jobs[1]["gpus"][0]["mig_device"] == 1);
  CHECK(jobs[1]["gpus"][0]["peak_memory_mib"] == 4020);
}

TEST_CASE("allocations: MIG record names other than GPU.GPU_INSTANCE (digits, at most four each) "
          "are no allocation") {
  std::string dir = test::temporary_folder();
  for (const char *name : {"0.1.2", "0.", ".1", "0.12345", "12345.1", "0.1x", "0..1", "0.-1"})
    test::write_file(dir + "/" + name, "55\n");
  test::write_file(dir + "/0.2", "66\n");
  test::write_file(dir + "/target", "77\n");
  std::filesystem::create_symlink(dir + "/target", dir + "/0.3"); // never followed
  nvsmi::JobMapping mapping = nvsmi::read_job_mapping(dir, std::chrono::system_clock::now());
  REQUIRE(mapping.by_gpu_index);
  CHECK(mapping.by_gpu_index->empty());
  REQUIRE(mapping.by_instance.size() == 1);
  CHECK(mapping.by_instance.begin()->first == std::pair<int, int>(0, 2));
  CHECK(mapping.by_instance.begin()->second.job_id == "66");

  // An instance id no record name can have (a hostile --nvidia-smi's 2^32 + 2) is no record's,
  // not record 0.2's by a narrowing.
  nvsmi::Snapshot snapshot = test::quiet_machine(1);
  nvsmi::MigDevice device;
  device.gpu_instance_id = 4294967298LL;
  snapshot.gpus[0].mig_devices = std::vector<nvsmi::MigDevice>{device, device};
  (*snapshot.gpus[0].mig_devices)[1].gpu_instance_id = 2;
  nvsmi::attach_allocations(snapshot, *mapping.by_gpu_index, mapping.by_instance);
  CHECK_FALSE(snapshot.gpus[0].mig_devices->at(0).allocation);
  REQUIRE(snapshot.gpus[0].mig_devices->at(1).allocation);
  CHECK(snapshot.gpus[0].mig_devices->at(1).allocation->job_id == "66");
}

TEST_CASE("allocations: serve serves a MIG instance's allocation (its info series, its "
          "allocated_idle state, its history) and withholds its user where users are hidden") {
  std::string dir = test::temporary_folder();
  test::write_file(dir + "/0.1", "4321\n");
  test::write_file(dir + "/0.1.user", "bob\n");
  written_ago(dir + "/0.1", 30min);
  test::Server agent(
      "--source xml --interval 0.3 --nvidia-smi " + fake + " --job-mapping-dir " + quote(dir),
      "FAKE_NVSMI_XML=" + quote(test::fixture_path("xml/a100-mig-v12.xml")) +
          " FAKE_NVSMI_LIST=" + quote(test::fixture_path("listing/a100-mig-3g-2g.txt")));
  std::string m;
  REQUIRE(test::wait_until([&] {
    m = agent.get("/metrics").body;
    return m.find("nvsmi_mig_allocation_info") != std::string::npos;
  }));
  const std::string device0 = "{gpu=\"0\",gpu_uuid=\"GPU-00000000-0000-0000-0000-0000000000a1\","
                              "uuid=\"MIG-00000000-0000-0000-0000-0000000000b0\",profile=\"3g."
                              "40gb\",gpu_instance=\"1\",compute_instance=\"0\"";
  CHECK_THAT(m, Catch::Contains("\nnvsmi_mig_allocation_info" + device0 +
                                ",job_id=\"4321\",user=\"bob\"} 1\n"));
  CHECK_THAT(m, Catch::Contains("\nnvsmi_mig_state" + device0 + ",state=\"allocated_idle\"} 1\n"));
  CHECK(m.find("nvsmi_mig_allocation_info{gpu=\"0\",gpu_uuid=\"GPU-00000000-0000-0000-0000-"
               "0000000000a1\",uuid=\"MIG-00000000-0000-0000-0000-0000000000b1\"") ==
        std::string::npos); // GPU instance 2 has no record
  // The history keeps it (serve's compact samples), so the dashboard says what /metrics does.
  json history = json::parse(agent.get("/api/v1/history").body);
  json last = history["samples"].back()["snapshot"]["gpus"][0]["mig_devices"][0];
  CHECK(last["allocation"]["job_id"] == "4321");
  CHECK(last["state"] == "allocated_idle");
  agent.stop();

  nvsmi::Snapshot snapshot = test::quiet_machine(1);
  nvsmi::MigDevice device;
  nvsmi::Allocation allocation;
  allocation.job_id = "4321";
  allocation.user = "bob";
  allocation.account = "physics";
  device.allocation = allocation;
  snapshot.gpus[0].mig_devices = std::vector<nvsmi::MigDevice>{device};
  nvsmi::limit_exposure(snapshot, {false, false});
  const nvsmi::Allocation &withheld = *snapshot.gpus[0].mig_devices->at(0).allocation;
  CHECK(withheld.job_id == "4321");
  CHECK_FALSE(withheld.user);
  CHECK_FALSE(withheld.account);
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

namespace {

// `job ARGUMENTS` with NVSMI_JOB_LOG set to `log`: the default log, away from /var/log.
test::Run job_without_log(const std::string &arguments, const std::string &log) {
  return test::run_shell("NVSMI_JOB_LOG=" + quote(log) + " timeout 120 " + quote(AGENT_BIN) +
                         " job " + arguments);
}

// A loopback HTTP server that answers every request with `status` and `body` (Python's
// http.server, in the background); its port once it listens.
struct FakeServe {
  std::string folder = test::temporary_folder();
  std::unique_ptr<test::Background> server;
  int port = 0;
  FakeServe(int status, const std::string &headers, const std::string &body) {
    test::write_file(folder + "/body", body);
    test::write_file(folder + "/serve.py", R"(import http.server, sys
body = open(sys.argv[1], "rb").read()
class Answer(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(int(sys.argv[2]))
        for header in filter(None, sys.argv[3].split("|")):
            name, value = header.split(": ", 1)
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
server = http.server.HTTPServer(("127.0.0.1", 0), Answer)
open(sys.argv[4] + ".tmp", "w").write(str(server.server_port))
__import__("os").rename(sys.argv[4] + ".tmp", sys.argv[4])
server.serve_forever()
)");
    server = std::make_unique<test::Background>(
        "exec /usr/bin/python3 " + quote(folder + "/serve.py") + " " + quote(folder + "/body") +
        " " + std::to_string(status) + " " + quote(headers) + " " + quote(folder + "/port"));
    REQUIRE(test::wait_until([&] { return std::filesystem::exists(folder + "/port"); }));
    port = std::stoi(test::read_file(folder + "/port"));
  }
};

} // namespace

TEST_CASE("job without --log reads the local serve's history and says so; with neither it nor the "
          "default log, one line names both (exit 7)") {
  std::string dir = test::temporary_folder();
  record(dir, 0, "4321", "alice", 30s);
  record(dir, 1, "4321", "alice", 30s);
  std::string none = dir + "/no-such-log.jsonl.gz";
  // The stand-in in its demo mode: its samples' times are the clock's, as a live GPU's are.
  // An interval of 1 s: serve answers its history only while its last sample is at most three
  // intervals old, which a busy machine's stand-in keeps to at 1 s.
  test::Server serve("--nvidia-smi " + fake + " --source csv --kernel-log none --interval 1 " +
                         "--job-mapping-dir " + quote(dir),
                     "FAKE_NVSMI_MODE=demo");
  REQUIRE(test::wait_until([&] {
    test::Http history = serve.get("/api/v1/history");
    return history.status == 200 && json::parse(history.body)["samples"].size() >= 3;
  }));
  std::string where =
      "serve's history at http://127.0.0.1:" + std::to_string(serve.port()) + "/api/v1/history";
  std::string at = " --serve 127.0.0.1:" + std::to_string(serve.port());
  test::Run found = job_without_log("4321" + at, none);
  INFO(found.err);
  REQUIRE(found.exit_code == 0);
  CHECK_THAT(found.out, Catch::StartsWith("job 4321 of alice: 2 GPUs (0, 1)"));
  CHECK_THAT(found.err, Catch::Contains("nvsmi-agent: job 4321: from " + where +
                                        ", which keeps the last 3600 s"));
  CHECK(test::non_empty_lines_of(found.err).size() == 1);
  json document = json::parse(job_without_log("4321 --format json" + at, none).out);
  CHECK(document["job"]["job_id"] == "4321");

  // Not in the serve's history, and no log: exit 6, both places named.
  test::Run other = job_without_log("999" + at, none);
  CHECK(other.exit_code == 6);
  CHECK_THAT(other.err,
             Catch::Contains("job 999 not found: " + where +
                             ", which keeps the last 3600 s: no sample of it; the log " + none +
                             ": No such file or directory. Name its log with "
                             "--log FILE"));
  CHECK(test::non_empty_lines_of(other.err).size() == 1);

  REQUIRE(serve.stop() == 0);
  test::Run neither = job_without_log("4321" + at, none);
  CHECK(neither.exit_code == 7);
  CHECK_THAT(neither.err, Catch::Contains("job 4321 not found: " + where + ": no serve answered"));
  CHECK_THAT(neither.err, Catch::Contains("the log " + none + ": No such file or directory"));
  CHECK(test::non_empty_lines_of(neither.err).size() == 1);
  CHECK(neither.out.empty());
}

TEST_CASE("job without --log reads the default log and its rotated files where no serve answers") {
  std::string dir = test::temporary_folder();
  record(dir, 2, "4321", "bob", 30s);
  std::string log = dir + "/gpu-log.jsonl.gz";
  std::string watch = "FAKE_NVSMI_MODE=demo " + quote(AGENT_BIN) +
                      " watch --count 3 --interval 0.5 --source csv " +
                      "--kernel-log none --nvidia-smi " + fake + " --job-mapping-dir " +
                      quote(dir) + " --json-log " + quote(log);
  REQUIRE(test::run_shell(watch).exit_code == 0);
  REQUIRE(::rename(log.c_str(), (log + ".1").c_str()) == 0);
  REQUIRE(test::run_shell(watch).exit_code == 0);
  std::string nobody = " --serve 127.0.0.1:" + std::to_string(test::free_port());
  test::Run found = job_without_log("4321 --format json" + nobody, log);
  INFO(found.err);
  REQUIRE(found.exit_code == 0);
  CHECK_THAT(found.err, Catch::Contains("job 4321: from the log " + log + " and 1 rotated file"));
  json job = json::parse(found.out)["job"];
  CHECK(job["user"] == "bob");
  CHECK(job["gpus"].size() == 1);
}

TEST_CASE("job reads only a serve on loopback, follows no redirect and checks what it answers") {
  std::string none = test::temporary_folder() + "/none.jsonl.gz";
  for (const char *address : {"10.0.0.1:9437", "localhost:9437", "gpu7:9437",
                              "https://127.0.0.1:9437", "[2001:db8::1]:9437"}) {
    INFO(address);
    test::Run refused = job_without_log("4321 --serve " + quote(address), none);
    CHECK(refused.exit_code == 2);
    CHECK_THAT(refused.err, Catch::Contains("is not a loopback address"));
  }
  // Whatever listens there is another process: a redirect off the machine is not followed.
  FakeServe redirect(301, "Location: http://192.0.2.1:9437/api/v1/history", "");
  test::Run moved =
      job_without_log("4321 --serve 127.0.0.1:" + std::to_string(redirect.port), none);
  CHECK(moved.exit_code == 7);
  CHECK_THAT(moved.err, Catch::Contains("the serve answered HTTP 301"));
  // A history whose sample is no snapshot, and one of hostile bytes, are said and passed over.
  for (const std::string &body :
       {std::string(R"({"schema":"nvsmi-agent.history/1","samples":[{"received":1,"snapshot":)"
                    R"({"schema":"x"}}]})"),
        std::string("{\"schema\":\"\x1b[31mevil\"}"), std::string(100000, '[')}) {
    FakeServe hostile(200, "Content-Type: application/json", body);
    test::Run run = job_without_log("4321 --serve 127.0.0.1:" + std::to_string(hostile.port), none);
    INFO(run.err);
    CHECK(run.exit_code == 7);
    CHECK_THAT(run.err, Catch::Contains("answered what is not serve's history"));
    CHECK(run.err.find('\x1b') == std::string::npos);
    CHECK(test::non_empty_lines_of(run.err).size() == 1);
  }
}

} // namespace test_allocations
