// The monitor's own cost (nvsmi/snapshot.hpp's AgentCost), read on demand (a scrape, top's header,
// watch once a minute), never with every sample: the agent's CPU from getrusage, its memory and
// each running nvidia-smi's CPU and memory (with all below it: a wrapper's nvidia-smi) from /proc
// through libproc2 (host's ProcessReader), the
// CPU of each run that ended from wait4 (RunCost), and the share of a core over the last minute
// from the readings taken so far. No process is started to read it.
#pragma once

#include "nvidia_smi/run_cost.hpp"

#include "nvsmi/snapshot.hpp"

#include <chrono>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <sys/types.h>
#include <utility>
#include <vector>

namespace nvsmi {

class ProcessReader;

// The window the share of a core is taken over, at most.
constexpr std::chrono::seconds cost_window{60};

struct CostedStream {
  std::string name;              // gpu_query, processes, pmon, dmon, nvlink
  const RunCost *runs = nullptr; // its starts and ended runs
  std::optional<pid_t> running;  // the run going on, whose CPU /proc has
};

class MonitorCost {
public:
  MonitorCost(); // the window starts here, at the agent's CPU of now
  ~MonitorCost();
  MonitorCost(const MonitorCost &) = delete;
  MonitorCost &operator=(const MonitorCost &) = delete;

  // The cost now, or as read less than a second ago: a client asking for /metrics in a loop must
  // not make the agent walk /proc for each answer (about 1 ms with five streams). The streams that
  // never started are left out. Each reading is also a point of the window.
  AgentCost read(const std::vector<CostedStream> &streams);
  // The cost now, read for the agent's own use (--cpu-budget's minute), and not kept for the
  // clients: their first answer after it is read afresh, not this one again.
  AgentCost read_now(const std::vector<CostedStream> &streams);

private:
  std::unique_ptr<ProcessReader> reader_;
  std::optional<std::pair<std::chrono::steady_clock::time_point, AgentCost>> last_;
  // (when, agent + streams' CPU seconds) of earlier readings: the oldest within the window first.
  std::deque<std::pair<std::chrono::steady_clock::time_point, double>> points_;
};

} // namespace nvsmi
