#include "host/host_observer.hpp"

#include "host/cpu_shares.hpp"
#include "host/host_io.hpp"
#include "host/host_reader.hpp"
#include "host/process_reader.hpp"
#include "host/running_program.hpp"
#include "host/user_names.hpp"

#include "core/local_time.hpp"
#include "core/privilege.hpp"

#include "nvsmi/cgroup.hpp"
#include "nvsmi/timestamp.hpp"

#include <cstdint>
#include <ctime>
#include <unordered_map>

namespace nvsmi {
namespace {

Reading kib_to_mib(std::uint64_t kib) {
  return static_cast<std::int64_t>((kib + 512) / 1024); // to the nearest MiB
}

void forget_host_fields(Process &process) {
  process.user.reset();
  process.uid.reset();
  process.command.reset();
  process.started.reset();
  process.cpu_percent.reset();
  process.host_memory_mib.reset();
  process.container.reset();
  process.pod_uid.reset();
  process.slurm_job_id.reset();
  process.systemd_unit.reset();
}

} // namespace

struct HostObserver::State {
  HostReader host;
  HostIoReader io{host_root()};
  ProcessReader processes;
  HostCpuShare host_cpu;
  ProcessCpuShares process_cpu{processes.ticks_per_second()};
  UserNames users;
};

HostObserver::HostObserver() : state_(std::make_unique<State>()) {}
HostObserver::~HostObserver() = default;

void HostObserver::observe(Snapshot &snapshot) {
  HostFacts machine = state_->host.read();
  Host host;
  host.hostname = machine.hostname;
  host.cpu_count = machine.cpu_count;
  host.cpu_percent = state_->host_cpu.update(machine.cpu_ticks);
  host.load1 = machine.load1;
  if (machine.memory_total_kib) {
    host.memory_total_mib = kib_to_mib(*machine.memory_total_kib);
    if (machine.memory_available_kib && *machine.memory_available_kib <= *machine.memory_total_kib)
      host.memory_used_mib = kib_to_mib(*machine.memory_total_kib - *machine.memory_available_kib);
  }
  state_->io.read(host);
  snapshot.host = host;

  std::vector<int> pids;
  for (Gpu &gpu : snapshot.gpus)
    if (gpu.processes)
      for (Process &process : *gpu.processes) {
        forget_host_fields(process); // whatever came in is not what this machine says now
        if (process.pid && *process.pid > 0 && *process.pid <= INT32_MAX)
          pids.push_back(static_cast<int>(*process.pid));
      }
  std::vector<ProcessFacts> read = state_->processes.read(pids);

  std::vector<ProcessTicks> ticks;
  std::vector<unsigned> uids;
  for (const ProcessFacts &process : read) {
    ticks.push_back({process.pid, process.start_ticks, process.cpu_ticks, process.read_at});
    uids.push_back(process.uid);
  }
  std::vector<std::optional<double>> shares = state_->process_cpu.update(ticks);
  std::unordered_map<unsigned, std::string> names = state_->users.names(uids);

  struct Found {
    const ProcessFacts *facts;
    std::optional<double> cpu_percent;
    Placement placement;
  };
  std::unordered_map<int, Found> by_pid;
  for (std::size_t i = 0; i < read.size(); ++i)
    by_pid[read[i].pid] = {&read[i], shares[i], read_cgroup(read[i].cgroup)};

  long hertz = state_->processes.ticks_per_second();
  for (Gpu &gpu : snapshot.gpus) {
    if (!gpu.processes)
      continue;
    for (Process &process : *gpu.processes) {
      if (!process.pid || *process.pid <= 0 || *process.pid > INT32_MAX)
        continue;
      auto found = by_pid.find(static_cast<int>(*process.pid));
      if (found == by_pid.end())
        continue; // not visible here: nothing of this machine is known of it
      const ProcessFacts &facts = *found->second.facts;
      process.uid = facts.uid;
      process.user = names[facts.uid];
      process.command = facts.command;
      if (machine.boot_time && hertz > 0)
        process.started = local_iso8601(*machine.boot_time +
                                        static_cast<std::int64_t>(facts.start_ticks / hertz));
      process.cpu_percent = found->second.cpu_percent;
      process.host_memory_mib = kib_to_mib(facts.rss_kib);
      const Placement &placement = found->second.placement;
      process.container = placement.container;
      process.pod_uid = placement.pod_uid;
      process.slurm_job_id = placement.slurm_job_id;
      process.systemd_unit = placement.systemd_unit;
    }
  }
}

} // namespace nvsmi
