// HostObserver on real processes this test starts (as this user and as `nobody`), one that has
// exited, and the host itself; the CPU-share rules alone on made-up counters.
#include "host/cpu_shares.hpp"
#include "host/host_observer.hpp"
#include "host/process_reader.hpp"
#include "report/report_log.hpp"

#include "nvsmi/cgroup.hpp"
#include "nvsmi/timestamp.hpp"

#include "process_support.hpp"
#include "support.hpp"

#include <catch2/catch.hpp>

#include <array>
#include <cctype>
#include <climits>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <pwd.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace test_host_observer {

using namespace nvsmi;
using namespace std::chrono_literals;

namespace {

// A snapshot as a reader leaves it: one GPU whose processes nvidia-smi listed with these pids.
Snapshot snapshot_with(const std::vector<Reading> &pids) {
  Gpu gpu;
  gpu.processes.emplace();
  for (const Reading &pid : pids) {
    Process process;
    process.pid = pid;
    process.type = "C";
    process.name = "/usr/bin/python3";
    process.used_memory_mib = 1234;
    gpu.processes->push_back(process);
  }
  Snapshot snapshot;
  snapshot.gpus.push_back(gpu);
  return snapshot;
}

const Process &first_process(const Snapshot &snapshot) {
  return snapshot.gpus.at(0).processes->at(0);
}

std::string user_name(uid_t uid) {
  passwd entry{}, *found = nullptr;
  std::vector<char> buffer(1 << 16);
  if (::getpwuid_r(uid, &entry, buffer.data(), buffer.size(), &found) == 0 && found)
    return found->pw_name;
  return std::to_string(uid);
}

// Until `pid` runs the program whose /proc/PID/cmdline starts with `prefix`: a command run in
// the background is a copy of the shell until it execs.
bool runs(int pid, const std::string &prefix) {
  return test::wait_until([&] {
    try {
      return test::read_file("/proc/" + std::to_string(pid) + "/cmdline").rfind(prefix, 0) == 0;
    } catch (const std::exception &) {
      return false;
    }
  });
}

std::int64_t now_seconds() { return static_cast<std::int64_t>(std::time(nullptr)); }

void check_no_host_fields(const Process &p) {
  CHECK_FALSE(p.user);
  CHECK_FALSE(p.uid);
  CHECK_FALSE(p.command);
  CHECK_FALSE(p.started);
  CHECK_FALSE(p.cpu_percent);
  CHECK_FALSE(p.host_memory_mib);
  CHECK_FALSE(p.container);
  CHECK_FALSE(p.pod_uid);
  CHECK_FALSE(p.slurm_job_id);
  CHECK_FALSE(p.systemd_unit);
}

void check_nvidia_smi_fields_kept(const Process &p) {
  CHECK(p.type == "C");
  CHECK(p.name == "/usr/bin/python3");
  CHECK(p.used_memory_mib == 1234);
}

} // namespace

TEST_CASE("host observer: a process of this user, as it is now") {
  std::int64_t before = now_seconds();
  test::Background sleeper("sleep 300");
  REQUIRE(sleeper.pid() > 0);
  REQUIRE(runs(sleeper.pid(), std::string("sleep\0"
                                          "300\0",
                                          10)));

  HostObserver observer;
  Snapshot snapshot = snapshot_with({sleeper.pid()});
  observer.observe(snapshot);
  const Process &p = first_process(snapshot);
  check_nvidia_smi_fields_kept(p);
  CHECK(p.pid == sleeper.pid());
  CHECK(p.uid == static_cast<std::int64_t>(::getuid()));
  CHECK(p.user == user_name(::getuid()));
  CHECK(p.command == "sleep 300");
  REQUIRE(p.started);
  std::optional<Timestamp> started = parse_iso8601_timestamp(*p.started);
  REQUIRE(started);
  CHECK(started->utc_offset_minutes);
  CHECK_FALSE(started->millisecond); // seconds precision
  // Boot time is whole seconds and the start is cut to them: up to two seconds early.
  CHECK(instant_seconds(*started) >= static_cast<double>(before - 2));
  // ...and up to two late where the clock was stepped since boot (the kernel's boot time is the
  // clock at boot, the start counted on the monotonic clock): seen once on a busy CI machine.
  CHECK(instant_seconds(*started) <= static_cast<double>(now_seconds() + 2));
  CHECK(p.host_memory_mib > 0);
  CHECK_FALSE(p.cpu_percent); // the first sample has nothing to compare with

  // Its placement is what its own /proc/PID/cgroup says, whatever this machine runs the test in.
  Placement expected =
      read_cgroup(test::read_file("/proc/" + std::to_string(sleeper.pid()) + "/cgroup"));
  CHECK(p.container == expected.container);
  CHECK(p.pod_uid == expected.pod_uid);
  CHECK(p.slurm_job_id == expected.slurm_job_id);
  CHECK(p.systemd_unit == expected.systemd_unit);

  // The second sample, a tenth of a second or more later, has a share: sleep uses (next to) none.
  std::this_thread::sleep_for(150ms);
  observer.observe(snapshot);
  REQUIRE(first_process(snapshot).cpu_percent);
  CHECK(*first_process(snapshot).cpu_percent >= 0);
  CHECK(*first_process(snapshot).cpu_percent < 50);
}

