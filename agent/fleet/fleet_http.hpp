// One bounded HTTP(S) GET to another machine: what `fleet`, `top --hosts` and serve's /fleet ask
// each agent's serve, and what `fleet --prometheus` asks a Prometheus. Whatever answers is hostile:
// one deadline covers everything from name resolution to the answer's last byte, and the answer's
// headers and body are bounded as they arrive.
#pragma once

#include "fleet/fleet_hosts.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ssl/context.hpp>

#include <chrono>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>

namespace nvsmi {

struct FleetCredentials {
  std::string user;
  std::string password;
};

struct FleetClientOptions {
  std::vector<FleetHost> hosts;
  // Name resolution, connection, TLS handshake, request and the whole answer, together.
  std::chrono::milliseconds timeout{3000};
  // An answer larger than this is refused as it arrives (a snapshot of 8 busy GPUs is ~50 KB).
  std::size_t max_answer_bytes = 4u << 20;
  // The certificate authorities that https:// hosts are checked against; empty: the system's.
  std::string ca_file;
  std::optional<FleetCredentials> credentials; // basic auth, sent to every host
};

// `user` with the first line of `password_file` (a password is never on a command line, where
// every local user reads it in `ps`). Throws AgentError: exit_io where the file cannot be read,
// exit_usage where it is empty or the user holds a `:` or a control character.
FleetCredentials read_fleet_credentials(const std::string &user, const std::string &password_file);

// The TLS client context for https:// hosts (TLS 1.2 or later, checked against `ca_file` or the
// system's authorities). Throws AgentError(exit_io) where the authorities cannot be loaded.
boost::asio::ssl::context fleet_tls_context(const std::string &ca_file);

struct HttpAnswer {
  // Why no whole answer came ("no answer in 3 s", "cannot connect: Connection refused", "answered
  // more than 4 MiB"); printable. Empty when one came, whatever its status.
  std::string failure;
  unsigned status = 0;
  std::string body;
};

// GET `target` ("/api/v1/snapshot") of `host` under the options' deadline, size bound and
// credentials (`tls` for an https:// host, else null; it must outlive the request). `done` is
// called once on the context's thread. Returns what ends the request now, as if its deadline had
// passed (`done` is then called with "cancelled"); calling it after the end does nothing.
std::function<void()> bounded_get(boost::asio::io_context &context,
                                  const FleetClientOptions &options, boost::asio::ssl::context *tls,
                                  const FleetHost &host, std::string target,
                                  std::function<void(HttpAnswer)> done);

} // namespace nvsmi
