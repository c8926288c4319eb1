#include "core/number_text.hpp"

#include <cmath>
#include <cstdio>

namespace nvsmi {

std::string number(double value, const char *format) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, format, value);
  return buffer;
}

std::string fixed_text(double value, int decimals) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
  return buffer;
}

std::string trimmed_text(double value, int decimals) {
  std::string out = fixed_text(value, decimals);
  if (out.find('.') != std::string::npos) {
    out.erase(out.find_last_not_of('0') + 1);
    if (out.back() == '.')
      out.pop_back();
  }
  return out == "-0" ? "0" : out;
}

std::string seconds_text(std::chrono::milliseconds duration) {
  return trimmed_text(static_cast<double>(duration.count()) / 1000.0, 3);
}

std::chrono::milliseconds to_ms(double seconds) {
  return std::chrono::milliseconds(std::llround(seconds * 1000));
}

} // namespace nvsmi
