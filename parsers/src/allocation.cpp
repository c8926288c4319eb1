#include "nvsmi/allocation.hpp"

namespace nvsmi {
namespace {

constexpr std::size_t max_job_id_digits = 20;
constexpr std::size_t max_account_name_bytes = 64;

} // namespace

bool is_job_id(std::string_view text) {
  if (text.empty() || text.size() > max_job_id_digits)
    return false;
  for (char c : text)
    if (c < '0' || c > '9')
      return false;
  return true;
}

bool is_account_name(std::string_view text) {
  if (text.empty() || text.size() > max_account_name_bytes || text.front() == '-')
    return false;
  for (char c : text) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-';
    if (!ok)
      return false;
  }
  return true;
}

std::string allocation_text(const Allocation &allocation) {
  std::string text = "job " + allocation.job_id;
  if (allocation.user)
    text += " of " + *allocation.user;
  return text;
}

} // namespace nvsmi
