// PCI addresses as nvidia-smi ("00000000:3B:00.0") and the kernel's Xid lines ("0000:3b:00")
// print them, so that a kernel line, a device-handle message and a GPU can be matched.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace nvsmi {

struct PciAddress {
  unsigned domain = 0, bus = 0, device = 0;
  std::optional<unsigned> function;
};

// "00000000:3B:00.0", "0000:3b:00", "3b:00.0" (domain 0): hex, any case; nullopt for any other
// text.
std::optional<PciAddress> parse_pci_address(std::string_view text);

// The same domain, bus and device (the function ignored: the kernel's Xid line has none). False
// when either is not an address.
bool same_pci_device(std::string_view a, std::string_view b);

} // namespace nvsmi