TEST_CASE("host observer: a busy process of another user, and its share of a core") {
  if (::geteuid() != 0) {
    WARN("skipped: starting a process as nobody needs root");
    return;
  }
  passwd entry{}, *nobody = nullptr;
  std::vector<char> buffer(1 << 16);
  REQUIRE(::getpwnam_r("nobody", &entry, buffer.data(), buffer.size(), &nobody) == 0);
  REQUIRE(nobody);
  test::Background busy("setpriv --reuid=nobody --regid=" + std::to_string(nobody->pw_gid) +
                        " --clear-groups sh -c 'while :; do :; done'");
  REQUIRE(busy.pid() > 0);
  REQUIRE(runs(busy.pid(), std::string("sh\0-c\0while", 11))); // setpriv has become sh

  HostObserver observer;
  Snapshot snapshot = snapshot_with({busy.pid()});
  observer.observe(snapshot);
  CHECK(first_process(snapshot).user == "nobody");
  CHECK(first_process(snapshot).uid == static_cast<std::int64_t>(nobody->pw_uid));
  CHECK(first_process(snapshot).command == "sh -c while :; do :; done");
  CHECK_FALSE(first_process(snapshot).cpu_percent);

  // One core busy is 100; a machine busy with other work gives it less, but not next to none.
  std::optional<double> share;
  CHECK(test::wait_until(
      [&] {
        observer.observe(snapshot);
        share = first_process(snapshot).cpu_percent;
        return share && *share > 5;
      },
      test::patience, 500ms));
  INFO("share " << share.value_or(-1));
  // One thread uses one core at most; the counters are read a moment after the sample's instant,
  // which a loaded machine can stretch.
  CHECK(share.value_or(1000) <= 150);
  CHECK(first_process(snapshot).user == "nobody");
}

TEST_CASE("host observer: command lines keep their bytes, cut at 4096") {
  // The interpreter itself, not a wrapper on PATH (pyenv's shims exec it a moment later).
  test::Run which =
      test::run_shell("python3 -c 'import os, sys; print(os.path.realpath(sys.executable))'");
  REQUIRE(which.exit_code == 0);
  std::string python = which.out.substr(0, which.out.find('\n'));
  std::string long_argument(10000, 'a');
  test::Background sleeper(test::quote(python) +
                           " -c 'import time; time.sleep(300)' \"$(printf 'x\\377y\\nz')\" " +
                           long_argument);
  REQUIRE(runs(sleeper.pid(), python + std::string("\0-c\0", 4)));

  HostObserver observer;
  Snapshot snapshot = snapshot_with({sleeper.pid()});
  observer.observe(snapshot);
  const Process &p = first_process(snapshot);
  REQUIRE(p.command);
  CHECK(p.command->size() == max_command_bytes);
  std::string start = python + " -c import time; time.sleep(300) x\xffy\nz aaaa";
  CHECK(p.command->substr(0, start.size()) == start);
  CHECK(p.command->back() == 'a');
}

