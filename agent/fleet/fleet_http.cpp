#include "fleet/fleet_http.hpp"

#include "core/exit_codes.hpp"
#include "core/number_text.hpp"
#include "core/screen_text.hpp"
#include "files/file_io.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include <algorithm>
#include <memory>
#include <openssl/evp.h>
#include <variant>

namespace nvsmi {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

std::string base64(const std::string &bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  int written = EVP_EncodeBlock(reinterpret_cast<unsigned char *>(out.data()),
                                reinterpret_cast<const unsigned char *>(bytes.data()),
                                static_cast<int>(bytes.size()));
  out.resize(static_cast<std::size_t>(std::max(written, 0)));
  return out;
}

using Stream = std::variant<beast::tcp_stream, beast::ssl_stream<beast::tcp_stream>>;

// One request to one host: resolve, connect, (TLS,) write, read, each step under the one
// deadline, whose timer closes the socket, so that every step in flight ends with an error.
class Fetch : public std::enable_shared_from_this<Fetch> {
public:
  using Finish = std::function<void(HttpAnswer)>;

  Fetch(asio::io_context &context, const FleetClientOptions &options, asio::ssl::context *tls,
        const FleetHost &host, std::string target, Finish finish)
      : host_(host), target_(std::move(target)), options_(options), resolver_(context),
        deadline_(context), stream_(make_stream(context, tls)), finish_(std::move(finish)) {
    parser_.header_limit(header_limit);
    parser_.body_limit(options.max_answer_bytes);
  }

  // The status line and headers; Beast counts them as they come.
  static constexpr std::size_t header_limit = 16 * 1024;
  // What the read buffer holds that the parser has not taken yet: headers, or a chunk-size line
  // or a trailer, which Beast holds whole before it parses them and does not count in either
  // limit above. Past it the read fails, where Beast's own buffer would grow without end.
  static constexpr std::size_t buffer_limit = 32 * 1024;

  void start() {
    auto self = shared_from_this();
    deadline_.expires_after(options_.timeout);
    deadline_.async_wait([self](boost::system::error_code error) {
      if (!error)
        self->expire("no answer in " + seconds_text(self->options_.timeout) + " s");
    });
    resolver_.async_resolve(
        host_.host, host_.port,
        [self](boost::system::error_code error, tcp::resolver::results_type found) {
          self->resolved(error, std::move(found));
        });
  }

  // Ends it now, as if its deadline had passed (its owner going away).
  void cancel() { expire("cancelled"); }

private:
  static Stream make_stream(asio::io_context &context, asio::ssl::context *tls) {
    if (tls)
      return Stream(std::in_place_index<1>, context.get_executor(), *tls);
    return Stream(std::in_place_index<0>, context.get_executor());
  }

  beast::tcp_stream &lowest() {
    return std::visit(
        [](auto &stream) -> beast::tcp_stream & { return beast::get_lowest_layer(stream); },
        stream_);
  }

  void expire(std::string why) {
    if (finished_)
      return;
    expired_ = std::move(why);
    resolver_.cancel();
    boost::system::error_code ignored;
    lowest().socket().close(ignored);
  }

  void resolved(boost::system::error_code error, tcp::resolver::results_type found) {
    if (error)
      return fail("cannot resolve: " + error.message());
    auto self = shared_from_this();
    lowest().async_connect(found, [self](boost::system::error_code failed, const tcp::endpoint &) {
      self->connected(failed);
    });
  }

  void connected(boost::system::error_code error) {
    if (error)
      return fail("cannot connect: " + error.message());
    auto *tls = std::get_if<1>(&stream_);
    if (!tls)
      return send();
    // The name the server picks its certificate by (never an address: RFC 6066), and the name
    // or address that certificate must carry.
    boost::system::error_code not_address;
    asio::ip::make_address(host_.host, not_address);
    if (not_address && !SSL_set_tlsext_host_name(tls->native_handle(), host_.host.c_str()))
      return fail("cannot set the TLS server name");
    tls->set_verify_mode(asio::ssl::verify_peer);
    tls->set_verify_callback(asio::ssl::host_name_verification(host_.host));
    auto self = shared_from_this();
    tls->async_handshake(asio::ssl::stream_base::client, [self](boost::system::error_code failed) {
      if (failed)
        return self->fail("TLS handshake failed: " + failed.message());
      self->send();
    });
  }

