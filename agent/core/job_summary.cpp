#include "core/job_summary.hpp"

#include "core/mig_text.hpp"

#include <cmath>

namespace nvsmi {

std::string job_gpu_name(const JobGpu &gpu) {
  return gpu.mig_device ? mig_instance_name(gpu.index, gpu.mig_device)
                        : "GPU " + std::to_string(gpu.index);
}

bool peak_incomplete(const JobGpuTally &gpu) { return !gpu.unknown.empty(); }

RealReading batch_growth_estimate(const JobGpuTally &gpu) {
  if (peak_incomplete(gpu) || !gpu.memory_total_mib || !gpu.peak_job_memory_mib ||
      *gpu.peak_job_memory_mib <= 0)
    return std::nullopt;
  double ratio =
      static_cast<double>(*gpu.memory_total_mib) / static_cast<double>(*gpu.peak_job_memory_mib);
  return std::floor(ratio * 10) / 10;
}

} // namespace nvsmi