TEST_CASE("host observer: a zombie is named in brackets, as ps does") {
  pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0)
    ::_exit(0);
  REQUIRE(test::wait_until([&] { return test::process_stat(child).state == 'Z'; }));
  HostObserver observer;
  Snapshot snapshot = snapshot_with({child});
  observer.observe(snapshot);
  std::string name = test::read_file("/proc/self/comm");
  name.pop_back(); // its newline
  CHECK(first_process(snapshot).command == "[" + name + "]");
  CHECK(first_process(snapshot).uid == static_cast<std::int64_t>(::getuid()));
  int status = 0;
  CHECK(::waitpid(child, &status, 0) == child);
}

TEST_CASE("host observer: a pid not visible here keeps nvidia-smi's fields, and no others") {
  pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0)
    ::_exit(0);
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child); // gone: its pid names nothing now

  Snapshot snapshot = snapshot_with({child, INT_MAX, Reading{}, 0, -5});
  // Whatever a snapshot came with is not what this machine says now.
  (*snapshot.gpus[0].processes)[0].user = "someone";
  (*snapshot.gpus[0].processes)[0].cpu_percent = 12.5;
  HostObserver observer;
  observer.observe(snapshot);
  observer.observe(snapshot);
  const auto &processes = *snapshot.gpus[0].processes;
  REQUIRE(processes.size() == 5);
  CHECK(processes[0].pid == child);
  CHECK(processes[1].pid == INT_MAX);
  CHECK_FALSE(processes[2].pid);
  for (const Process &p : processes) {
    check_nvidia_smi_fields_kept(p);
    check_no_host_fields(p);
  }
  REQUIRE(snapshot.host); // the host is there all the same
}

TEST_CASE("host observer: one process on two GPUs, beside one that is not visible") {
  test::Background sleeper("sleep 300");
  REQUIRE(runs(sleeper.pid(), std::string("sleep\0"
                                          "300\0",
                                          10)));
  Snapshot snapshot = snapshot_with({sleeper.pid(), INT_MAX});
  snapshot.gpus.push_back(snapshot.gpus[0]);
  snapshot.gpus.push_back(Gpu{}); // no process list at all
  HostObserver observer;
  observer.observe(snapshot);
  for (int gpu = 0; gpu < 2; ++gpu) {
    const auto &processes = *snapshot.gpus[gpu].processes;
    CHECK(processes[0].command == "sleep 300");
    check_no_host_fields(processes[1]);
  }
  CHECK_FALSE(snapshot.gpus[2].processes);
}

namespace {
// The first field of /proc/loadavg: the last minute's load as the kernel prints it.
std::string proc_load1() {
  std::ifstream file("/proc/loadavg");
  std::string first;
  file >> first;
  return first;
}

// The CPU lines of /proc/stat ("cpu0", "cpu1", ...): the CPUs online now.
long proc_stat_cpus() {
  std::ifstream file("/proc/stat");
  long count = 0;
  for (std::string line; std::getline(file, line);)
    count += line.size() > 3 && line.compare(0, 3, "cpu") == 0 && std::isdigit(line[3]);
  return count;
}
} // namespace

