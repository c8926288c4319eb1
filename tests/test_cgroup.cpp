#include "nvsmi/cgroup.hpp"

#include "support.hpp"

#include <catch2/catch.hpp>

namespace test_cgroup {

using namespace nvsmi;

namespace {

Placement fixture(const std::string &name) {
  return read_cgroup(test::read_file(test::fixture_path("cgroup/" + name)));
}

void check_nothing(const Placement &p) {
  CHECK_FALSE(p.container);
  CHECK_FALSE(p.pod_uid);
  CHECK_FALSE(p.slurm_job_id);
  CHECK_FALSE(p.systemd_unit);
}

} // namespace

TEST_CASE("cgroup: Docker, systemd driver on cgroup v2") {
  Placement p = fixture("docker-v2-systemd.txt");
  CHECK(p.container == "04153230d6b73123fe850bafae4862ba65101c918af4eb48613de8d052c33195");
  CHECK(p.systemd_unit ==
        "docker-04153230d6b73123fe850bafae4862ba65101c918af4eb48613de8d052c33195.scope");
  CHECK_FALSE(p.pod_uid);
  CHECK_FALSE(p.slurm_job_id);
}

TEST_CASE("cgroup: Docker, cgroupfs driver on cgroup v1, whatever the order of the lines") {
  std::string text = test::read_file(test::fixture_path("cgroup/docker-v1-cgroupfs.txt"));
  const std::string id = "97ca6a0a2da2d5446fb49c6997c92bafa9ed011974991a2ec42042b85ebc452c";
  Placement p = read_cgroup(text);
  CHECK(p.container == id);
  CHECK_FALSE(p.systemd_unit); // /docker/ID is no unit of systemd
  CHECK_FALSE(p.pod_uid);

  // The same lines reversed, and with the root `rdma:/` line first.
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    lines.insert(lines.begin(), text.substr(start, end - start));
    start = end + 1;
  }
  std::string reversed;
  for (const std::string &line : lines)
    reversed += line + "\n";
  CHECK(read_cgroup(reversed).container == id);
}

TEST_CASE("cgroup: the memory, pids and cpu lines speak before the others") {
  const std::string id(64, 'a');
  // A controller that some tool moved elsewhere must not win over memory's line.
  Placement p = read_cgroup("9:blkio:/system.slice/other.service\n"
                            "4:memory:/docker/" +
                            id +
                            "\n"
                            "1:name=systemd:/system.slice/containerd.service\n"
                            "0::/system.slice/containerd.service\n");
  CHECK(p.container == id);
  CHECK(p.systemd_unit == "containerd.service"); // from name=systemd, not blkio's other.service
}

TEST_CASE("cgroup: Kubernetes, cgroupfs driver on cgroup v1") {
  Placement p = fixture("k8s-v1-cgroupfs-containerd.txt");
  CHECK(p.container == "afa42b7c8dcb78ea7e80708b32a423e32f61f3ec4e1645a09d1ad4693c4d3bd9");
  CHECK(p.pod_uid == "696b76ad-6d5f-47c5-d153-b5a4227e43b2");
  CHECK_FALSE(p.systemd_unit);
  CHECK_FALSE(p.slurm_job_id);
}

TEST_CASE("cgroup: Kubernetes, systemd driver, Docker on cgroup v1, a Guaranteed pod") {
  Placement p = fixture("k8s-v1-systemd-docker.txt");
  CHECK(p.container == "5e971edcd9ca1dde979ca6d6066ac100d98d0e252c8f34dc1772c9d5db7f392a");
  CHECK(p.pod_uid == "a0d23984-5177-6e88-1c9a-ed5066dc3c95"); // underscores become dashes
  CHECK(p.systemd_unit ==
        "docker-5e971edcd9ca1dde979ca6d6066ac100d98d0e252c8f34dc1772c9d5db7f392a.scope");
}

TEST_CASE("cgroup: Kubernetes, systemd driver on cgroup v2, containerd and CRI-O") {
  Placement containerd = fixture("k8s-v2-systemd-containerd.txt");
  CHECK(containerd.container == "afa4cae82534831c8712c4ba67780deda858c254fdbddbdda1f5077bbab0ba81");
  CHECK(containerd.pod_uid == "0a5841ae-668e-cfc9-a774-30b6a3d06f71");
  CHECK(containerd.systemd_unit ==
        "cri-containerd-afa4cae82534831c8712c4ba67780deda858c254fdbddbdda1f5077bbab0ba81.scope");

  Placement crio = fixture("k8s-v2-systemd-crio.txt");
  CHECK(crio.container == "981a266b2bc2b9c688778d82324c89be1be2c1a439a6b2265177f31940f99eb9");
  CHECK(crio.pod_uid == "9611fb8c-9893-be58-b35a-db66151919fb");
  CHECK_FALSE(crio.slurm_job_id);
}

