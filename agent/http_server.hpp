// A small HTTP/1.1 server on Boost.Beast for the agent's few read-only endpoints: GET and HEAD
// only, and limits on what a client may send, how long it may take, and how many may connect, so
// that slow or many clients cannot exhaust it.
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

namespace nvsmi {

struct HttpLimits {
  std::size_t max_connections = 2048;               // more are accepted and closed at once
  std::size_t header_bytes = 8192;                  // request line and headers
  std::size_t body_bytes = 1024;                    // GET and HEAD need none
  std::chrono::milliseconds request_timeout{10000}; // a whole request, idle time included
  std::chrono::milliseconds write_timeout{10000};   // a whole response
};

struct HttpResponse {
  unsigned status = 200;
  std::string content_type;
  std::shared_ptr<const std::string> body; // shared: cached bodies are not copied per request
  std::vector<std::pair<std::string, std::string>> headers;
};

// Called for GET and HEAD with the request target's path and query ("seconds=60").
using HttpHandler = std::function<HttpResponse(std::string_view path, std::string_view query)>;

class HttpServer {
public:
  // Binds and listens at once; throws boost::system::system_error when it cannot.
  HttpServer(boost::asio::io_context &context, const boost::asio::ip::tcp::endpoint &endpoint,
             HttpLimits limits, HttpHandler handler);
  ~HttpServer();
  boost::asio::ip::tcp::endpoint local_endpoint() const;
  void start();
  // Stops accepting and closes every connection.
  void stop();

  struct Shared;

private:
  std::shared_ptr<Shared> shared_;
};

// "127.0.0.1:9400", "[::1]:9400", ":9400" (all addresses) into an endpoint; nullopt when malformed.
std::optional<boost::asio::ip::tcp::endpoint> parse_listen_address(const std::string &text);

// The value of `name` in a query string ("a=1&seconds=60"), or nullopt.
std::optional<std::string> query_value(std::string_view query, std::string_view name);

} // namespace nvsmi