TEST_CASE("host observer: the host beside the GPUs") {
  HostObserver observer;
  Snapshot snapshot;
  std::string load_before = proc_load1();
  observer.observe(snapshot);
  std::string load_after = proc_load1();
  REQUIRE(snapshot.host);
  const Host &host = *snapshot.host;
  std::array<char, HOST_NAME_MAX + 1> name{};
  REQUIRE(::gethostname(name.data(), name.size()) == 0);
  CHECK(host.hostname == std::string(name.data()));
  REQUIRE(host.cpu_count);
  CHECK(*host.cpu_count >= 1);
  CHECK(*host.cpu_count == ::sysconf(_SC_NPROCESSORS_ONLN));
  CHECK(*host.cpu_count == proc_stat_cpus()); // counted in the read of /proc/stat itself
  REQUIRE(host.memory_total_mib);
  CHECK(*host.memory_total_mib > 0);
  REQUIRE(host.memory_used_mib);
  CHECK(*host.memory_used_mib >= 0);
  CHECK(*host.memory_used_mib <= *host.memory_total_mib);
  REQUIRE(host.load1);
  CHECK(*host.load1 >= 0);
  // From sysinfo, rounded as /proc/loadavg prints it: the same figure as the file read just
  // before or just after (the kernel updates it every 5 s).
  char load_text[32];
  std::snprintf(load_text, sizeof load_text, "%.2f", *host.load1);
  INFO("load1 " << *host.load1 << ", /proc/loadavg " << load_before << " then " << load_after);
  CHECK((load_text == load_before || load_text == load_after));
  CHECK_FALSE(host.cpu_percent); // nothing to compare with yet

  // Counters move by ticks (1/100 s): the next sample with a share comes within moments.
  CHECK(test::wait_until(
      [&] {
        observer.observe(snapshot);
        return snapshot.host->cpu_percent.has_value();
      },
      test::patience, 100ms));
  REQUIRE(snapshot.host->cpu_percent);
  CHECK(*snapshot.host->cpu_percent >= 0);
  CHECK(*snapshot.host->cpu_percent <= 100);
}

TEST_CASE("CPU shares: since the previous sample, of the same process only") {
  using Clock = ProcessCpuShares::Clock;
  ProcessCpuShares shares(100); // 100 ticks a second
  Clock::time_point t0 = Clock::now();

  auto one = [&](int pid, std::uint64_t start, std::uint64_t cpu, Clock::time_point at) {
    return shares.update({{pid, start, cpu, at}}).at(0);
  };
  CHECK_FALSE(one(42, 500, 10, t0)); // first seen
  CHECK(one(42, 500, 60, t0 + 1s) == Approx(50.0));
  CHECK(one(42, 500, 310, t0 + 2s) == Approx(250.0)); // three threads: more than one core
  // Same pid, another start: the pid was reused by another process.
  CHECK_FALSE(one(42, 900, 400, t0 + 3s));
  CHECK(one(42, 900, 420, t0 + 4s) == Approx(20.0)); // the new one's baseline was kept
  // A counter that goes back, or a clock that does not move, gives no share.
  CHECK_FALSE(one(42, 900, 419, t0 + 5s));
  CHECK_FALSE(one(42, 900, 430, t0 + 5s));

  // Pids not in a sample are forgotten: the map holds one sample's processes.
  CHECK(shares.update({}).empty());
  CHECK_FALSE(one(42, 900, 440, t0 + 7s));

  std::vector<std::optional<double>> many =
      shares.update({{42, 900, 540, t0 + 8s}, {7, 1, 0, t0 + 8s}}); // in the order given
  REQUIRE(many.size() == 2);
  CHECK(many[0] == Approx(100.0));
  CHECK_FALSE(many[1]);

  // Counters move a tick at a time: over a moment, one tick would read as a share of many
  // cores. Too soon gives none, and the older reading stays the baseline.
  CHECK_FALSE(one(42, 900, 541, t0 + 8s + 1ms));
  CHECK_FALSE(one(42, 900, 545, t0 + 8s + 99ms));
  CHECK(one(42, 900, 560, t0 + 8s + 200ms) == Approx(100.0)); // 20 ticks in 0.2 s, from 8 s
  CHECK(one(42, 900, 570, t0 + 8s + 300ms) == Approx(100.0)); // exactly ten ticks' time
}

TEST_CASE("CPU shares: the host's busy share") {
  HostCpuShare host;
  CHECK_FALSE(host.update(CpuTicks{100, 1000}));
  CHECK(host.update(CpuTicks{150, 1100}) == Approx(50.0));
  CHECK_FALSE(host.update(CpuTicks{150, 1100})); // no tick since: keep the baseline
  CHECK(host.update(CpuTicks{250, 1200}) == Approx(100.0));
  CHECK_FALSE(host.update(CpuTicks{200, 1150})); // a CPU left the sum
  CHECK(host.update(CpuTicks{200, 1250}) == Approx(0.0));
  CHECK_FALSE(host.update(std::nullopt)); // unreadable: start again
  CHECK_FALSE(host.update(CpuTicks{300, 1400}));
}

} // namespace test_host_observer
