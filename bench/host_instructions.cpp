// HostObserver::observe called N times on 8 GPUs without processes (the host's CPU, memory, load,
// disk and network rates), for counting instructions with callgrind: the difference between two
// counts over the difference in calls is one sample's host reading, start-up left out.
// Usage: host_instructions N
#include "host/host_observer.hpp"

#include <cstdlib>

int main(int argc, char **argv) {
  int samples = argc > 1 ? std::atoi(argv[1]) : 1;
  nvsmi::HostObserver observer;
  nvsmi::Snapshot snapshot;
  for (int g = 0; g < 8; ++g) {
    nvsmi::Gpu gpu;
    gpu.index = g;
    gpu.processes.emplace();
    snapshot.gpus.push_back(gpu);
  }
  for (int i = 0; i < samples; ++i)
    observer.observe(snapshot);
  return snapshot.host ? 0 : 1;
}
