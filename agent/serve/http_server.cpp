#include "serve/http_server.hpp"

#include "serve/basic_auth.hpp"

#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/v6_only.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>

#include <cctype>
#include <charconv>
#include <optional>
#include <unordered_set>

namespace nvsmi {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

// A connection, plain or TLS, as the server holds it to close it.
class Connection {
public:
  virtual ~Connection() = default;
  virtual void close() = 0;
};

} // namespace

struct HttpServer::Shared {
  Shared(asio::io_context &context, HttpLimits l, HttpHandler h, HttpSecurity s)
      : acceptor(context), pause(context), limits(l), handler(std::move(h)),
        security(std::move(s)) {}
  tcp::acceptor acceptor;
  asio::steady_timer pause; // after a failed accept
  HttpLimits limits;
  HttpHandler handler;
  HttpSecurity security;
  std::unordered_set<Connection *> sessions;
  bool stopped = false;
};

namespace {

using Response = http::response<http::span_body<const char>>;
using TlsStream = beast::ssl_stream<beast::tcp_stream>;

template <typename Stream>
class Session : public Connection, public std::enable_shared_from_this<Session<Stream>> {
public:
  template <typename... Context>
  Session(tcp::socket socket, std::shared_ptr<HttpServer::Shared> shared, Context &...context)
      : stream_(std::move(socket), context...), shared_(std::move(shared)) {
    shared_->sessions.insert(this);
  }
  ~Session() override { shared_->sessions.erase(this); }

  void start() {
    if constexpr (std::is_same_v<Stream, TlsStream>) {
      // The handshake is part of the request: its time counts against the same timeout.
      lowest().expires_after(shared_->limits.request_timeout);
      stream_.async_handshake(asio::ssl::stream_base::server,
                              [self = this->shared_from_this()](beast::error_code error) {
                                if (error)
                                  return self->close();
                                self->read_request();
                              });
    } else {
      read_request();
    }
  }
  void close() override {
    beast::error_code ignored;
    lowest().socket().shutdown(tcp::socket::shutdown_both, ignored);
    lowest().close();
  }

private:
  beast::tcp_stream &lowest() { return beast::get_lowest_layer(stream_); }

