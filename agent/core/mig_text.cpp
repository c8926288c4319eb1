#include "core/mig_text.hpp"

#include "core/screen_text.hpp"

namespace nvsmi {

std::string mig_instance_name(std::int64_t gpu_index, std::optional<std::int64_t> device) {
  return "GPU " + std::to_string(gpu_index) + " MIG " +
         (device ? std::to_string(*device) : std::string("?"));
}

std::string mig_profile_text(const std::string &profile) {
  return cut_to_columns(printable_text(profile), 32);
}

} // namespace nvsmi
