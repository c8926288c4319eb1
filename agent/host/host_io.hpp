// The machine's disk and network traffic beside the GPUs: which devices count, their byte
// counters in /proc/diskstats and /proc/net/dev, and the rates between two readings. What is
// counted, and why, is docs/PROCESSES.md's "Disk and network".
#pragma once

#include "core/descriptor.hpp"

#include "nvsmi/snapshot.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace nvsmi {

// One device's two byte counters: read and written for a disk, received and sent for an interface.
struct DeviceBytes {
  std::string name;
  std::uint64_t in = 0, out = 0;
};
using DeviceCounters = std::vector<DeviceBytes>;

// What may be read of one file, and how many devices it may list: a larger file is no reading.
inline constexpr std::size_t host_io_max_file_bytes = 1 << 20;
inline constexpr std::size_t host_io_max_devices = 4096;

// The whole disks of /proc/diskstats text with their bytes read and written (its sectors are 512
// bytes whatever the device's own), those for which `whole_disk(name)` holds. nullopt for text
// that is not diskstats: a line that does not read, more than host_io_max_devices lines.
std::optional<DeviceCounters>
read_diskstats(std::string_view text, const std::function<bool(std::string_view)> &whole_disk);

// The interfaces of /proc/net/dev text with their bytes received and sent: those for which
// `is_virtual(name)` is false (the NICs: a bridge, veth, VLAN, bond or tunnel carries what a NIC
// carries too), or, where there is none (a container's namespace), every one but lo. nullopt as
// read_diskstats.
std::optional<DeviceCounters> read_net_dev(std::string_view text,
                                           const std::function<bool(std::string_view)> &is_virtual);

// Bytes a second in each direction since the previous update(), over the devices of both readings
// (one plugged in or gone between them is left out). nullopt on the first update, after one
// without counters, where no device is in both, where any counter went back (a 32-bit counter
// wrapped, a device was replaced under its name) or the clock did not move.
class DeviceRates {
public:
  using Clock = std::chrono::steady_clock;
  struct Rates {
    RealReading in, out;
  };
  Rates update(std::optional<DeviceCounters> now_read, Clock::time_point at);

private:
  std::optional<DeviceCounters> previous_;
  Clock::time_point previous_at_;
};

// The host's disk and network rates, read under `root`: "/" on the machine itself; elsewhere a
// folder holding a host's proc/ and sys/ (NVSMI_HOST_ROOT: a host's mounted into a container, or
// a test's copy).
class HostIoReader {
public:
  explicit HostIoReader(std::string root);
  // Sets the four rates of `host` since the previous read().
  void read(Host &host);

private:
  // A counters file read every sample: held open and read again from its start (a /proc file
  // gives its current text at offset 0), so that a sample walks no path for it. Opened again
  // where it is not open or was unlinked (replaced under its name, as a test's copy is); a file
  // that cannot be read, is not a regular file or is larger than host_io_max_file_bytes is
  // nullopt, and is opened afresh next time.
  class HeldFile {
  public:
    explicit HeldFile(std::string path) : path_(std::move(path)) {}
    // The file's whole text, in a buffer kept between reads; nullopt as above.
    std::optional<std::string_view> read();

  private:
    std::string path_;
    std::optional<Descriptor> fd_; // none where it is not open
    std::string text_;
  };
  // Whether a device of the previous reading counts, by its name: each is looked up under sys/
  // once while it stays listed, not every sample (a name gone for a reading is looked up anew).
  using Kinds = std::unordered_map<std::string, bool>;
  // `counts(name)`, from `previous` where it has the name; `now` gets every name asked.
  static bool kind_of(std::string_view name, Kinds &previous, Kinds &now,
                      const std::function<bool(std::string_view)> &counts);

  std::string root_;
  HeldFile diskstats_, net_dev_;
  Kinds disk_kinds_, net_kinds_;
  DeviceRates disks_, network_;
};

} // namespace nvsmi