  void read_request() {
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(shared_->limits.header_bytes));
    parser_->body_limit(shared_->limits.body_bytes);
    lowest().expires_after(shared_->limits.request_timeout);
    http::async_read(stream_, buffer_, *parser_,
                     [self = this->shared_from_this()](beast::error_code error, std::size_t) {
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
    // Before the password: a page that rebinds its name to loopback gets no login prompt to
    // phish with.
    if (shared_->limits.loopback_hosts_only) {
      auto host = request.find(http::field::host);
      if (host != request.end() &&
          !names_loopback(std::string_view(host->value().data(), host->value().size())))
        return send(text_response(421, "this server answers only to localhost, 127.0.0.1 or "
                                       "[::1] (see --listen in docs/SERVE.md)\n"));
    }
    if (!shared_->security.auth)
      return answer_request();
    auto authorization = request.find(http::field::authorization);
    std::string_view given =
        authorization == request.end()
            ? std::string_view()
            : std::string_view(authorization->value().data(), authorization->value().size());
    // The parser, and so `given`, stays as it is until the verdict: nothing reads meanwhile.
    shared_->security.auth->check(
        given, [self = this->shared_from_this()](BasicAuth::Verdict verdict) {
          if (self->shared_->stopped)
            return self->close();
          if (verdict == BasicAuth::Verdict::allowed)
            return self->answer_request();
          if (verdict == BasicAuth::Verdict::busy) {
            auto response = text_response(503, "too many password checks under way\n");
            response.headers.push_back({"Retry-After", "1"});
            return self->send(std::move(response));
          }
          auto response = text_response(401, "unauthorized\n");
          response.headers.push_back({"WWW-Authenticate", "Basic realm=\"nvsmi-agent\""});
          self->send(std::move(response));
        });
  }

  void answer_request() {
    const auto &request = parser_->get();
    if (request.method() != http::verb::get && !head_) {
      auto response = text_response(405, "only GET and HEAD\n");
      response.headers.push_back({"Allow", "GET, HEAD"});
      return send(std::move(response));
    }
    http10_ = request.version() < 11;
    std::string_view target(request.target().data(), request.target().size());
    std::size_t mark = target.find('?');
    std::string_view path = target.substr(0, mark);
    std::string_view query = mark == std::string_view::npos ? "" : target.substr(mark + 1);
    send(shared_->handler(path, query));
  }

  static HttpResponse text_response(unsigned status, const char *text) {
    return {status, "text/plain; charset=utf-8", std::make_shared<const std::string>(text), {}, {}};
  }

  void reply_error(unsigned status, const char *text) {
    keep_alive_ = false;
    head_ = false;
    send(text_response(status, text));
  }

  // What every response says, whole or streamed.
  template <typename Message>
  void start_message(Message &message, const HttpResponse &response, unsigned version) const {
    message.result(response.status);
    message.version(version);
    message.set(http::field::server, "nvsmi-agent");
    message.set(http::field::content_type, response.content_type);
    message.set(http::field::cache_control, "no-store");
    message.set("X-Content-Type-Options", "nosniff");
    for (const auto &[name, value] : response.headers)
      message.set(name, value);
    message.keep_alive(keep_alive_);
  }

  void send(HttpResponse response) {
    if (response.stream)
      return send_stream(std::move(response));
    body_ = response.body ? response.body : std::make_shared<const std::string>();
    response_.emplace();
    start_message(*response_, response, 11);
    response_->content_length(body_->size());
    if (!head_)
      response_->body() = {body_->data(), body_->size()};
    lowest().expires_after(shared_->limits.write_timeout);
    http::async_write(stream_, *response_,
                      [self = this->shared_from_this()](beast::error_code error, std::size_t) {
                        // Sent: the body is not held while the connection waits for more.
                        self->response_.reset();
                        self->body_.reset();
                        if (error || !self->keep_alive_ || self->shared_->stopped)
                          return self->close();
                        self->read_request();
                      });
  }

  // A streamed body: the header, then each part as the client takes the one before, so that a
  // client that does not read holds one part, not the whole body.
  void send_stream(HttpResponse response) {
    producer_ = std::move(response.stream);
    if (http10_)
      keep_alive_ = false; // HTTP/1.0 knows no chunks: the body ends where the connection does
    header_.emplace();
    start_message(*header_, response, http10_ ? 10 : 11);
    if (!http10_)
      header_->chunked(true);
    serializer_.emplace(*header_);
    lowest().expires_after(shared_->limits.write_timeout);
    http::async_write_header(
        stream_, *serializer_,
        [self = this->shared_from_this()](beast::error_code error, std::size_t) {
          if (error || self->shared_->stopped)
            return self->close();
          if (self->head_)
            return self->finish_response();
          self->write_part();
        });
  }

  void write_part() {
    part_.clear();
    bool more = producer_(part_);
    auto next = [self = this->shared_from_this(), more](beast::error_code error, std::size_t) {
      if (error || self->shared_->stopped)
        return self->close();
      if (more)
        return self->write_part();
      self->write_last();
    };
    lowest().expires_after(shared_->limits.write_timeout);
    if (http10_)
      asio::async_write(stream_, asio::buffer(part_), std::move(next));
    else
      asio::async_write(stream_, http::make_chunk(asio::buffer(part_)), std::move(next));
  }

  void write_last() {
    if (http10_)
      return close();
    lowest().expires_after(shared_->limits.write_timeout);
    asio::async_write(stream_, http::make_chunk_last(),
                      [self = this->shared_from_this()](beast::error_code error, std::size_t) {
                        if (error || self->shared_->stopped)
                          return self->close();
                        self->finish_response();
                      });
  }

  void finish_response() {
    producer_ = nullptr;
    part_ = std::string();
    serializer_.reset();
    header_.reset();
    if (!keep_alive_)
      return close();
    read_request();
  }

  Stream stream_;
  std::shared_ptr<HttpServer::Shared> shared_;
  beast::flat_buffer buffer_{16384};
  std::optional<http::request_parser<http::string_body>> parser_;
  std::optional<Response> response_;
  std::shared_ptr<const std::string> body_;
  std::optional<http::response<http::empty_body>> header_;
  std::optional<http::response_serializer<http::empty_body>> serializer_;
  std::function<bool(std::string &)> producer_;
  std::string part_;
  bool keep_alive_ = false, head_ = false, http10_ = false;
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
    } else if (shared->security.tls) {
      std::make_shared<Session<TlsStream>>(std::move(socket), shared, *shared->security.tls)
          ->start();
    } else {
      std::make_shared<Session<beast::tcp_stream>>(std::move(socket), shared)->start();
    }
    accept_next(shared);
  });
}

} // namespace

HttpServer::HttpServer(asio::io_context &context, const tcp::endpoint &endpoint, HttpLimits limits,
                       HttpHandler handler, HttpSecurity security)
    : shared_(std::make_shared<Shared>(context, limits, std::move(handler), std::move(security))) {
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

bool HttpServer::tls() const { return shared_->security.tls != nullptr; }

void HttpServer::start() { accept_next(shared_); }

void HttpServer::stop() {
  if (shared_->stopped)
    return;
  shared_->stopped = true;
  beast::error_code ignored;
  shared_->acceptor.close(ignored);
  shared_->pause.cancel();
  if (shared_->security.auth)
    shared_->security.auth->stop();
  std::vector<Connection *> open(shared_->sessions.begin(), shared_->sessions.end());
  for (Connection *session : open)
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

bool names_loopback(std::string_view host) {
  if (host.empty())
    return false;
  std::string_view name = host, port;
  if (!host.empty() && host.front() == '[') {
    std::size_t close = host.find(']');
    if (close == std::string_view::npos)
      return false;
    name = host.substr(1, close - 1);
    port = host.substr(close + 1);
    if (!port.empty() && port.front() != ':')
      return false;
  } else if (std::size_t colon = host.find(':'); colon != std::string_view::npos) {
    name = host.substr(0, colon);
    port = host.substr(colon);
  }
  if (!port.empty()) {
    port.remove_prefix(1);
    if (port.empty() || port.size() > 5 ||
        port.find_first_not_of("0123456789") != std::string_view::npos)
      return false;
  }
  std::string lower(name);
  for (char &c : lower)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "localhost" || lower == "localhost.")
    return true;
  if (host.front() == '[') {
    beast::error_code bad;
    auto address = asio::ip::make_address_v6(lower, bad);
    return !bad && address.is_loopback();
  }
  beast::error_code bad;
  auto address = asio::ip::make_address_v4(lower, bad);
  return !bad && address.is_loopback();
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

std::optional<double> whole_number(std::string_view text) {
  double value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size())
    return std::nullopt;
  return value;
}

} // namespace nvsmi
