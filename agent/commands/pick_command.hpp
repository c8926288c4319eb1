#pragma once

#include "fleet/ssh_fleet.hpp"
#include "jobs/gpu_choice.hpp"
#include "sampling/one_sample.hpp"

#include <cstddef>
#include <optional>
#include <string>

namespace nvsmi {

enum class PickFormat {
  list, // 0,7
  env,  // export CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES=0,7 (for eval)
  json, // {"gpus":[...],"cuda_visible_devices":"0,7"}
};

struct PickOptions {
  OneSampleOptions sample;
  PickCriteria criteria;
  std::size_t count = 1;
  std::optional<double> wait_seconds; // sample until enough are free, at most this long
  double interval_seconds = 1;        // between samples while waiting
  bool uuid = false;                  // name GPUs by UUID instead of index
  std::string claims_folder;          // claims held there are never offered
  PickFormat format = PickFormat::list;
  // --ssh: one sample of each of these machines instead, and the hosts with `count` free GPUs.
  std::optional<SshFleetOptions> ssh;
};

// Prints the `count` best free, unclaimed GPUs of a sample in `format`. Throws AgentError:
// exit_not_enough (exit_not_enough_in_time with --wait) naming why the others are not free, or
// nvidia-smi's failure (at once without --wait; with it, the last one if nvidia-smi still failed
// when the time was up).
void run_pick(const PickOptions &options);

// pick --ssh: one sample of every host (sample_ssh_hosts_once), then each host with `count` free
// GPUs by the same criteria (claims aside: they are files on each host), the most free first, one
// line each: "HOST GPU,GPU" (list) or {"hosts":[{"host":...,"gpus":[...],
// "cuda_visible_devices":"0,3"},...]} (json). Throws AgentError(exit_not_enough) naming each
// host's count or why it did not answer where none has enough.
void run_pick_ssh(const PickOptions &options);

} // namespace nvsmi
