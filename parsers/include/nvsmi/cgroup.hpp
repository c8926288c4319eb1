// Where a process runs, from the text of /proc/PID/cgroup: cgroup v2 ("0::/path") and v1
// ("N:controllers:/path") layouts of Docker, containerd and CRI-O under Kubernetes, Slurm and
// systemd.
#pragma once

#include "nvsmi/snapshot.hpp"

#include <string_view>

namespace nvsmi {

struct Placement {
  Text container;    // 64-hex container id
  Text pod_uid;      // Kubernetes pod UID with dashes ("pod1a2b3c4d_5e6f_..." becomes
                     // "1a2b3c4d-5e6f-...")
  Text slurm_job_id; // "1234" from .../slurm/uid_1000/job_1234/... (digits only)
  Text systemd_unit; // the innermost *.service or *.scope ("docker-<id>.scope" when nothing better)
};

// Never throws: text it cannot place gives nullopt fields.
Placement read_cgroup(std::string_view proc_pid_cgroup);

} // namespace nvsmi
