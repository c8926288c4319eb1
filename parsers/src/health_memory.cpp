#include "nvsmi/health_memory.hpp"

#include "nvsmi/gpu_state.hpp"

#include <algorithm>

namespace nvsmi {

void HealthMemory::carry(Snapshot &snapshot) {
  ++samples_;
  for (Gpu &gpu : snapshot.gpus) {
    gpu.health.earlier_faults.clear();
    if (gpu.lost_reason)
      continue;
    std::string identity = gpu_identity(gpu);
    std::vector<EarlierFault> remembered;
    auto found = gpus_.find(identity);
    if (found != gpus_.end())
      for (EarlierFault &earlier : found->second.faults)
        if (!fault_reading_known(gpu.health, earlier.fault.key)) {
          gpu.health.earlier_faults.push_back(earlier);
          remembered.push_back(std::move(earlier));
        }
    for (GpuFault &fault : faults_read(gpu))
      remembered.push_back({std::move(fault), snapshot.timestamp});
    if (remembered.empty()) {
      if (found != gpus_.end())
        gpus_.erase(found);
      continue;
    }
    Remembered &entry = found != gpus_.end() ? found->second : gpus_[identity];
    entry.faults = std::move(remembered);
    entry.seen = samples_;
  }
  while (gpus_.size() > max_gpus)
    gpus_.erase(std::min_element(gpus_.begin(), gpus_.end(), [](const auto &a, const auto &b) {
      return a.second.seen < b.second.seen;
    }));
}

} // namespace nvsmi
