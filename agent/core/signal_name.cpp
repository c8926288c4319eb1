#include "core/signal_name.hpp"

#include <cstring>

namespace nvsmi {

std::string signal_name(int signal) {
  const char *abbreviation = ::sigabbrev_np(signal);
  return abbreviation ? std::string("SIG") + abbreviation : "signal " + std::to_string(signal);
}

} // namespace nvsmi
