#include "host/host_reader.hpp"

#include "host/procps_library.hpp"

#include <array>
#include <climits>
#include <sys/sysinfo.h>
#include <unistd.h>

namespace nvsmi {
namespace {

// In this order, so that STAT_VAL's index is the item's place here. Guest time is left out: the
// kernel counts it in user and nice already (libproc2's STAT_TIC_SUM_TOTAL adds it again).
// The online CPUs are the CPU lines of the same read of /proc/stat (libproc2 counts them into the
// summary's contributors): procps_cpu_count would ask sysconf, which opens and reads
// /sys/devices/system/cpu/online on every sample for the same figure.
enum StatItem {
  tic_user,
  tic_nice,
  tic_system,
  tic_idle,
  tic_iowait,
  tic_irq,
  tic_softirq,
  tic_stolen,
  boot,
  online_cpus
};
std::array<stat_item, 10> stat_items = {STAT_TIC_USER,         STAT_TIC_NICE,
                                        STAT_TIC_SYSTEM,       STAT_TIC_IDLE,
                                        STAT_TIC_IOWAIT,       STAT_TIC_IRQ,
                                        STAT_TIC_SOFTIRQ,      STAT_TIC_STOLEN,
                                        STAT_SYS_TIME_OF_BOOT, STAT_TIC_NUM_CONTRIBUTORS};
enum MemoryItem { mem_total, mem_available };
std::array<meminfo_item, 2> memory_items = {MEMINFO_MEM_TOTAL, MEMINFO_MEM_AVAILABLE};

std::optional<std::string> hostname() {
  std::array<char, HOST_NAME_MAX + 1> name{};
  if (::gethostname(name.data(), name.size()) != 0)
    return std::nullopt;
  name.back() = '\0'; // POSIX leaves a cut name unterminated
  return std::string(name.data());
}

// The last minute's load as /proc/loadavg prints it (to the hundredth, rounded the kernel's way),
// from one sysinfo call: libproc2's procps_loadavg opens, stats, reads and closes /proc/loadavg on
// every sample. The kernel keeps the load in fixed point with 11 fraction bits (FSHIFT) and
// sysinfo shifts it to 16 (SI_LOAD_SHIFT); /proc/loadavg adds 1/200 and prints the hundredths.
std::optional<double> load_average() {
  struct sysinfo info {};
  if (::sysinfo(&info) != 0)
    return std::nullopt;
  constexpr unsigned fraction_bits = 11, one = 1u << fraction_bits;
  unsigned long load = (info.loads[0] >> (SI_LOAD_SHIFT - fraction_bits)) + one / 200;
  unsigned long whole = load >> fraction_bits,
                hundredths = ((load & (one - 1)) * 100) >> fraction_bits;
  return static_cast<double>(whole * 100 + hundredths) / 100.0;
}

} // namespace

HostReader::HostReader() : library_(procps()) {
  if (!library_)
    return;
  if (library_->stat_new(&stat_) < 0)
    stat_ = nullptr;
  if (library_->meminfo_new(&memory_) < 0)
    memory_ = nullptr;
}

HostReader::~HostReader() {
  if (stat_)
    library_->stat_unref(&stat_);
  if (memory_)
    library_->meminfo_unref(&memory_);
}

HostFacts HostReader::read() {
  HostFacts facts;
  facts.hostname = hostname();
  // procps_stat_select reads /proc/stat on every call (procps_stat_get would keep a read for a
  // second), so two samples less than a second apart still see the time between them.
  if (stat_)
    if (stat_stack *stack =
            library_->stat_select(stat_, stat_items.data(), static_cast<int>(stat_items.size()))) {
      auto tics = [&](StatItem item) { return STAT_VAL(item, ull_int, stack, stat_); };
      CpuTicks ticks;
      ticks.total = tics(tic_user) + tics(tic_nice) + tics(tic_system) + tics(tic_idle) +
                    tics(tic_iowait) + tics(tic_irq) + tics(tic_softirq) + tics(tic_stolen);
      ticks.busy = ticks.total - tics(tic_idle) - tics(tic_iowait);
      facts.cpu_ticks = ticks;
      if (unsigned long booted = STAT_VAL(boot, ul_int, stack, stat_); booted > 0)
        facts.boot_time = static_cast<std::int64_t>(booted);
      if (int count = STAT_VAL(online_cpus, s_int, stack, stat_); count > 0)
        facts.cpu_count = count;
    }
  if (memory_)
    if (meminfo_stack *stack = library_->meminfo_select(memory_, memory_items.data(),
                                                        static_cast<int>(memory_items.size()))) {
      if (unsigned long kib = MEMINFO_VAL(mem_total, ul_int, stack, memory_); kib > 0) {
        facts.memory_total_kib = kib;
        facts.memory_available_kib = MEMINFO_VAL(mem_available, ul_int, stack, memory_);
      }
    }
  facts.load1 = load_average();
  return facts;
}

} // namespace nvsmi
