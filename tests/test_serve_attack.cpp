// serve's scraper under attack by a local user (issue 40, item 3): thousands of idle connections
// held open and re-opened, hundreds of clients that ask for costly answers and never read them.
// Each scrape must be answered, and in time.
#include "process_support.hpp"
#include "serve_support.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <arpa/inet.h>
#include <csignal>
#include <filesystem>
#include <ifaddrs.h>
#include <iterator>
#include <net/if.h>
#include <netinet/in.h>
#include <sstream>
#include <unistd.h>

namespace test_serve_attack {

using test::quote;
using test::Server;

namespace {

const std::string recording = quote(test::fixture_path("xml/h100-8gpu-v12.xml"));
const std::string abuse_script = quote(std::string(TESTS_DIR) + "/serve_abuse.py");

// The bound on each scrape while the server is attacked. The design answers a prompt /metrics
// after at most the one costly answer being made and its own few turns of the event loop: well
// under 0.1 s on an idle machine, at most 0.6 s measured on this project's 2-core machine at load
// 18. 3 s leaves room for a busier machine and is still a third of Prometheus' default scrape
// timeout (10 s), which is what decides whether a scrape counts. Before the fix these scrapes
// were refused outright, or took 9 to 65 s.
// Under the sanitizers, with other suites beside it, the TLS handshake alone took 5 to 7 s: there
// the bound is Prometheus' default scrape timeout itself.
constexpr double scrape_bound_seconds = NVSMI_SANITIZED ? 10.0 : 3.0;

struct Scrape {
  int status = 0;
  double seconds = 0;
};

// One scrape of /metrics with curl: its status and how long it took from curl's start.
Scrape scrape(const Server &server, const std::string &curl_options = "") {
  test::Run run = test::run_shell("curl -s -o /dev/null --max-time 60 -w '%{http_code} "
                                  "%{time_total}' " +
                                  curl_options + " " + quote(server.url("/metrics")));
  Scrape seen;
  std::istringstream(run.out) >> seen.status >> seen.seconds;
  return seen;
}

// A folder with a self-signed certificate for 127.0.0.1 and a web config serving TLS with it.
std::string tls_config() {
  std::string folder = test::temporary_folder();
  test::Run made = test::run_shell(
      "openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=127.0.0.1 "
      "-addext subjectAltName=IP:127.0.0.1 -keyout " +
      quote(folder + "/key.pem") + " -out " + quote(folder + "/cert.pem") + " 2>&1");
  INFO(made.out);
  REQUIRE(made.exit_code == 0);
  test::write_file(folder + "/web.yml", "tls_server_config:\n  cert_file: cert.pem\n"
                                        "  key_file: key.pem\n");
  return folder;
}

// An IPv4 address of this machine that is not loopback, or "" where it has none: connections to
// it from here come from it, as a remote host's would.
std::string address_not_loopback() {
  ifaddrs *all = nullptr;
  if (::getifaddrs(&all) != 0)
    return "";
  std::string found;
  for (ifaddrs *entry = all; entry && found.empty(); entry = entry->ifa_next) {
    if (!entry->ifa_addr || entry->ifa_addr->sa_family != AF_INET ||
        (entry->ifa_flags & IFF_LOOPBACK) || !(entry->ifa_flags & IFF_UP))
      continue;
    char text[INET_ADDRSTRLEN] = {};
    ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in *>(entry->ifa_addr)->sin_addr, text,
                sizeof text);
    found = text;
  }
  ::freeifaddrs(all);
  return found;
}

// How many descriptors process `pid` has open.
std::size_t open_descriptors(int pid) {
  std::error_code error;
  std::filesystem::directory_iterator entries("/proc/" + std::to_string(pid) + "/fd", error);
  return error ? 0 : static_cast<std::size_t>(std::distance(entries, {}));
}

} // namespace

