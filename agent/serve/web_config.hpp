// The web config file that the Prometheus exporters share (--web.config.file, the
// exporter-toolkit's YAML): TLS from `tls_server_config` (cert_file, key_file) and basic auth
// from `basic_auth_users` (user: bcrypt hash), client certificates from `client_ca_file` and
// `client_auth_type` (the verifying kinds). Anything else in it, a bad hash or a file that
// cannot be read stops serve before it starts: a config that is not what it seems must not
// leave the server open. So does, for the config and each file it names, what sshd's
// StrictModes refuses: not a regular file, owned by a user neither root nor serve's, writable by
// its group or everyone (a key everyone can read is only said).
#pragma once

#include <map>
#include <memory>
#include <string>

namespace boost::asio::ssl {
class context;
}

namespace nvsmi {

struct WebConfig {
  std::string cert_file, key_file; // TLS where both are set
  // Client certificates checked against client_ca_file: "VerifyClientCertIfGiven" or
  // "RequireAndVerifyClientCert"; empty: none asked for ("NoClientCert").
  std::string client_ca_file, client_auth_type;
  std::map<std::string, std::string> basic_auth_users; // user -> bcrypt hash ($2a$, $2b$, $2y$)
};

// Throws AgentError (exit_usage) naming the file and what is wrong with it.
WebConfig read_web_config(const std::string &path);

// A TLS 1.2+ server context with the config's certificate chain and key; throws AgentError
// (exit_usage) when they cannot be loaded. Null where the config asks for no TLS.
std::shared_ptr<boost::asio::ssl::context> tls_context(const WebConfig &config,
                                                       const std::string &path);

} // namespace nvsmi
