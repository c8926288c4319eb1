#include "http_server.hpp"

#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/v6_only.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>

#include <charconv>
#include <optional>
#include <unordered_set>

namespace nvsmi {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

class Session;

} // namespace

struct HttpServer::Shared {
  Shared(asio::io_context &context, HttpLimits l, HttpHandler h)
      : acceptor(context), pause(context), limits(l), handler(std::move(h)) {}
  tcp::acceptor acceptor;
  asio::steady_timer pause; // after a failed accept
  HttpLimits limits;
  HttpHandler handler;
  std::unordered_set<Session *> sessions;
  bool stopped = false;
};

namespace {

using Response = http::response<http::span_body<const char>>;

class Session : public std::enable_shared_from_this<Session> {
public:
  Session(tcp::socket socket, std::shared_ptr<HttpServer::Shared> shared)
      : stream_(std::move(socket)), shared_(std::move(shared)) {
    shared_->sessions.insert(this);
  }
  ~Session() { shared_->sessions.erase(this); }

  void start() { read_request(); }
  void close() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.close();
  }

private:
  void read_request() {
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(shared_->limits.header_bytes));
    parser_->body_limit(shared_->limits.body_bytes);
    stream_.expires_after(shared_->limits.request_timeout);
    http::async_read(stream_, buffer_, *parser_,
                     [self = shared_from_this()](beast::error_code error, std::size_t) {
                       self->on_request(error);
                     });
  }

  void on_request(beast::error_code error) {
    if (error == http::error::header_limit)
      return reply_error(431, "request headers too large\n");
    if (error == http::error::body_limit)
      return reply_error(413, "request body too large\n");
    if (error) // the client left, timed out or sent something that is not HTTP
      return close();

    const auto &request = parser_->get();
    keep_alive_ = request.keep_alive();
    head_ = request.method() == http::verb::head;
    if (request.method() != http::verb::get && !head_) {
      auto response = text_response(405, "only GET and HEAD\n");
      response.headers.push_back({"Allow", "GET, HEAD"});
      return send(std::move(response));
    }
    std::string_view target(request.target().data(), request.target().size());
    std::size_t mark = target.find('?');
    std::string_view path = target.substr(0, mark);
    std::string_view query = mark == std::string_view::npos ? "" : target.substr(mark + 1);
    send(shared_->handler(path, query));
  }

  static HttpResponse text_response(unsigned status, const char *text) {
    return {status, "text/plain; charset=utf-8", std::make_shared<const std::string>(text), {}};
  }

  void reply_error(unsigned status, const char *text) {
    keep_alive_ = false;
    head_ = false;
    send(text_response(status, text));
  }

  void send(HttpResponse response) {
    body_ = response.body ? response.body : std::make_shared<const std::string>();
    response_.emplace();
    response_->result(response.status);
    response_->version(11);
    response_->set(http::field::server, "nvsmi-agent");
    response_->set(http::field::content_type, response.content_type);
    response_->set(http::field::cache_control, "no-store");
    response_->set("X-Content-Type-Options", "nosniff");
    for (const auto &[name, value] : response.headers)
      response_->set(name, value);
    response_->keep_alive(keep_alive_);
    response_->content_length(body_->size());
    if (!head_)
      response_->body() = {body_->data(), body_->size()};
    stream_.expires_after(shared_->limits.write_timeout);
    http::async_write(stream_, *response_,
                      [self = shared_from_this()](beast::error_code error, std::size_t) {
                        if (error || !self->keep_alive_ || self->shared_->stopped)
                          return self->close();
                        self->read_request();
                      });
  }

  beast::tcp_stream stream_;
  std::shared_ptr<HttpServer::Shared> shared_;
  beast::flat_buffer buffer_{16384};
  std::optional<http::request_parser<http::string_body>> parser_;
  std::optional<Response> response_;
  std::shared_ptr<const std::string> body_;
  bool keep_alive_ = false, head_ = false;
};

void accept_next(const std::shared_ptr<HttpServer::Shared> &shared) {
  shared->acceptor.async_accept([shared](beast::error_code error, tcp::socket socket) {
    if (shared->stopped || error == asio::error::operation_aborted)
      return;
    if (error) {
      // Out of descriptors (EMFILE) and the like: the pending connection stays queued, so
      // accepting again at once would spin. Wait a little, then go on serving.
      shared->pause.expires_after(std::chrono::milliseconds(100));
      shared->pause.async_wait([shared](beast::error_code paused) {
        if (!paused && !shared->stopped)
          accept_next(shared);
      });
      return;
    }
    if (shared->sessions.size() >= shared->limits.max_connections) {
      beast::error_code ignored;
      socket.close(ignored);
    } else {
      std::make_shared<Session>(std::move(socket), shared)->start();
    }
    accept_next(shared);
  });
}

} // namespace

HttpServer::HttpServer(asio::io_context &context, const tcp::endpoint &endpoint, HttpLimits limits,
                       HttpHandler handler)
    : shared_(std::make_shared<Shared>(context, limits, std::move(handler))) {
  tcp::acceptor &acceptor = shared_->acceptor;
  acceptor.open(endpoint.protocol());
  acceptor.set_option(asio::socket_base::reuse_address(true));
  if (endpoint.protocol() == tcp::v6())
    acceptor.set_option(asio::ip::v6_only(false));
  acceptor.bind(endpoint);
  acceptor.listen(asio::socket_base::max_listen_connections);
}

HttpServer::~HttpServer() { stop(); }

tcp::endpoint HttpServer::local_endpoint() const { return shared_->acceptor.local_endpoint(); }

void HttpServer::start() { accept_next(shared_); }

void HttpServer::stop() {
  if (shared_->stopped)
    return;
  shared_->stopped = true;
  beast::error_code ignored;
  shared_->acceptor.close(ignored);
  shared_->pause.cancel();
  std::vector<Session *> open(shared_->sessions.begin(), shared_->sessions.end());
  for (Session *session : open)
    session->close();
}

std::optional<tcp::endpoint> parse_listen_address(const std::string &text) {
  std::size_t colon = text.rfind(':');
  if (colon == std::string::npos)
    return std::nullopt;
  std::string host = text.substr(0, colon), port_text = text.substr(colon + 1);
  unsigned port = 0;
  auto [end, error] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (error != std::errc() || end != port_text.data() + port_text.size() || port > 65535 ||
      port_text.empty())
    return std::nullopt;
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  else if (host.find(':') != std::string::npos)
    return std::nullopt; // an IPv6 address needs its brackets
  if (host.empty())
    host = "::";
  if (host == "localhost")
    host = "127.0.0.1";
  beast::error_code bad;
  asio::ip::address address = asio::ip::make_address(host, bad);
  if (bad)
    return std::nullopt;
  return tcp::endpoint(address, static_cast<unsigned short>(port));
}

std::optional<std::string> query_value(std::string_view query, std::string_view name) {
  while (!query.empty()) {
    std::size_t amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    std::size_t equals = pair.find('=');
    if (pair.substr(0, equals) == name)
      return std::string(equals == std::string_view::npos ? "" : pair.substr(equals + 1));
    if (amp == std::string_view::npos)
      break;
    query.remove_prefix(amp + 1);
  }
  return std::nullopt;
}

} // namespace nvsmi
