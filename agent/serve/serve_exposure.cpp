#include "serve/serve_exposure.hpp"

#include "core/command_text.hpp"

namespace nvsmi {

Exposure default_exposure(bool loopback_only) { return {false, loopback_only}; }

void limit_exposure(Snapshot &snapshot, const Exposure &exposure) {
  for (Gpu &gpu : snapshot.gpus) {
    // Whose job holds the GPU says who works on what, as a process's user does; so does the
    // account it is charged to (often a group's or a grant's name).
    auto withhold = [&exposure](std::optional<Allocation> &allocation) {
      if (!exposure.users && allocation) {
        allocation->user.reset();
        allocation->account.reset();
      }
    };
    withhold(gpu.allocation);
    if (gpu.mig_devices)
      for (MigDevice &device : *gpu.mig_devices)
        withhold(device.allocation);
    if (!gpu.processes)
      continue;
    for (Process &process : *gpu.processes) {
      if (!exposure.command_lines && process.command)
        process.command = launched_name(*process.command).value_or(std::string());
      if (!exposure.users) {
        process.user.reset();
        process.uid.reset();
        process.systemd_unit.reset();
      }
    }
  }
}

} // namespace nvsmi
