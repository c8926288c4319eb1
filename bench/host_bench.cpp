// What HostObserver::observe costs a sample: the host alone, and 8 GPUs with 4 processes each
// (32 real `sleep` processes this program starts, kills and reaps).
// Usage: host_bench [--benchmark_... options]
#include "host/host_observer.hpp"
#include "host/process_reader.hpp"

#include <benchmark/benchmark.h>

#include <csignal>
#include <spawn.h>
#include <sys/wait.h>
#include <vector>

extern char **environ;

namespace {

class Sleepers {
public:
  explicit Sleepers(int count) {
    for (int i = 0; i < count; ++i) {
      char sleep[] = "sleep", seconds[] = "600";
      char *arguments[] = {sleep, seconds, nullptr};
      pid_t pid = 0;
      if (::posix_spawnp(&pid, "sleep", nullptr, nullptr, arguments, environ) == 0)
        pids_.push_back(pid);
    }
  }
  ~Sleepers() {
    for (pid_t pid : pids_) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  }
  Sleepers(const Sleepers &) = delete;
  Sleepers &operator=(const Sleepers &) = delete;
  const std::vector<pid_t> &pids() const { return pids_; }

private:
  std::vector<pid_t> pids_;
};

nvsmi::Snapshot snapshot(const std::vector<pid_t> &pids, int gpus) {
  nvsmi::Snapshot s;
  for (int g = 0; g < gpus; ++g) {
    nvsmi::Gpu gpu;
    gpu.index = g;
    gpu.processes.emplace();
    for (std::size_t i = static_cast<std::size_t>(g); i < pids.size();
         i += static_cast<std::size_t>(gpus)) {
      nvsmi::Process process;
      process.pid = pids[i];
      gpu.processes->push_back(process);
    }
    s.gpus.push_back(gpu);
  }
  return s;
}

void observe_host_only(benchmark::State &state) {
  nvsmi::HostObserver observer;
  nvsmi::Snapshot s = snapshot({}, 8);
  for (auto _ : state) {
    observer.observe(s);
    benchmark::DoNotOptimize(s);
  }
}
BENCHMARK(observe_host_only)->Unit(benchmark::kMicrosecond);

void observe_8gpus_32processes(benchmark::State &state) {
  Sleepers sleepers(32);
  nvsmi::HostObserver observer;
  nvsmi::Snapshot s = snapshot(sleepers.pids(), 8);
  std::int64_t found = 0;
  for (auto _ : state) {
    observer.observe(s);
    benchmark::DoNotOptimize(s);
  }
  for (const nvsmi::Gpu &gpu : s.gpus)
    for (const nvsmi::Process &process : *gpu.processes)
      found += process.command ? 1 : 0;
  state.counters["processes_read"] = static_cast<double>(found);
}
BENCHMARK(observe_8gpus_32processes)->Unit(benchmark::kMicrosecond);

void read_32processes(benchmark::State &state) {
  Sleepers sleepers(32);
  nvsmi::ProcessReader reader;
  std::vector<int> pids(sleepers.pids().begin(), sleepers.pids().end());
  for (auto _ : state)
    benchmark::DoNotOptimize(reader.read(pids));
}
BENCHMARK(read_32processes)->Unit(benchmark::kMicrosecond);

} // namespace

BENCHMARK_MAIN();
