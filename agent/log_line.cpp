#include "log_line.hpp"

#include "nvsmi/utf8.hpp"

#include <cstdio>
#include <ctime>

namespace nvsmi {

void log_line(const std::string &message) {
  std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", &utc);
  std::fprintf(stderr, "nvsmi-agent: %s %s\n", stamp, valid_utf8(message).c_str());
}

} // namespace nvsmi