  void send() {
    request_.version(11);
    request_.method(http::verb::get);
    request_.target(target_);
    std::string host = host_.label();
    if (host_.tls)
      host.erase(0, 8);
    request_.set(http::field::host, host);
    request_.set(http::field::user_agent, "nvsmi-agent fleet");
    request_.set(http::field::accept, "application/json");
    request_.set(http::field::connection, "close");
    if (options_.credentials)
      request_.set(http::field::authorization, "Basic " + base64(options_.credentials->user + ":" +
                                                                 options_.credentials->password));
    auto self = shared_from_this();
    std::visit(
        [&](auto &stream) {
          http::async_write(stream, request_, [self](boost::system::error_code error, std::size_t) {
            if (error)
              return self->fail("cannot send the request: " + error.message());
            self->receive();
          });
        },
        stream_);
  }

  // A read at a time, so that every byte the parser takes (headers, chunk framing, trailers and
  // body alike) counts against the answer's bound, not the body's bytes alone.
  void receive() {
    auto self = shared_from_this();
    std::visit(
        [&](auto &stream) {
          http::async_read_some(stream, buffer_, parser_,
                                [self](boost::system::error_code error, std::size_t taken) {
                                  self->received(error, taken);
                                });
        },
        stream_);
  }

  void received(boost::system::error_code error, std::size_t taken) {
    answer_bytes_ += taken;
    if (error == http::error::body_limit || answer_bytes_ > options_.max_answer_bytes)
      return fail("answered more than " + std::to_string(options_.max_answer_bytes >> 20) + " MiB");
    if (error == http::error::header_limit)
      return fail("answered headers over " + std::to_string(header_limit >> 10) + " KiB");
    if (error == http::error::buffer_overflow)
      return fail("answered a chunk-size line or trailer over " +
                  std::to_string(buffer_limit >> 10) + " KiB");
    if (error)
      return fail("no whole answer: " + error.message());
    if (!parser_.is_done())
      return receive();
    HttpAnswer answer;
    answer.status = parser_.get().result_int();
    answer.body = std::move(parser_.get().body());
    finish(std::move(answer));
  }

  void fail(std::string why) {
    // Whatever step saw the closed socket, the deadline is the reason.
    HttpAnswer answer;
    answer.failure = printable_text(expired_ ? *expired_ : why);
    finish(std::move(answer));
  }

  void finish(HttpAnswer answer) {
    if (finished_)
      return;
    finished_ = true;
    deadline_.cancel();
    boost::system::error_code ignored;
    lowest().socket().close(ignored);
    Finish finish = std::move(finish_);
    finish(std::move(answer));
  }

  FleetHost host_;
  std::string target_;
  const FleetClientOptions &options_;
  tcp::resolver resolver_;
  asio::steady_timer deadline_;
  Stream stream_;
  beast::flat_buffer buffer_{buffer_limit};
  std::size_t answer_bytes_ = 0; // taken by the parser so far
  http::request<http::empty_body> request_;
  http::response_parser<http::string_body> parser_;
  Finish finish_;
  std::optional<std::string> expired_;
  bool finished_ = false;
};

} // namespace

FleetCredentials read_fleet_credentials(const std::string &user, const std::string &password_file) {
  if (user.empty() || user.find(':') != std::string::npos || printable_text(user) != user ||
      user.find(' ') != std::string::npos)
    throw AgentError(exit_usage,
                     "--fleet-user: a user name has no `:`, space or control character");
  FileBytes bytes = read_capped(password_file, 4096);
  std::string_view text = bytes.view();
  text = text.substr(0, text.find('\n'));
  if (!text.empty() && text.back() == '\r')
    text.remove_suffix(1);
  if (text.empty())
    throw AgentError(exit_usage,
                     "--fleet-password-file " + printable_text(password_file) + ": no password");
  return {user, std::string(text)};
}

asio::ssl::context fleet_tls_context(const std::string &ca_file) {
  asio::ssl::context tls(asio::ssl::context::tls_client);
  tls.set_options(asio::ssl::context::no_sslv2 | asio::ssl::context::no_sslv3 |
                  asio::ssl::context::no_tlsv1 | asio::ssl::context::no_tlsv1_1);
  boost::system::error_code error;
  if (ca_file.empty())
    tls.set_default_verify_paths(error);
  else
    tls.load_verify_file(ca_file, error);
  if (error)
    throw AgentError(exit_io, "--fleet-ca " + printable_text(ca_file) +
                                  ": cannot load the certificate authorities: " + error.message());
  return tls;
}

std::function<void()> bounded_get(asio::io_context &context, const FleetClientOptions &options,
                                  asio::ssl::context *tls, const FleetHost &host,
                                  std::string target, std::function<void(HttpAnswer)> done) {
  auto fetch =
      std::make_shared<Fetch>(context, options, tls, host, std::move(target), std::move(done));
  fetch->start();
  std::weak_ptr<Fetch> weak = fetch;
  return [weak] {
    if (auto alive = weak.lock())
      alive->cancel();
  };
}

} // namespace nvsmi
