#include "nvsmi/gpu_selector.hpp"

#include "nvsmi/pci_address.hpp"
#include "reader_text.hpp"

#include <string>

namespace nvsmi {
namespace {

constexpr std::size_t max_selector_bytes = 96;
constexpr std::size_t max_index_digits = 9;

bool digits_only(std::string_view text) {
  return !text.empty() && text.find_first_not_of("0123456789") == std::string_view::npos;
}

bool same_address(const PciAddress &wanted, const PciAddress &gpu) {
  return wanted.domain == gpu.domain && wanted.bus == gpu.bus && wanted.device == gpu.device &&
         wanted.function.value_or(0) == gpu.function.value_or(0);
}

// "GPU-" or "MIG-" (any case), then hex digits and dashes: what nvidia-smi prints as a GPU's or a
// MIG device's UUID (GPU-5c1a0e47-..., 8-4-4-4-12 digits), not held to its grouping.
bool is_uuid(std::string_view text) {
  if (text.size() <= 4 || !(equal_ignoring_case(text.substr(0, 4), "GPU-") ||
                            equal_ignoring_case(text.substr(0, 4), "MIG-")))
    return false;
  std::string_view rest = text.substr(4);
  return rest.find_first_not_of("0123456789abcdefABCDEF-") == std::string_view::npos &&
         rest.find_first_not_of('-') != std::string_view::npos;
}

} // namespace

bool valid_gpu_selector(std::string_view selector) {
  if (selector.empty() || selector.size() > max_selector_bytes)
    return false;
  if (digits_only(selector))
    return selector.size() <= max_index_digits;
  if (parse_pci_address(selector))
    return true;
  return is_uuid(selector);
}

bool selects_gpu(std::string_view selector, const Gpu &gpu) {
  if (digits_only(selector))
    return selector.size() <= max_index_digits && std::to_string(gpu.index) == selector;
  if (std::optional<PciAddress> wanted = parse_pci_address(selector)) {
    if (!gpu.pci_bus_id)
      return false;
    std::optional<PciAddress> address = parse_pci_address(*gpu.pci_bus_id);
    return address && same_address(*wanted, *address);
  }
  return gpu.uuid && equal_ignoring_case(selector, *gpu.uuid);
}

} // namespace nvsmi
