#include "fleet/fleet_hosts.hpp"

#include "core/exit_codes.hpp"
#include "core/screen_text.hpp"
#include "files/file_io.hpp"

#include <algorithm>
#include <charconv>

namespace nvsmi {
namespace {

[[noreturn]] void refuse(std::string_view entry, const std::string &why) {
  throw AgentError(exit_usage,
                   "--hosts: \"" + printable_text(entry) + "\" is not HOST:PORT (" + why + ")");
}

// A host name or address as DNS and the resolver take them: letters, digits, `-`, `.`, `_`, and
// `:` and `%` for an IPv6 address and its zone. Anything else (spaces, `/`, `@`, `?`, controls) is
// a URL's path, user info or a query smuggled in, or bytes meant for a screen.
bool host_character(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '.' || c == '_' || c == ':' || c == '%';
}

std::string_view trimmed(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t' || text.front() == '\r'))
    text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\r'))
    text.remove_suffix(1);
  return text;
}

} // namespace

std::string FleetHost::label() const {
  std::string shown = host.find(':') == std::string::npos ? host : "[" + host + "]";
  return (tls ? "https://" : "") + shown + ":" + port;
}

FleetHost parse_fleet_host(std::string_view text) {
  std::string_view entry = text;
  FleetHost out;
  if (text.rfind("https://", 0) == 0) {
    out.tls = true;
    text.remove_prefix(8);
  } else if (text.rfind("http://", 0) == 0) {
    text.remove_prefix(7);
  }
  std::string_view host, port;
  if (!text.empty() && text.front() == '[') {
    std::size_t close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':')
      refuse(entry, "an IPv6 address is written [ADDRESS]:PORT");
    host = text.substr(1, close - 1);
    port = text.substr(close + 2);
  } else {
    std::size_t colon = text.rfind(':');
    if (colon == std::string_view::npos)
      refuse(entry, "no port");
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
    if (host.find(':') != std::string_view::npos)
      refuse(entry, "an IPv6 address is written [ADDRESS]:PORT");
  }
  if (host.empty())
    refuse(entry, "no host");
  if (host.size() > 253 || !std::all_of(host.begin(), host.end(), host_character))
    refuse(entry, "not a host name or address");
  unsigned number = 0;
  auto [end, error] = std::from_chars(port.data(), port.data() + port.size(), number);
  if (port.empty() || error != std::errc{} || end != port.data() + port.size() || number == 0 ||
      number > 65535 || port.front() == '+')
    refuse(entry, "the port is not 1-65535");
  out.host = std::string(host);
  out.port = std::to_string(number);
  return out;
}

std::vector<FleetHost> parse_fleet_hosts(std::string_view list) {
  std::vector<FleetHost> hosts;
  while (true) {
    std::size_t comma = list.find(',');
    std::string_view entry = trimmed(list.substr(0, comma));
    if (!entry.empty()) {
      FleetHost host = parse_fleet_host(entry);
      bool twice = std::any_of(hosts.begin(), hosts.end(),
                               [&](const FleetHost &seen) { return seen.label() == host.label(); });
      if (twice)
        throw AgentError(exit_usage,
                         "--hosts: " + printable_text(host.label()) + " is named twice");
      hosts.push_back(std::move(host));
      if (hosts.size() > max_fleet_hosts)
        throw AgentError(exit_usage,
                         "--hosts: more than " + std::to_string(max_fleet_hosts) + " hosts");
    }
    if (comma == std::string_view::npos)
      break;
    list.remove_prefix(comma + 1);
  }
  if (hosts.empty())
    throw AgentError(exit_usage, "--hosts: no host given");
  return hosts;
}

std::vector<FleetHost> read_fleet_hosts_file(const std::string &path) {
  FileBytes bytes = read_capped(path, 1 << 20);
  std::string_view text = bytes.view();
  std::string list;
  std::size_t line_number = 0;
  while (!text.empty()) {
    std::size_t end = text.find('\n');
    std::string_view line = trimmed(text.substr(0, end));
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    ++line_number;
    if (line.empty() || line.front() == '#')
      continue;
    if (line.find(',') != std::string_view::npos)
      throw AgentError(exit_usage, "--hosts-file " + printable_text(path) + ": line " +
                                       std::to_string(line_number) + " holds more than one host");
    try {
      parse_fleet_host(line);
    } catch (const AgentError &error) {
      throw AgentError(exit_usage, "--hosts-file " + printable_text(path) + ": line " +
                                       std::to_string(line_number) + ": " + error.what());
    }
    list += std::string(line) + ",";
  }
  try {
    return parse_fleet_hosts(list);
  } catch (const AgentError &error) {
    throw AgentError(exit_usage, "--hosts-file " + printable_text(path) + ": " + error.what());
  }
}

} // namespace nvsmi
