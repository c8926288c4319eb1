// Which agents `fleet`, `top --hosts` and serve's /fleet ask: the hosts as the operator wrote
// them, checked before anything is asked, since a host list may come from a file anyone edits.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace nvsmi {

struct FleetHost {
  std::string host; // a name, an IPv4 address or an IPv6 address (without its brackets)
  std::string port; // 1..65535, as digits
  bool tls = false; // written https://HOST:PORT

  // "gpu1:9437", "[::1]:9437", "https://gpu1:9437": what the screens and the JSON call it.
  std::string label() const;
};

// "HOST:PORT", "[IPV6]:PORT" or "https://HOST:PORT" (http:// is the default and may be written).
// Throws AgentError(exit_usage) naming the entry for anything else: no port, a port out of range,
// a host with spaces, controls, a path or user info, or an empty one.
FleetHost parse_fleet_host(std::string_view text);

// A comma-separated list of them (--hosts); the same host twice is refused, as is an empty list.
std::vector<FleetHost> parse_fleet_hosts(std::string_view list);

// One host a line (--hosts-file); blank lines and lines starting with `#` are skipped. Throws
// AgentError(exit_io) where the file cannot be read, exit_usage for a bad line (with its number).
// At most max_fleet_hosts hosts, and a file of at most 1 MiB.
std::vector<FleetHost> read_fleet_hosts_file(const std::string &path);

inline constexpr std::size_t max_fleet_hosts = 1024;

} // namespace nvsmi
