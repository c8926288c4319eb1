#include "serve/http_server.hpp"

#include "core/log_line.hpp"
#include "serve/basic_auth.hpp"
#include "serve/client_identity.hpp"

#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/v6_only.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>

#include <array>
#include <cctype>
#include <charconv>
#include <deque>
#include <list>
#include <optional>
#include <unordered_map>
#include <unordered_set>

namespace nvsmi {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using SteadyTime = std::chrono::steady_clock::time_point;

namespace {

// Where a connection is, which says whether it may be closed for a newer one and in which order:
// first those that have sent nothing since they opened or were last answered (an idle client's,
// or one of many held open by someone to fill the server), then those still sending their
// request or TLS handshake, then those whose answer waits for them to read it; never one whose
// request is being judged or answered.
enum class Phase { silent, receiving, sending, held, closed };
constexpr std::size_t evictable_phases = 3; // silent, receiving, sending

// A connection, plain or TLS, as the server holds it to close it and count it.
class Connection {
public:
  virtual ~Connection() = default;
  virtual void close() = 0;
  virtual void respond(HttpResponse response) = 0; // an answer made later is ready
  Phase phase = Phase::held;
  std::list<Connection *>::iterator place; // in Shared::evictable while in such a phase
  SteadyTime deadline;                     // when its request must have come whole
};

// An answer to make later (HttpResponse::later), for the connection waiting for it.
struct Deferred {
  std::shared_ptr<Connection> client;
  std::function<HttpResponse()> make;
};

} // namespace

struct HttpServer::Shared : std::enable_shared_from_this<HttpServer::Shared> {
  Shared(asio::io_context &context, HttpLimits l, HttpHandler h, HttpSecurity s)
      : acceptor(context), pause(context), sweep(context), breather(context), limits(l),
        handler(std::move(h)), security(std::move(s)) {}
  tcp::acceptor acceptor;
  asio::steady_timer pause;    // after a failed accept
  asio::steady_timer sweep;    // closes silent connections at their deadline
  asio::steady_timer breather; // between answers made later
  bool sweep_armed = false;
  HttpLimits limits;
  HttpHandler handler;
  HttpSecurity security;
  std::unordered_set<Connection *> sessions; // every one not yet destroyed, for stop()
  std::size_t open = 0;                      // of them, those not closed
  // The connections that may be closed for a newer one, by phase, each longest in it first.
  std::array<std::list<Connection *>, evictable_phases> evictable;
  std::unordered_map<std::string, std::size_t> per_address; // open connections by remote group
  std::deque<Deferred> deferred;
  bool deferring = false;
  bool stopped = false;

  void enter(Connection &connection, Phase phase) {
    if (connection.phase < Phase::held)
      evictable[static_cast<std::size_t>(connection.phase)].erase(connection.place);
    connection.phase = phase;
    if (phase < Phase::held) {
      auto &list = evictable[static_cast<std::size_t>(phase)];
      connection.place = list.insert(list.end(), &connection);
    }
  }

  // Closes connections for a new one until there is a slot: the first of the first phase that
  // has any. False where every connection waits for a password check or an answer made later
  // (both queues bounded).
  bool make_room() {
    while (open >= limits.max_connections) {
      auto list = std::find_if(evictable.begin(), evictable.end(),
                               [](const auto &phase) { return !phase.empty(); });
      if (list == evictable.end())
        return false;
      bool idle = list == evictable.begin();
      list->front()->close();
      log_line("all " + std::to_string(limits.max_connections) + " connections in use: closed " +
                   (idle ? std::string("the one idle longest") : "the slowest one") +
                   " for a new client (--max-connections)",
               LogRate::repeating);
    }
    return true;
  }

  // The silent connections go at their deadline, oldest first: one timer for all of them.
  void arm_sweep() {
    auto &silent = evictable[static_cast<std::size_t>(Phase::silent)];
    if (sweep_armed || silent.empty() || stopped)
      return;
    sweep_armed = true;
    sweep.expires_at(silent.front()->deadline);
    sweep.async_wait([self = shared_from_this()](beast::error_code error) {
      self->sweep_armed = false;
      if (error || self->stopped)
        return;
      auto &waiting = self->evictable[static_cast<std::size_t>(Phase::silent)];
      SteadyTime now = std::chrono::steady_clock::now();
      while (!waiting.empty() && waiting.front()->deadline <= now)
        waiting.front()->close();
      self->arm_sweep();
    });
  }

  void defer(std::shared_ptr<Connection> client, std::function<HttpResponse()> make) {
    if (deferred.size() >= limits.max_deferred) {
      HttpResponse busy{503,
                        "text/plain; charset=utf-8",
                        std::make_shared<const std::string>("busy: too many answers being made\n"),
                        {{"Retry-After", "1"}},
                        {},
                        {}};
      return client->respond(std::move(busy));
    }
    deferred.push_back({std::move(client), std::move(make)});
    if (!deferring) {
      deferring = true;
      asio::post(acceptor.get_executor(), [self = shared_from_this()] { self->make_one(); });
    }
  }

