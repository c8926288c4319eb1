// What this machine's /proc says beside the GPUs: the host's CPU, memory, disk and network, and who
// each GPU process is (user, command line, start, CPU, RSS, cgroup placement). Read with libproc2,
// the library behind ps and top.
#pragma once

#include "nvsmi/snapshot.hpp"

#include <memory>

namespace nvsmi {

class HostObserver {
public:
  HostObserver();
  ~HostObserver();
  HostObserver(const HostObserver &) = delete;
  HostObserver &operator=(const HostObserver &) = delete;

  // Sets snapshot.host, and the host fields of every process of every GPU. CPU shares are since
  // the previous observe() (nullopt on the first, and for a pid first seen now or reused by
  // another process since). A pid not visible here keeps its nvidia-smi fields and gets nullopt
  // for the rest. Never throws for what /proc lacks: unknown is nullopt.
  void observe(Snapshot &snapshot);

private:
  struct State;
  std::unique_ptr<State> state_;
};

} // namespace nvsmi
