#include "log_line.hpp"

#include <cstdio>
#include <ctime>

namespace nvsmi {

void log_line(const std::string &message) {
  std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", &utc);
  std::fprintf(stderr, "nvsmi-agent: %s %s\n", stamp, message.c_str());
}

} // namespace nvsmi