TEST_CASE("serve under attack: 2000 idle connections of one local process, re-opened as they "
          "are closed, keep no scraper out (plain and TLS)") {
  std::string folder = tls_config();
  for (bool tls : {false, true}) {
    INFO((tls ? "TLS" : "plain HTTP"));
    // Twice as many connections as the server takes, so that it is full the whole time and
    // every one it closes comes back at once.
    Server server("--max-connections 1000 --fixture " + recording +
                  (tls ? " --web.config.file " + quote(folder + "/web.yml") : ""));
    std::string ready = test::temporary_folder() + "/ready";
    test::Background holder("exec /usr/bin/python3 " + abuse_script + " " +
                            std::to_string(server.port()) + " hold 2000 300 " + quote(ready));
    REQUIRE(test::wait_until([&] { return ::access(ready.c_str(), F_OK) == 0; }));
    // Full: it holds as many connections as it takes.
    REQUIRE(test::wait_until([&] { return open_descriptors(server.pid()) >= 1000; }));
    std::string trust = tls ? "--cacert " + quote(folder + "/cert.pem") : "";
    for (int attempt = 0; attempt < 10; ++attempt) {
      Scrape seen = scrape(server, trust);
      INFO("attempt " << attempt << ": " << seen.status << " in " << seen.seconds << " s");
      CHECK(seen.status == 200);
      CHECK(seen.seconds < scrape_bound_seconds);
    }
    CHECK_FALSE(holder.exit_code().has_value()); // the attack went on throughout
    CHECK_THAT(server.log(), Catch::Contains("closed the one idle longest for a new client"));
    ::kill(holder.pid(), SIGTERM);
    CHECK(server.stop() == 0);
  }
}

TEST_CASE("serve under attack: /metrics is answered in time while 500 clients ask for series "
          "and never read") {
  Server server("--interval 0.01 --fixture " + recording);
  // History enough that each answer is hundreds of KiB and takes a while to make (issue 40: 500
  // such clients slowed /metrics to 12 s).
  REQUIRE(test::wait_until([&] {
    std::string metrics = server.get("/metrics").body;
    std::size_t at = metrics.find("\nnvsmi_history_samples ");
    return at != std::string::npos && std::stod(metrics.substr(at + 23)) >= 1000;
  }));
  test::Run run =
      test::run_shell("/usr/bin/python3 " + abuse_script + " " + std::to_string(server.port()) +
                      " stallmetrics 500 '/api/v1/series?seconds=30&points=2000' 5");
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  auto seen = nlohmann::json::parse(run.out)["metrics"];
  INFO(seen.dump());
  REQUIRE(seen.size() == 5);
  for (const auto &one : seen) {
    CHECK(one[0] == 200);
    CHECK((one[1].is_number() && one[1].get<double>() < scrape_bound_seconds));
  }
  CHECK(server.stop() == 0);
}

TEST_CASE("serve: a remote address holds at most --max-connections-per-address; loopback's "
          "clients are not counted with it") {
  std::string address = address_not_loopback();
  if (address.empty()) {
    WARN("skipped: this machine has no address but loopback");
    return;
  }
  // The held connections stay (a long request timeout): the address's slots stay full.
  Server server("--listen 0.0.0.0:0 --max-connections-per-address 5 --request-timeout 600 "
                "--fixture " +
                recording);
  std::string ready = test::temporary_folder() + "/ready";
  test::Background holder("exec /usr/bin/python3 " + abuse_script + " " +
                          std::to_string(server.port()) + " hold 20 300 " + quote(ready) + " " +
                          address);
  REQUIRE(test::wait_until([&] { return ::access(ready.c_str(), F_OK) == 0; }));
  std::string said =
      "refused a connection from " + address + ": it holds 5 (--max-connections-per-address)";
  REQUIRE(test::wait_until([&] { return server.log().find(said) != std::string::npos; }));
  // A sixth from that address goes at once; a client on loopback is served.
  test::Run from_there = test::run_shell(
      "curl -s -o /dev/null --max-time 30 -w '%{http_code}' " +
      quote("http://" + address + ":" + std::to_string(server.port()) + "/metrics"));
  CHECK(from_there.out == "000");
  for (int attempt = 0; attempt < 3; ++attempt) {
    Scrape seen = scrape(server);
    INFO("attempt " << attempt << ": " << seen.status << " in " << seen.seconds << " s");
    CHECK(seen.status == 200);
    CHECK(seen.seconds < scrape_bound_seconds);
  }
  ::kill(holder.pid(), SIGTERM);
  CHECK(server.stop() == 0);
}

} // namespace test_serve_attack
