// What serve lets out about the people behind the GPU processes (README, serve, "Security"):
// program names rather than command lines, and user names only on loopback, unless --expose
// asks; a command line never in /metrics. A real process with a secret on its command line is
// reported by the stand-in nvidia-smi.
#include "process_support.hpp"
#include "serve_support.hpp"
#include "support.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

namespace test_serve_exposure {

using json = nlohmann::json;

namespace {

const std::string fake = test::quote(SCRIPTS_DIR "/fake-nvidia-smi");
const std::string secret = "--db-password=hunter2";

// A python3 with a secret among its arguments, run as root, on GPU 0 of the stand-in.
struct SecretJob {
  test::Background job{"exec /usr/bin/python3 -c 'import time; time.sleep(300)' " + secret};
  std::string folder = test::temporary_folder();
  SecretJob() {
    test::write_file(folder + "/apps", "GPU-00000000-0000-0000-0000-000000000000, " +
                                           std::to_string(job.pid()) + ", 1024 MiB, python3\n");
  }
  std::string environment() const {
    return "FAKE_NVSMI_APPS=" + test::quote(folder + "/apps") + " ";
  }
};

// The job's entry in /api/v1/snapshot, once serve has seen it.
json job_process(const test::Server &server, int pid) {
  json found;
  test::wait_until([&] {
    json snapshot = json::parse(server.get("/api/v1/snapshot").body, nullptr, false);
    if (!snapshot.is_object())
      return false;
    for (const json &process : snapshot["gpus"][0]["processes"])
      if (process["pid"] == pid && process["command"].is_string())
        found = process;
    return !found.is_null();
  });
  return found;
}

// The series' summary line: GPU 0 runs the job at 0 % utilization, so it is idle but held.
std::string summary(const test::Server &server) {
  json series = json::parse(server.get("/api/v1/series").body, nullptr, false);
  return series.is_object() && series["summary"].is_string() ? series["summary"].get<std::string>()
                                                             : std::string();
}

} // namespace

TEST_CASE("serve gives a process's program name, not its command line, unless asked") {
  SecretJob work;
  test::Server server("--source csv --interval 0.2 --nvidia-smi " + fake, work.environment());
  json process = job_process(server, work.job.pid());
  CHECK(process["command"] == "python3"); // code, not a script: the interpreter
  CHECK(process["program"] == "python3");
  CHECK(process["user"] == "root"); // loopback: user names stay
  CHECK_THAT(summary(server), Catch::Contains("1 idle but held (root)"));
  for (const char *path :
       {"/api/v1/snapshot", "/api/v1/history", "/api/v1/series", "/api/v1/legacy", "/metrics"})
    CHECK(server.get(path).body.find("hunter2") == std::string::npos);
  CHECK(server.stop() == 0);
}

TEST_CASE("serve --expose command-lines serves them in the API, never in /metrics") {
  SecretJob work;
  test::Server server("--source csv --interval 0.2 --expose command-lines --nvidia-smi " + fake,
                      work.environment());
  json process = job_process(server, work.job.pid());
  CHECK(process["command"].get<std::string>().find(secret) != std::string::npos);
  CHECK(server.get("/api/v1/series").body.find(secret) != std::string::npos);
  CHECK(server.get("/metrics").body.find("hunter2") == std::string::npos);
  CHECK(server.stop() == 0);
}

// Issue 39, item 6: the name every screen gives the work leaves with the sample, its arguments
// do not: `fleet` and the dashboard name a python3 job by its script.
TEST_CASE("serve gives a script's name for a python3 job, never its arguments") {
  std::string folder = test::temporary_folder();
  test::write_file(folder + "/train.py", "import time\ntime.sleep(300)\n");
  test::Background job("exec /usr/bin/python3 -u " + test::quote(folder + "/train.py") + " " +
                       secret);
  test::write_file(folder + "/apps", "GPU-00000000-0000-0000-0000-000000000000, " +
                                         std::to_string(job.pid()) + ", 1024 MiB, python3\n");
  REQUIRE(test::wait_until([&] {
    return test::read_file("/proc/" + std::to_string(job.pid()) + "/cmdline")
               .rfind("/usr/bin/python3", 0) == 0;
  }));
  test::Server server("--source csv --interval 0.2 --nvidia-smi " + fake,
                      "FAKE_NVSMI_APPS=" + test::quote(folder + "/apps") + " ");
  json process = job_process(server, job.pid());
  CHECK(process["command"] == "train.py");
  CHECK(process["program"] == "train.py");
  for (const char *path :
       {"/api/v1/snapshot", "/api/v1/history", "/api/v1/series", "/api/v1/legacy", "/metrics"})
    CHECK(server.get(path).body.find("hunter2") == std::string::npos);
  CHECK(server.stop() == 0);
}

TEST_CASE("serve off loopback withholds user names unless --expose users") {
  SecretJob work;
  // Per-process series asked for: the job's series, without its user.
  test::Server server("--listen 0.0.0.0:0 --metrics-processes --source csv --interval 0.2 "
                      "--nvidia-smi " +
                          fake,
                      work.environment());
  json process = job_process(server, work.job.pid());
  CHECK(process["user"].is_null());
  CHECK(process["uid"].is_null());
  std::string metrics = server.get("/metrics").body;
  CHECK(metrics.find("pid=\"" + std::to_string(work.job.pid()) + "\"") != std::string::npos);
  CHECK(metrics.find("user=\"") == std::string::npos);
  // The summary counts the held GPU and names nobody.
  CHECK_THAT(summary(server), Catch::Contains("1 idle but held") && !Catch::Contains("root"));
  CHECK(server.stop() == 0);

  test::Server exposed("--listen 0.0.0.0:0 --expose users --source csv --interval 0.2 "
                       "--nvidia-smi " +
                           fake,
                       work.environment());
  CHECK(job_process(exposed, work.job.pid())["user"] == "root");
  CHECK_THAT(summary(exposed), Catch::Contains("1 idle but held (root)"));
  CHECK(exposed.get("/metrics").body.find("user=\"root\"") != std::string::npos);
  CHECK(exposed.stop() == 0);
}

TEST_CASE("serve names users in /metrics by default, up to --metrics-users, none with 0") {
  SecretJob work;
  test::Server server("--source csv --interval 0.2 --nvidia-smi " + fake, work.environment());
  job_process(server, work.job.pid());
  std::string metrics = server.get("/metrics").body;
  CHECK(metrics.find("\nnvsmi_user_gpus{user=\"root\"} 1\n") != std::string::npos);
  CHECK(metrics.find(",user=\"root\"} 1\n") != std::string::npos); // nvsmi_gpu_user_processes
  CHECK(metrics.find("pid=\"") == std::string::npos); // no per-process series unless asked
  CHECK(server.stop() == 0);

  test::Server none("--metrics-users 0 --source csv --interval 0.2 --nvidia-smi " + fake,
                    work.environment());
  CHECK(job_process(none, work.job.pid())["user"] == "root"); // the API still says who
  metrics = none.get("/metrics").body;
  CHECK(metrics.find("nvsmi_gpu_info{") != std::string::npos);
  CHECK(metrics.find("user=\"") == std::string::npos);
  CHECK(metrics.find("nvsmi_user_") == std::string::npos);
  CHECK(none.stop() == 0);
}

} // namespace test_serve_exposure
