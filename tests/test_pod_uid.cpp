// A GPU process in a Kubernetes pod, end to end: a real process is moved into a cgroup named as
// the kubelet names a pod's container (systemd driver), the stand-in nvidia-smi reports it, and
// the built agent puts the pod UID and container id it reads from /proc/PID/cgroup on the
// process, in the JSON and as the `pod_uid` label of /metrics (docs/KUBERNETES.md: the only pod
// identity the agent has; no pod names).
#include "process_support.hpp"
#include "serve_support.hpp"
#include "support.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

namespace test_pod_uid {

using json = nlohmann::json;

namespace {

const std::string fake = test::quote(SCRIPTS_DIR "/fake-nvidia-smi");
const std::string gpu0 = "GPU-00000000-0000-0000-0000-000000000000";

// The mount points of this machine's cgroup hierarchies, the unified one (v2) first, then v1's
// named ones, then the controllers: any of them whose cgroups root may make will do.
std::vector<std::string> cgroup_mounts() {
  std::vector<std::string> unified, v1;
  std::ifstream mounts("/proc/self/mounts");
  for (std::string line; std::getline(mounts, line);) {
    std::istringstream fields(line);
    std::string device, point, type;
    fields >> device >> point >> type;
    if (type == "cgroup2")
      unified.push_back(point);
    else if (type == "cgroup")
      v1.push_back(point);
  }
  unified.insert(unified.end(), v1.begin(), v1.end());
  return unified;
}

// A process of this test's in a cgroup of the kubelet's names, under a folder of this run's own
// (so parallel runs never share one); it is killed and the cgroups removed at the end. None
// (`placed()` false) where no hierarchy lets this user make cgroups: not root, or a read-only
// cgroupfs in a container.
class PodProcess {
public:
  PodProcess(const std::string &pod_uid, const std::string &container_id) {
    std::string underscored = pod_uid;
    for (char &c : underscored)
      if (c == '-')
        c = '_';
    std::string tag = test::temporary_folder();
    tag = "nvsmi-test-" + tag.substr(tag.rfind('.') + 1);
    relative_ = {tag, "kubepods.slice", "kubepods-besteffort.slice",
                 "kubepods-besteffort-pod" + underscored + ".slice",
                 "cri-containerd-" + container_id + ".scope"};
    if (::geteuid() != 0)
      return;
    for (const std::string &mount : cgroup_mounts()) {
      if (try_place(mount))
        return;
    }
  }
  ~PodProcess() {
    process_.reset(); // killed; its cgroup empties once it is reaped
    for (auto made = made_.rbegin(); made != made_.rend(); ++made)
      test::wait_until([&] { return ::rmdir(made->c_str()) == 0 || errno == ENOENT; });
  }
  PodProcess(const PodProcess &) = delete;
  PodProcess &operator=(const PodProcess &) = delete;

  bool placed() const { return process_ != nullptr; }
  int pid() const { return process_->pid(); }

private:
  bool try_place(const std::string &mount) {
    std::string path = mount;
    std::vector<std::string> made;
    for (const std::string &part : relative_) {
      path += "/" + part;
      if (::mkdir(path.c_str(), 0755) != 0)
        break;
      made.push_back(path);
    }
    auto process = std::make_unique<test::Background>("exec sleep 300");
    bool moved = made.size() == relative_.size() && [&] {
      std::ofstream procs(path + "/cgroup.procs");
      procs << process->pid() << '\n';
      procs.flush();
      return static_cast<bool>(procs);
    }();
    std::string cgroup = test::read_file("/proc/" + std::to_string(process->pid()) + "/cgroup");
    if (moved && cgroup.find(relative_.back()) != std::string::npos) {
      process_ = std::move(process);
      made_ = std::move(made);
      return true;
    }
    process.reset();
    for (auto left = made.rbegin(); left != made.rend(); ++left)
      test::wait_until([&] { return ::rmdir(left->c_str()) == 0 || errno == ENOENT; });
    return false;
  }

  std::vector<std::string> relative_, made_;
  std::unique_ptr<test::Background> process_;
};

// The stand-in's compute-apps: the pod's process on GPU 0.
std::string apps_environment(int pid) {
  std::string folder = test::temporary_folder();
  test::write_file(folder + "/apps", gpu0 + ", " + std::to_string(pid) + ", 1024 MiB, python3\n");
  return "FAKE_NVSMI_APPS=" + test::quote(folder + "/apps") + " ";
}

} // namespace

TEST_CASE("a GPU process in a pod's cgroup carries its pod UID and container, in JSON and "
          "/metrics") {
  const std::string pod_uid = "0a5841ae-668e-cfc9-a774-" + [] {
    char tail[13];
    std::snprintf(tail, sizeof tail, "%012x", static_cast<unsigned>(::getpid()));
    return std::string(tail);
  }();
  const std::string container(64, 'c');
  PodProcess pod(pod_uid, container);
  if (!pod.placed()) {
    WARN("skipped: no cgroup hierarchy here lets this user make a cgroup");
    return;
  }
  std::string environment = apps_environment(pod.pid());

  test::Run run = test::run_shell(environment + AGENT_BIN " snapshot --source csv --format json " +
                                  "--nvidia-smi " + fake);
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  json snapshot = json::parse(run.out), process;
  for (const json &p : snapshot["gpus"][0]["processes"])
    if (p["pid"] == pod.pid())
      process = p;
  REQUIRE(process.is_object());
  CHECK(process["pod_uid"] == pod_uid);
  CHECK(process["container"] == container);

  // The pod and container are labels of the per-process series, which serve writes when asked.
  test::Server server("--metrics-processes --source csv --interval 0.2 --nvidia-smi " + fake,
                      environment);
  std::string series;
  test::wait_until([&] {
    std::istringstream metrics(server.get("/metrics").body);
    for (std::string line; std::getline(metrics, line);)
      if (line.rfind("nvsmi_gpu_process_memory_used_bytes{", 0) == 0 &&
          line.find("pid=\"" + std::to_string(pod.pid()) + "\"") != std::string::npos)
        series = line;
    return !series.empty();
  });
  INFO(server.log());
  CHECK_THAT(series, Catch::Contains("pod_uid=\"" + pod_uid + "\""));
  CHECK_THAT(series, Catch::Contains("container=\"" + container + "\""));
  CHECK(server.stop() == 0);
}

} // namespace test_pod_uid
