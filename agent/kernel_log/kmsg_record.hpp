// One record of /dev/kmsg as read(2) returns it (Documentation/ABI/testing/dev-kmsg):
//   "<prefix>,<sequence>,<microseconds since boot>,<flags>[,<more>];<message>\n"
// followed by continuation lines (" SUBSYSTEM=pci\n") that carry metadata. The message escapes
// non-printable bytes, its backslashes and embedded newlines as "\xNN".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace nvsmi {

struct KmsgRecord {
  // 0: the kernel; anything else was written from user space. As wide as the header's number, so
  // that no prefix the header can hold wraps to the kernel's 0.
  std::uint64_t facility = 0;
  int level = 0;
  std::uint64_t sequence = 0;
  std::uint64_t usec = 0; // CLOCK_BOOTTIME (CLOCK_MONOTONIC on kernels before 5.10)
  std::string message;    // decoded: may hold any byte, newlines included
};

// nullopt for text that is not a record.
std::optional<KmsgRecord> parse_kmsg_record(std::string_view record);

} // namespace nvsmi

namespace nvsmi {

// When a record stamped `usec` after boot was logged, in this machine's local time with its
// offset ("2024-08-30T11:43:09.512+02:00"), given the boot clock and the wall clock read together
// (microseconds). nullopt for a stamp in the future of the boot clock (a clock that went back).
std::optional<std::string> record_local_time(std::uint64_t usec, std::uint64_t boot_now_usec,
                                             std::int64_t wall_now_usec);

} // namespace nvsmi
