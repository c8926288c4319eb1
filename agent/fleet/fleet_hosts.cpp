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

[[noreturn]] void refuse_ssh(std::string_view entry, const std::string &why) {
  throw AgentError(exit_usage, "--ssh: \"" + printable_text(entry) +
                                   "\" is not [USER@]HOST[:PORT] (" + why + ")");
}

// How each list is named in what is refused, and how big it may be.
struct ListKind {
  const char *option, *file_option;
  std::size_t most;
  FleetHost (*parse)(std::string_view);
};
constexpr ListKind serve_list{"--hosts", "--hosts-file", max_fleet_hosts, parse_fleet_host};
constexpr ListKind ssh_list{"--ssh", "--ssh-hosts-file", max_ssh_hosts, parse_ssh_host};

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

bool port_number(std::string_view port, unsigned &number) {
  auto [end, error] = std::from_chars(port.data(), port.data() + port.size(), number);
  return !port.empty() && error == std::errc{} && end == port.data() + port.size() && number > 0 &&
         number <= 65535 && port.front() != '+';
}

bool user_character(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '.' || c == '_';
}

std::vector<FleetHost> parse_list(std::string_view list, const ListKind &kind) {
  std::vector<FleetHost> hosts;
  while (true) {
    std::size_t comma = list.find(',');
    std::string_view entry = trimmed(list.substr(0, comma));
    if (!entry.empty()) {
      FleetHost host = kind.parse(entry);
      bool twice = std::any_of(hosts.begin(), hosts.end(),
                               [&](const FleetHost &seen) { return seen.label() == host.label(); });
      if (twice)
        throw AgentError(exit_usage, std::string(kind.option) + ": " +
                                         printable_text(host.label()) + " is named twice");
      hosts.push_back(std::move(host));
      if (hosts.size() > kind.most)
        throw AgentError(exit_usage, std::string(kind.option) + ": more than " +
                                         std::to_string(kind.most) + " hosts");
    }
    if (comma == std::string_view::npos)
      break;
    list.remove_prefix(comma + 1);
  }
  if (hosts.empty())
    throw AgentError(exit_usage, std::string(kind.option) + ": no host given");
  return hosts;
}

std::vector<FleetHost> read_list_file(const std::string &path, const ListKind &kind) {
  FileBytes bytes = read_capped(path, 1 << 20);
  std::string_view text = bytes.view();
  std::string list;
  std::string named = std::string(kind.file_option) + " " + printable_text(path);
  std::size_t line_number = 0;
  while (!text.empty()) {
    std::size_t end = text.find('\n');
    std::string_view line = trimmed(text.substr(0, end));
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    ++line_number;
    if (line.empty() || line.front() == '#')
      continue;
    if (line.find(',') != std::string_view::npos)
      throw AgentError(exit_usage, named + ": line " + std::to_string(line_number) +
                                       " holds more than one host");
    try {
      kind.parse(line);
    } catch (const AgentError &error) {
      throw AgentError(exit_usage,
                       named + ": line " + std::to_string(line_number) + ": " + error.what());
    }
    list += std::string(line) + ",";
  }
  try {
    return parse_list(list, kind);
  } catch (const AgentError &error) {
    throw AgentError(exit_usage, named + ": " + error.what());
  }
}

} // namespace

std::string FleetHost::label() const {
  std::string shown = host.find(':') == std::string::npos ? host : "[" + host + "]";
  if (ssh)
    return (user.empty() ? "" : user + "@") + shown + (port.empty() ? "" : ":" + port);
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
  if (!port_number(port, number))
    refuse(entry, "the port is not 1-65535");
  out.host = std::string(host);
  out.port = std::to_string(number);
  return out;
}

std::vector<FleetHost> parse_fleet_hosts(std::string_view list) {
  return parse_list(list, serve_list);
}

std::vector<FleetHost> read_fleet_hosts_file(const std::string &path) {
  return read_list_file(path, serve_list);
}

FleetHost parse_ssh_host(std::string_view text) {
  std::string_view entry = text;
  FleetHost out;
  out.ssh = true;
  if (std::size_t at = text.find('@'); at != std::string_view::npos) {
    std::string_view user = text.substr(0, at);
    if (user.empty() || user.size() > 64 || user.front() == '-' ||
        !std::all_of(user.begin(), user.end(), user_character))
      refuse_ssh(entry, "not a user name");
    out.user = std::string(user);
    text.remove_prefix(at + 1);
  }
  std::string_view host, port;
  bool bracketed = !text.empty() && text.front() == '[';
  if (bracketed) {
    std::size_t close = text.find(']');
    if (close == std::string_view::npos ||
        (close + 1 < text.size() && (text[close + 1] != ':' || close + 2 >= text.size())))
      refuse_ssh(entry, "an IPv6 address is written [ADDRESS] or [ADDRESS]:PORT");
    host = text.substr(1, close - 1);
    if (close + 1 < text.size())
      port = text.substr(close + 2);
  } else {
    std::size_t colon = text.find(':');
    host = text.substr(0, colon);
    if (colon != std::string_view::npos) {
      port = text.substr(colon + 1);
      if (port.empty() || port.find(':') != std::string_view::npos)
        refuse_ssh(entry, "an IPv6 address is written [ADDRESS]:PORT");
    }
  }
  if (host.empty())
    refuse_ssh(entry, "no host");
  if (host.front() == '-')
    refuse_ssh(entry, "a host may not start with -");
  if (host.size() > 253 || !std::all_of(host.begin(), host.end(), host_character) ||
      (!bracketed && host.find(':') != std::string_view::npos))
    refuse_ssh(entry, "not a host name or address");
  unsigned number = 0;
  if (!port.empty() && !port_number(port, number))
    refuse_ssh(entry, "the port is not 1-65535");
  out.host = std::string(host);
  out.port = port.empty() ? std::string() : std::to_string(number);
  return out;
}

std::vector<FleetHost> parse_ssh_hosts(std::string_view list) { return parse_list(list, ssh_list); }

std::vector<FleetHost> read_ssh_hosts_file(const std::string &path) {
  return read_list_file(path, ssh_list);
}

} // namespace nvsmi