  // One answer, then a pause as long as it took making it, so that answers made later take at
  // most half the server's time: in the other half the requests read meanwhile are answered, and
  // more connections accepted (one each time round the event loop).
  void make_one() {
    if (stopped || deferred.empty()) {
      deferring = false;
      return;
    }
    Deferred next = std::move(deferred.front());
    deferred.pop_front();
    auto started = std::chrono::steady_clock::now();
    if (next.client->phase != Phase::closed)
      next.client->respond(next.make());
    breather.expires_after(std::chrono::steady_clock::now() - started);
    breather.async_wait([self = shared_from_this()](beast::error_code error) {
      if (error)
        self->deferring = false;
      else
        self->make_one();
    });
  }
};

namespace {

using Response = http::response<http::span_body<const char>>;
using TlsStream = beast::ssl_stream<beast::tcp_stream>;

template <typename Stream>
class Session : public Connection, public std::enable_shared_from_this<Session<Stream>> {
public:
  static constexpr bool tls = std::is_same_v<Stream, TlsStream>;

  template <typename... Context>
  Session(tcp::socket socket, std::shared_ptr<HttpServer::Shared> shared,
          std::optional<std::string> address, Context &...context)
      : stream_(std::move(socket), context...), shared_(std::move(shared)),
        address_(std::move(address)) {
    shared_->sessions.insert(this);
    ++shared_->open;
    if (address_)
      ++shared_->per_address[*address_];
  }
  ~Session() override {
    forget();
    shared_->sessions.erase(this);
  }

  void start() { await_request(); }

  void close() override {
    if (phase == Phase::closed)
      return;
    forget();
    beast::error_code ignored;
    lowest().socket().shutdown(tcp::socket::shutdown_both, ignored);
    lowest().close();
  }

  void respond(HttpResponse response) override { send(std::move(response)); }

private:
  beast::tcp_stream &lowest() { return beast::get_lowest_layer(stream_); }

  // Leaves every count at once: a closed connection holds no slot, though its handlers have yet
  // to run.
  void forget() {
    if (phase == Phase::closed)
      return;
    shared_->enter(*this, Phase::closed);
    --shared_->open;
    if (address_) {
      auto at = shared_->per_address.find(*address_);
      if (at != shared_->per_address.end() && --at->second == 0)
        shared_->per_address.erase(at);
    }
  }

  // The client has `request_timeout` from here for its whole request (and TLS handshake). Until
  // its first byte comes the connection is silent: the first to go when the server is full.
  void await_request() {
    deadline = std::chrono::steady_clock::now() + shared_->limits.request_timeout;
    // Bytes of the next request may already be read: beast's buffer, or TLS's own, which the
    // socket's readiness does not show.
    if (buffer_.size() > 0 || (tls && handshaken_))
      return receive();
    shared_->enter(*this, Phase::silent);
    shared_->arm_sweep();
    lowest().socket().async_wait(tcp::socket::wait_read,
                                 [self = this->shared_from_this()](beast::error_code error) {
                                   if (self->phase == Phase::closed)
                                     return;
                                   if (error)
                                     return self->close();
                                   self->receive();
                                 });
  }

  void receive() {
    shared_->enter(*this, Phase::receiving);
    if constexpr (tls) {
      if (!handshaken_) {
        lowest().expires_at(deadline);
        stream_.async_handshake(asio::ssl::stream_base::server,
                                [self = this->shared_from_this()](beast::error_code error) {
                                  if (error)
                                    return self->close();
                                  self->handshaken_ = true;
                                  self->read_request();
                                });
        return;
      }
    }
    read_request();
  }

  void read_request() {
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(shared_->limits.header_bytes));
    parser_->body_limit(shared_->limits.body_bytes);
    lowest().expires_at(deadline);
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

    shared_->enter(*this, Phase::held);
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
        given, [this] { return client(); },
        [self = this->shared_from_this()](BasicAuth::Verdict verdict, unsigned retry_after) {
          if (self->shared_->stopped || self->phase == Phase::closed)
            return self->close();
          if (verdict == BasicAuth::Verdict::allowed)
            return self->answer_request();
          if (verdict == BasicAuth::Verdict::busy) {
            auto response = text_response(503, "too many password checks under way\n");
            response.headers.push_back({"Retry-After", "1"});
            return self->send(std::move(response));
          }
          if (verdict == BasicAuth::Verdict::limited) {
            auto response = text_response(429, "too many wrong passwords: try again later\n");
            response.headers.push_back({"Retry-After", std::to_string(retry_after)});
            return self->send(std::move(response));
          }
          auto response = text_response(401, "unauthorized\n");
          response.headers.push_back({"WWW-Authenticate", "Basic realm=\"nvsmi-agent\""});
          self->send(std::move(response));
        });
  }

