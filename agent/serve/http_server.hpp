// A small HTTP/1.1 server on Boost.Beast for the agent's few read-only endpoints: GET and HEAD
// only, and limits on what a client may send, how long it may take, and how many may connect, so
// that slow or many clients cannot exhaust it. When every connection is taken, a new one closes
// the one that has waited longest without sending a byte (then the slowest to send its request,
// then the slowest to take its answer), so that a client that sends its request at once is
// served however many idle connections another holds; a remote address (an IPv6 one by /64) may
// hold only so many.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace boost::asio::ssl {
class context;
}

namespace nvsmi {

class BasicAuth;

// Who may talk to the server and how (the web config, web_config.hpp): TLS where `tls` is set,
// basic auth on every request where `auth` is.
struct HttpSecurity {
  std::shared_ptr<boost::asio::ssl::context> tls;
  std::shared_ptr<BasicAuth> auth;
};

struct HttpLimits {
  std::size_t max_connections = 2048; // past it the longest idle one goes, or the new one
  // Connections from one remote address (loopback's are bounded only by max_connections: every
  // local user shares it, and the order above protects a prompt client there).
  std::size_t max_connections_per_address = 64;
  std::size_t max_deferred = 64;   // answers made later (HttpResponse::later) waiting their turn
  std::size_t header_bytes = 8192; // request line and headers
  std::size_t body_bytes = 1024;   // GET and HEAD need none
  std::chrono::milliseconds request_timeout{10000}; // a whole request, idle time included
  std::chrono::milliseconds write_timeout{10000};   // a response, or each part of a streamed one
  // Answer only requests whose Host names loopback (421 otherwise), so that a web page the
  // operator visits cannot read the API through DNS rebinding. Set for a loopback listen address.
  bool loopback_hosts_only = false;
};

struct HttpResponse {
  unsigned status = 200;
  std::string content_type;
  std::shared_ptr<const std::string> body; // shared: cached bodies are not copied per request
  std::vector<std::pair<std::string, std::string>> headers;
  // Instead of `body`: a body made part by part as the client reads it (chunked; HTTP/1.0
  // clients get it until the connection closes). Appends a part, returns false after the last.
  std::function<bool(std::string &out)> stream;
  // Instead of all the above: a costly answer, made later on the server's thread, one such at a
  // time between other clients' requests, so that a burst of them (hundreds of /api/v1/series)
  // does not keep a cheap one (/metrics) waiting behind all of them. Past
  // HttpLimits::max_deferred waiting, the request gets 503 with Retry-After: 1.
  std::function<HttpResponse()> later = {};
};

// Called for GET and HEAD with the request target's path and query ("seconds=60").
using HttpHandler = std::function<HttpResponse(std::string_view path, std::string_view query)>;

class HttpServer {
public:
  // Binds and listens at once; throws boost::system::system_error when it cannot.
  HttpServer(boost::asio::io_context &context, const boost::asio::ip::tcp::endpoint &endpoint,
             HttpLimits limits, HttpHandler handler, HttpSecurity security = {});
  ~HttpServer();
  boost::asio::ip::tcp::endpoint local_endpoint() const;
  void start();
  bool tls() const;
  // Stops accepting and closes every connection.
  void stop();

  struct Shared;

private:
  std::shared_ptr<Shared> shared_;
};

// "127.0.0.1:9400", "[::1]:9400", ":9400" (all addresses) into an endpoint; nullopt when malformed.
std::optional<boost::asio::ip::tcp::endpoint> parse_listen_address(const std::string &text);

// Whether a Host header's value names this machine's loopback: localhost, 127.0.0.0/8 or [::1],
// with or without a port.
bool names_loopback(std::string_view host);

// The value of `name` in a query string ("a=1&seconds=60"), or nullopt.
std::optional<std::string> query_value(std::string_view query, std::string_view name);
// `text` read whole as a decimal number ("inf" and "nan" included: the caller bounds it), or
// nullopt when any of it is not.
std::optional<double> whole_number(std::string_view text);

} // namespace nvsmi
