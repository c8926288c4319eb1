#include "nvsmi/pci_address.hpp"

namespace nvsmi {
namespace {

// Up to `max_digits` hex digits from the front of `text`, consumed.
std::optional<unsigned> hex_part(std::string_view &text, std::size_t max_digits) {
  unsigned value = 0;
  std::size_t digits = 0;
  while (digits < text.size() && digits < max_digits) {
    char c = text[digits];
    int digit = c >= '0' && c <= '9'                     ? c - '0'
                : (c | 0x20) >= 'a' && (c | 0x20) <= 'f' ? (c | 0x20) - 'a' + 10
                                                         : -1;
    if (digit < 0)
      break;
    value = value * 16 + static_cast<unsigned>(digit);
    ++digits;
  }
  if (digits == 0)
    return std::nullopt;
  text.remove_prefix(digits);
  return value;
}

bool take(std::string_view &text, char c) {
  if (text.empty() || text.front() != c)
    return false;
  text.remove_prefix(1);
  return true;
}

} // namespace

std::optional<PciAddress> parse_pci_address(std::string_view text) {
  // Split on ':' from the right: [domain:]bus:device[.function].
  std::size_t colons = 0;
  for (char c : text)
    colons += c == ':';
  if (colons != 1 && colons != 2)
    return std::nullopt;
  PciAddress address;
  if (colons == 2) {
    auto domain = hex_part(text, 8);
    if (!domain || !take(text, ':'))
      return std::nullopt;
    address.domain = *domain;
  }
  auto bus = hex_part(text, 2);
  if (!bus || !take(text, ':'))
    return std::nullopt;
  auto device = hex_part(text, 2);
  if (!device)
    return std::nullopt;
  address.bus = *bus;
  address.device = *device;
  if (take(text, '.')) {
    auto function = hex_part(text, 1);
    if (!function)
      return std::nullopt;
    address.function = *function;
  }
  if (!text.empty())
    return std::nullopt;
  return address;
}

bool same_pci_device(std::string_view a, std::string_view b) {
  auto first = parse_pci_address(a), second = parse_pci_address(b);
  return first && second && first->domain == second->domain && first->bus == second->bus &&
         first->device == second->device;
}

} // namespace nvsmi