  // Who is asking, for the password checks' limits (client_identity.hpp).
  std::string client() {
    beast::error_code peer_error, local_error;
    tcp::endpoint peer = lowest().socket().remote_endpoint(peer_error);
    tcp::endpoint local = lowest().socket().local_endpoint(local_error);
    if (peer_error || local_error)
      return "a client that has gone";
    return client_identity(peer, local);
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
    HttpResponse response = shared_->handler(path, query);
    if (response.later)
      return shared_->defer(this->shared_from_this(), std::move(response.later));
    send(std::move(response));
  }

  static HttpResponse text_response(unsigned status, const char *text) {
    return {status, "text/plain; charset=utf-8", std::make_shared<const std::string>(text), {}, {},
            {}};
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

  // Each write moves the connection to the end of the sending ones: the first of them is the
  // one whose client has taken nothing for longest.
  void sending() {
    shared_->enter(*this, Phase::sending);
    lowest().expires_after(shared_->limits.write_timeout);
  }

  void send(HttpResponse response) {
    if (phase == Phase::closed)
      return;
    if (response.stream)
      return send_stream(std::move(response));
    body_ = response.body ? response.body : std::make_shared<const std::string>();
    response_.emplace();
    start_message(*response_, response, 11);
    response_->content_length(body_->size());
    if (!head_)
      response_->body() = {body_->data(), body_->size()};
    sending();
    http::async_write(stream_, *response_,
                      [self = this->shared_from_this()](beast::error_code error, std::size_t) {
                        // Sent: the body is not held while the connection waits for more.
                        self->response_.reset();
                        self->body_.reset();
                        if (error || !self->keep_alive_ || self->shared_->stopped)
                          return self->close();
                        self->await_request();
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
    sending();
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
    sending();
    if (http10_)
      asio::async_write(stream_, asio::buffer(part_), std::move(next));
    else
      asio::async_write(stream_, http::make_chunk(asio::buffer(part_)), std::move(next));
  }

  void write_last() {
    if (http10_)
      return close();
    sending();
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
    await_request();
  }

  Stream stream_;
  std::shared_ptr<HttpServer::Shared> shared_;
  std::optional<std::string> address_; // the remote group it counts under; none on loopback
  beast::flat_buffer buffer_{16384};
  std::optional<http::request_parser<http::string_body>> parser_;
  std::optional<Response> response_;
  std::shared_ptr<const std::string> body_;
  std::optional<http::response<http::empty_body>> header_;
  std::optional<http::response_serializer<http::empty_body>> serializer_;
  std::function<bool(std::string &)> producer_;
  std::string part_;
  bool keep_alive_ = false, head_ = false, http10_ = false, handshaken_ = false;
};

void refuse(tcp::socket &socket) {
  beast::error_code ignored;
  socket.close(ignored);
}

// A connection accepted: refused, let in by closing another, or let in.
void admit(const std::shared_ptr<HttpServer::Shared> &shared, tcp::socket socket) {
  beast::error_code gone;
  tcp::endpoint peer = socket.remote_endpoint(gone);
  if (gone)
    return refuse(socket);
  std::optional<std::string> address = remote_address_group(peer.address());
  if (auto held = address ? shared->per_address.find(*address) : shared->per_address.end();
      held != shared->per_address.end() &&
      held->second >= shared->limits.max_connections_per_address) {
    refuse(socket);
    log_line("refused a connection from " + *address + ": it holds " +
                 std::to_string(held->second) + " (--max-connections-per-address)",
             LogRate::repeating);
  } else if (!shared->make_room()) {
    refuse(socket);
    log_line("refused a connection: all " + std::to_string(shared->limits.max_connections) +
                 " connections are being answered (--max-connections)",
             LogRate::repeating);
  } else if (shared->security.tls) {
    std::make_shared<Session<TlsStream>>(std::move(socket), shared, std::move(address),
                                         *shared->security.tls)
        ->start();
  } else {
    std::make_shared<Session<beast::tcp_stream>>(std::move(socket), shared, std::move(address))
        ->start();
  }
}

// Connections accepted this many at a time, every one waiting: one a turn of the event loop
// would leave a prompt client behind hundreds of others' connections while costly answers
// take turns too.
constexpr int accepts_at_once = 64;

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
    admit(shared, std::move(socket));
    for (int more = 1; more < accepts_at_once && !shared->stopped; ++more) {
      beast::error_code none;
      tcp::socket next = shared->acceptor.accept(none); // non-blocking: none left is an error
      if (none)
        break;
      admit(shared, std::move(next));
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
  acceptor.non_blocking(true);
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
  shared_->sweep.cancel();
  shared_->breather.cancel();
  shared_->deferred.clear();
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
