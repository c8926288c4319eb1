// The machine beside the GPUs as /proc has it now (CPU counters, online CPUs, memory, boot time),
// read with libproc2, the library of ps, top and free; the load from the kernel's sysinfo.
#pragma once

#include "host/cpu_shares.hpp"

#include <cstdint>
#include <optional>
#include <string>

struct stat_info;
struct meminfo_info;

namespace nvsmi {

struct Procps;

// Each nullopt where its source could not be read.
struct HostFacts {
  std::optional<std::string> hostname;
  std::optional<long> cpu_count; // online CPUs
  std::optional<CpuTicks> cpu_ticks;
  std::optional<double> load1;
  std::optional<std::uint64_t> memory_total_kib, memory_available_kib;
  std::optional<std::int64_t> boot_time; // seconds since the epoch
};

class HostReader {
public:
  HostReader();
  ~HostReader();
  HostReader(const HostReader &) = delete;
  HostReader &operator=(const HostReader &) = delete;

  HostFacts read();

private:
  const Procps *library_; // nullptr where libproc2 cannot be loaded: every reading of it unknown
  stat_info *stat_ = nullptr;
  meminfo_info *memory_ = nullptr;
};

} // namespace nvsmi