TEST_CASE("cgroup: CRI-O's monitor and a static pod") {
  const std::string id(64, 'b');
  Placement conmon = read_cgroup("0::/kubepods.slice/kubepods-besteffort.slice/"
                                 "kubepods-besteffort-pod9611fb8c_9893_be58_b35a_db66151919fb."
                                 "slice/crio-conmon-" +
                                 id + ".scope\n");
  CHECK_FALSE(conmon.container); // conmon watches the container; it is not in it
  CHECK(conmon.pod_uid == "9611fb8c-9893-be58-b35a-db66151919fb");

  // A static pod's UID is the hash of its manifest: 32 hex digits.
  Placement mirror = read_cgroup("0::/kubepods.slice/kubepods-burstable.slice/"
                                 "kubepods-burstable-pod5c2ad5e1b1b2e0f0c1d8d6b8d6a1e0a1.slice/"
                                 "cri-containerd-" +
                                 id + ".scope\n");
  CHECK(mirror.pod_uid == "5c2ad5e1b1b2e0f0c1d8d6b8d6a1e0a1");
  CHECK(mirror.container == id);
}

TEST_CASE("cgroup: a pod-like name outside Kubernetes is no pod") {
  Placement p = read_cgroup("0::/system.slice/pod0a5841ae-668e-cfc9-a774-30b6a3d06f71.service\n");
  CHECK_FALSE(p.pod_uid);
  CHECK(p.systemd_unit == "pod0a5841ae-668e-cfc9-a774-30b6a3d06f71.service");
}

TEST_CASE("cgroup: rootless Podman under the user's systemd") {
  Placement p = fixture("podman-rootless-v2.txt");
  CHECK(p.container == "d061ef444a7697dfb0ff8d28cee0fcb8f8b0f94962cdcc0e3fe811218c9efffe");
  CHECK(p.systemd_unit ==
        "libpod-d061ef444a7697dfb0ff8d28cee0fcb8f8b0f94962cdcc0e3fe811218c9efffe.scope");
}

TEST_CASE("cgroup: containerd's own processes are in no container") {
  Placement p = fixture("containerd-shim-v2.txt");
  CHECK_FALSE(p.container);
  CHECK(p.systemd_unit == "containerd.service");
}

TEST_CASE("cgroup: Slurm on cgroup v1 and v2") {
  Placement v1 = fixture("slurm-v1.txt");
  CHECK(v1.slurm_job_id == "1234");
  CHECK(v1.systemd_unit == "slurmd.service"); // where systemd's own hierarchy has the task
  CHECK_FALSE(v1.container);

  Placement v2 = fixture("slurm-v2.txt");
  CHECK(v2.slurm_job_id == "5678");
  CHECK(v2.systemd_unit == "slurmstepd.scope");
  CHECK_FALSE(v2.pod_uid);

  // Several slurmd on one node name their root after the node.
  CHECK(read_cgroup("4:memory:/slurm_node07/uid_1000/job_42/step_batch/task_0\n").slurm_job_id ==
        "42");
  // A job_ folder outside Slurm's tree is someone else's.
  CHECK_FALSE(read_cgroup("0::/system.slice/myapp.service/job_77\n").slurm_job_id);
  CHECK_FALSE(read_cgroup("0::/slurm/uid_1000/job_12x/step_0\n").slurm_job_id);
}

TEST_CASE("cgroup: systemd services, sessions and the user's own services") {
  Placement service = fixture("systemd-service-v2.txt");
  CHECK(service.systemd_unit == "ollama.service");
  CHECK_FALSE(service.container);

  CHECK(fixture("user-session-v2.txt").systemd_unit == "session-3.scope");
  CHECK(fixture("user-manager-v2.txt").systemd_unit == "jupyter-lab.service");
  // cgroup v2 marks a cgroup removed while a process still sits in it.
  CHECK(read_cgroup("0::/system.slice/old.service (deleted)\n").systemd_unit == "old.service");
}

TEST_CASE("cgroup: the root cgroup, empty input and garbage place nothing") {
  check_nothing(fixture("root-v2.txt"));
  check_nothing(read_cgroup(""));
  check_nothing(read_cgroup("\n\n"));
  check_nothing(read_cgroup("-"));
  check_nothing(read_cgroup("not a cgroup file at all\n"));
  check_nothing(read_cgroup("0::\n1:memory\n:::\nx:memory:/docker/" + std::string(64, 'c')));
  check_nothing(read_cgroup("0::docker/" + std::string(64, 'c'))); // not a path
  check_nothing(read_cgroup("0::/.service/.scope/kubepods/pod/job_\n"));
  check_nothing(read_cgroup(std::string("0::/\0\xff\xfe/docker/", 15) + std::string(63, 'c')));
  // Upper-case hex and a 65-digit id are not what any runtime writes.
  check_nothing(read_cgroup("0::/docker/" + std::string(64, 'C')));
  check_nothing(read_cgroup("0::/docker/" + std::string(65, 'c')));
  // Very many lines: read up to a bound, without failing.
  std::string many;
  for (int i = 0; i < 100000; ++i)
    many += "99:x:/a\n";
  check_nothing(read_cgroup(many));
}

} // namespace test_cgroup
