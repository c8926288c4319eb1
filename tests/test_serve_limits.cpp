// What serve's per-client limits count a client as (client_identity.hpp), and basic auth's decoy
// cost and its limit on wrong passwords (basic_auth.hpp), on their own.
#include "serve/basic_auth.hpp"
#include "serve/client_identity.hpp"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <catch2/catch.hpp>
#include <unistd.h>

#include <optional>
#include <string>
#include <vector>

namespace test_serve_limits {

using namespace nvsmi;
namespace ip = boost::asio::ip;

namespace {

// `htpasswd -nbBC COST u right | cut -d: -f2` for costs 4, 5 and 6.
const std::string right_at_4 = "$2y$04$.snj2u37d.PlfqQhpkC72eTvYZ2CJN6yV8rq20EU4I0aJ78gH9Jve";
const std::string right_at_5 = "$2y$05$SiE2/bX0KT0ugSnOZTZSb.mJ1VIgULNSt2D9E4qORoR71zzEPbfSC";
const std::string right_at_6 = "$2y$06$XNoMJ4cocxopZDVE.WnSH.J/VKQF2ydNm0FrHbPFcLEYZKti27LrK";

std::string basic(const std::string &credentials) {
  // Enough base64 for the short pairs below.
  static const char *digits = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (std::size_t i = 0; i < credentials.size(); i += 3) {
    unsigned chunk = 0;
    std::size_t n = std::min<std::size_t>(3, credentials.size() - i);
    for (std::size_t j = 0; j < 3; ++j)
      chunk = chunk << 8 | (j < n ? static_cast<unsigned char>(credentials[i + j]) : 0);
    for (std::size_t j = 0; j < 4; ++j)
      out += j <= n ? digits[(chunk >> (18 - 6 * j)) & 63] : '=';
  }
  return "Basic " + out;
}

} // namespace

TEST_CASE("limits: a remote client is its address, an IPv6 one by its /64; loopback is none") {
  auto group = [](const char *text) { return remote_address_group(ip::make_address(text)); };
  CHECK(group("203.0.113.7") == std::optional<std::string>("203.0.113.7"));
  CHECK(group("::ffff:203.0.113.7") == std::optional<std::string>("203.0.113.7"));
  CHECK(group("2001:db8:1:2:3:4:5:6") == std::optional<std::string>("2001:db8:1:2::/64"));
  CHECK(group("2001:db8:1:2:ffff::1") == group("2001:db8:1:2::99"));
  CHECK(group("2001:db8:1:3::1") != group("2001:db8:1:2::1"));
  for (const char *loopback : {"127.0.0.1", "127.3.2.1", "::1", "::ffff:127.0.0.1"}) {
    INFO(loopback);
    CHECK_FALSE(group(loopback).has_value());
  }
}

TEST_CASE("limits: on loopback the client is the local user whose socket it is") {
  boost::asio::io_context context;
  ip::tcp::acceptor acceptor(context, ip::tcp::endpoint(ip::make_address("127.0.0.1"), 0));
  ip::tcp::socket client(context);
  client.connect(acceptor.local_endpoint());
  ip::tcp::socket served = acceptor.accept();
  auto uid = local_peer_uid(served.remote_endpoint(), served.local_endpoint());
  if (!uid) {
    WARN("the kernel's sock_diag cannot be asked here (no NETLINK_SOCK_DIAG): not checked");
    return;
  }
  CHECK(*uid == ::geteuid());
  CHECK(client_identity(served.remote_endpoint(), served.local_endpoint()) ==
        "local uid " + std::to_string(::geteuid()));
  // A peer that has gone: no uid, not another socket's.
  ip::tcp::endpoint gone = served.remote_endpoint(), local = served.local_endpoint();
  client.close();
  served.close();
  CHECK_FALSE(local_peer_uid(ip::tcp::endpoint(gone.address(), 1), local).has_value());
}

TEST_CASE("basic auth: the decoy for unknown users costs what most users' hashes cost") {
  boost::asio::io_context context;
  const std::string &cost5 = right_at_5, &cost6 = right_at_6;
  CHECK(BasicAuth(context, {{"one", cost5}}).decoy_cost() == 5);
  CHECK(BasicAuth(context, {{"one", cost5}, {"two", cost5}, {"three", cost6}}).decoy_cost() == 5);
  CHECK(BasicAuth(context, {{"one", cost5}, {"two", cost6}}).decoy_cost() == 6); // a tie: higher
}

TEST_CASE("basic auth: a client's wrong passwords past its checking time are limited, unchecked; "
          "another client and a remembered pair are not") {
  boost::asio::io_context context;
  BasicAuth::Limits limits;
  limits.failure_budget_seconds = 1e-6; // one wrong check spends it
  limits.failure_refill_per_second = 1e-6;
  BasicAuth auth(context, {{"prometheus", right_at_4}}, limits);
  std::vector<std::pair<BasicAuth::Verdict, unsigned>> seen;
  // Kept running while the checker's thread has a verdict to post back.
  auto working = boost::asio::make_work_guard(context);
  auto ask = [&](const std::string &credentials, const std::string &client) {
    seen.clear();
    auth.check(
        basic(credentials), [&] { return client; },
        [&](BasicAuth::Verdict verdict, unsigned retry) { seen.emplace_back(verdict, retry); });
    while (seen.empty())
      context.run_one();
    return seen.front();
  };
  CHECK(ask("prometheus:right", "a").first == BasicAuth::Verdict::allowed);
  CHECK(ask("prometheus:wrong", "a").first == BasicAuth::Verdict::denied);
  auto limited = ask("prometheus:wrong", "a");
  CHECK(limited.first == BasicAuth::Verdict::limited);
  CHECK(limited.second >= 1);
  // Not even the right password is checked for it now...
  CHECK(ask("nobody:x", "a").first == BasicAuth::Verdict::limited);
  // ...but one that passed is remembered, and another client has its own time.
  CHECK(ask("prometheus:right", "a").first == BasicAuth::Verdict::allowed);
  CHECK(ask("prometheus:wrong", "b").first == BasicAuth::Verdict::denied);
  auth.stop();
}

} // namespace test_serve_limits
