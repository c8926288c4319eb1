// A process and a host as a live sample has them: every field that pmon and /proc fill known, for
// the tests of what the formats and the history do with them.
#pragma once

#include "nvsmi/snapshot.hpp"

#include <cstdint>
#include <string>

namespace test {

inline nvsmi::Process observed_process(std::int64_t pid, const std::string &user,
                                       std::int64_t used_mib,
                                       const std::string &command = "python3 train.py") {
  nvsmi::Process p;
  p.pid = pid;
  p.type = "C";
  p.name = "python3";
  p.used_memory_mib = used_mib;
  p.sm_utilization_percent = 87;
  p.memory_utilization_percent = 35;
  p.user = user;
  p.uid = 1000 + pid % 7;
  p.command = command;
  p.started = "2026-11-23T09:14:02+01:00";
  p.cpu_percent = 101.25;
  p.host_memory_mib = 5120;
  p.container = std::string(64, 'a');
  p.pod_uid = "6f1c1c2e-4b1a-4a0e-9d57-3f7a8c2d1b00";
  p.slurm_job_id = "81234";
  p.systemd_unit = "docker-aaaa.scope";
  return p;
}

inline nvsmi::Host observed_host() {
  return {std::string("gpu07"), 64, 12.5, 3.25, 515000, 123456};
}

} // namespace test
