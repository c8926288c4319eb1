// NVIDIA's Xid error reports in the kernel log, as the driver prints them
// (docs/research/xid.md, section 1):
//   NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.
//   NVRM: Xid (PCI:0000:01:00 GPU-I:02 GPU-CI:01): 13, pid=1797, name=python3, Graphics ...
//   NVRM: Xid (PCI:0000:01:00): 62, 223b6a66 00002100 ...            (no pid, no name)
// with whatever came before "NVRM:" (a /dev/kmsg record's "6,1234,5678,-;", a syslog or dmesg
// prefix). No I/O here: the agent's kernel_log/ reads the log and feeds lines to this.
#pragma once

#include "nvsmi/snapshot.hpp"

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace nvsmi {

struct XidEvent {
  std::string pci_device; // "0000:3b:00", lower case, as printed (no function)
  int xid = 0;
  Reading pid;         // nullopt for '<unknown>' or a line without pid=
  Text process_name;   // nullopt for <unknown> or none
  std::string message; // what follows (after pid= and name= where present): valid UTF-8, capped
};

// nullopt for any line that is not an NVRM Xid report (SXid lines of NVSwitch included).
std::optional<XidEvent> parse_xid_line(std::string_view line);

// Whether NVIDIA's Xid catalog says this Xid needs a GPU reset or a reboot to clear (46, 48, 62,
// 64, 74, 79, 95, 109, 110, 119, 120, 136, 140, 143, 155, 156, 158; research section 12).
bool xid_needs_reset(int xid);

// The position in snapshot.gpus of the GPU whose bus id is the tally's device (same_pci_device),
// else nullopt (an NVSwitch, a GPU not in this sample).
std::optional<std::size_t> xid_gpu(const Snapshot &snapshot, const XidTally &tally);

} // namespace nvsmi
