#include "formats/prometheus_text.hpp"

#include "nvsmi/utf8.hpp"

#include <charconv>
#include <cmath>
#include <cstdint>

namespace nvsmi {

std::string prometheus_number(double value) {
  if (std::abs(value) < 1e15 && value == std::trunc(value))
    return std::to_string(static_cast<std::int64_t>(value));
  char buffer[64];
  auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
  return std::string(buffer, result.ptr);
}

void append_label(std::string &labels, const char *name, const std::string &value) {
  if (!labels.empty())
    labels += ',';
  labels += name;
  labels += "=\"";
  for (char c : valid_utf8(value)) {
    if (c == '\\' || c == '"')
      labels += '\\';
    if (c == '\n')
      labels += "\\n";
    else
      labels += c;
  }
  labels += '"';
}

void append_label(std::string &labels, const char *name, const Text &value) {
  if (value)
    append_label(labels, name, *value);
}

std::string gpu_labels(const Gpu &gpu) {
  std::string labels;
  append_label(labels, "gpu", std::to_string(gpu.index));
  append_label(labels, "uuid", gpu.uuid);
  append_label(labels, "name", gpu.name);
  return labels;
}

} // namespace nvsmi
