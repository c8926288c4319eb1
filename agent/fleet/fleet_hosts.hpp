// Which hosts `fleet`, `top` and serve's /fleet ask: agents' serve (`--hosts`), or machines
// reached over OpenSSH (`--ssh`), as the operator wrote them, checked before anything is asked,
// since a host list may come from a file anyone edits, and a name given to ssh must never read
// as one of its options.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace nvsmi {

struct FleetHost {
  std::string host;   // a name, an IPv4 address or an IPv6 address (without its brackets)
  std::string port;   // 1..65535, as digits; for ssh, empty where not written (ssh's config says)
  bool tls = false;   // written https://HOST:PORT
  bool ssh = false;   // reached with OpenSSH's client (--ssh), not an agent's serve
  std::string user{}; // ssh only: the login name written USER@HOST, else empty (ssh's config says)

  // "gpu1:9437", "[::1]:9437", "https://gpu1:9437"; over ssh "gpu7", "alice@gpu7:2222",
  // "[::1]:2222": what the screens and the JSON call it.
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

// `[USER@]HOST[:PORT]` for --ssh: a host name (or an alias of the user's ssh config), an IPv4
// address, or [IPV6] (with :PORT after the bracket); USER of letters, digits, `.`, `_`, `-`.
// Neither may start with `-` (ssh would read it as an option). Throws AgentError(exit_usage)
// naming the entry.
FleetHost parse_ssh_host(std::string_view text);
// A comma-separated list of them (--ssh), at most max_ssh_hosts; the same host twice is refused.
std::vector<FleetHost> parse_ssh_hosts(std::string_view list);
// One a line (--ssh-hosts-file), as read_fleet_hosts_file reads its file.
std::vector<FleetHost> read_ssh_hosts_file(const std::string &path);

// Each host over ssh holds a connection and three ssh clients on it (docs/FLEET.md, "Over ssh").
inline constexpr std::size_t max_ssh_hosts = 64;

} // namespace nvsmi
