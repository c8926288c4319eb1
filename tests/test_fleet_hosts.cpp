// Many hosts at once (issue 28 item 5): the host list, the poller against hostile answers from a
// canned server of the test's own, and `fleet`, `top --hosts` (in a private tmux) and serve's
// /fleet (in headless Chromium) through the built agent against five real serves.
#include "serve_support.hpp"
#include "snapshot_builders.hpp"
#include "tmux_session.hpp"

#include "commands/top_fleet.hpp"
#include "core/exit_codes.hpp"
#include "core/screen_text.hpp"
#include "fleet/fleet_hosts.hpp"
#include "fleet/fleet_poller.hpp"
#include "fleet/fleet_view.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <arpa/inet.h>
#include <atomic>
#include <chrono>
#include <clocale>
#include <csignal>
#include <functional>
#include <map>
#include <mutex>
#include <netinet/in.h>
#include <poll.h>
#include <regex>
#include <set>
#include <sys/socket.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

namespace test_fleet_hosts {

using test::quote;
using test::Server;
using namespace std::chrono_literals;

namespace {

std::string fixture(const std::string &name) { return quote(test::fixture_path(name)); }

// A loopback server of the test's own that answers each request with `answer` (any bytes), then
// `tail_bytes` more of 'x', or, where `answer` is empty, reads the request and never answers.
class CannedServer {
public:
  explicit CannedServer(std::string answer, std::size_t tail_bytes = 0)
      : answer_(std::move(answer)), tail_bytes_(tail_bytes) {
    listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    REQUIRE(::bind(listener_, reinterpret_cast<sockaddr *>(&address), length) == 0);
    REQUIRE(::listen(listener_, 16) == 0);
    REQUIRE(::getsockname(listener_, reinterpret_cast<sockaddr *>(&address), &length) == 0);
    port_ = ntohs(address.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~CannedServer() {
    stopping_ = true;
    thread_.join();
    for (int fd : held_)
      ::close(fd);
    ::close(listener_);
  }
  CannedServer(const CannedServer &) = delete;
  CannedServer &operator=(const CannedServer &) = delete;

  nvsmi::FleetHost host() const { return nvsmi::FleetHost{"127.0.0.1", std::to_string(port_)}; }

private:
  void serve() {
    while (!stopping_) {
      pollfd ready{listener_, POLLIN, 0};
      if (::poll(&ready, 1, 50) <= 0)
        continue;
      int fd = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0)
        continue;
      std::string request;
      char buffer[4096];
      while (request.find("\r\n\r\n") == std::string::npos) {
        pollfd in{fd, POLLIN, 0};
        if (::poll(&in, 1, 2000) <= 0)
          break;
        ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
        if (n <= 0)
          break;
        request.append(buffer, static_cast<std::size_t>(n));
      }
      if (answer_.empty()) { // the stalled agent: connected, never a byte back
        held_.push_back(fd);
        continue;
      }
      send_all(fd, answer_);
      std::string tail(65536, 'x');
      for (std::size_t sent = 0; sent < tail_bytes_ && !stopping_; sent += tail.size())
        if (!send_all(fd, tail))
          break;
      ::close(fd);
    }
  }
  static bool send_all(int fd, const std::string &bytes) {
    for (std::size_t at = 0; at < bytes.size();) {
      ssize_t n = ::send(fd, bytes.data() + at, bytes.size() - at, MSG_NOSIGNAL);
      if (n <= 0)
        return false;
      at += static_cast<std::size_t>(n);
    }
    return true;
  }

  std::string answer_;
  std::size_t tail_bytes_;
  int listener_ = -1, port_ = 0;
  std::atomic<bool> stopping_{false};
  std::vector<int> held_;
  std::thread thread_;
};

std::string http_answer(int status, const std::string &body) {
  return "HTTP/1.1 " + std::to_string(status) + " X\r\nContent-Type: application/json\r\n" +
         "Content-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
}

// What one poll of `hosts` left, and how long it took.
struct Polled {
  std::vector<nvsmi::HostReading> readings;
  std::chrono::steady_clock::duration took;
};
Polled poll_once(std::vector<nvsmi::FleetHost> hosts, std::chrono::milliseconds timeout = 1000ms) {
  boost::asio::io_context context;
  nvsmi::FleetClientOptions options;
  options.hosts = std::move(hosts);
  options.timeout = timeout;
  nvsmi::FleetPoller poller(context, options);
  bool done = false;
  auto start = std::chrono::steady_clock::now();
  poller.poll([&] { done = true; });
  context.run();
  CHECK(done);
  return {poller.hosts(), std::chrono::steady_clock::now() - start};
}

// The statuses of a fleet document's hosts, in order.
std::vector<std::string> statuses(const nlohmann::json &fleet) {
  std::vector<std::string> out;
  if (fleet.is_object() && fleet["hosts"].is_array())
    for (const auto &host : fleet["hosts"])
      out.push_back(host.value("status", ""));
  return out;
}

nlohmann::json fleet_json(const Server &server) {
  return nlohmann::json::parse(server.get("/fleet.json").body, nullptr, false);
}

// A stopped process is continued when the test ends, passed or failed, so that its Server can
// stop and reap it.
struct ContinueAtEnd {
  int pid;
  ~ContinueAtEnd() { ::kill(pid, SIGCONT); }
};

} // namespace

TEST_CASE("fleet: a host list is HOST:PORT, and anything else is refused with its entry") {
  auto hosts = nvsmi::parse_fleet_hosts("gpu1:9437, 10.0.0.2:1,[::1]:9437,https://gpu3.lab:443");
  REQUIRE(hosts.size() == 4);
  CHECK(hosts[0].label() == "gpu1:9437");
  CHECK(hosts[2].host == "::1");
  CHECK(hosts[2].label() == "[::1]:9437");
  CHECK(hosts[3].tls);
  CHECK(hosts[3].label() == "https://gpu3.lab:443");
  for (const char *bad : {"gpu1", "gpu1:", "gpu1:0", "gpu1:65536", "gpu1:+80", "gpu1:80x", ":80",
                          "::1:80", "user@gpu1:80", "gpu1/path:80", "gpu 1:80", "gpu1\x1b[2J:80",
                          "[::1]80", "gpu1:80,gpu1:80", ""}) {
    INFO(bad);
    try {
      nvsmi::parse_fleet_hosts(bad);
      FAIL("accepted");
    } catch (const nvsmi::AgentError &error) {
      CHECK(error.code() == nvsmi::exit_usage);
      // The entry is quoted printable: a host list cannot write to the operator's terminal.
      CHECK(std::string(error.what()).find('\x1b') == std::string::npos);
    }
  }
  std::string folder = test::temporary_folder();
  test::write_file(folder + "/hosts", "# the lab\ngpu1:9437\n\n  gpu2:9437  \n");
  CHECK(nvsmi::read_fleet_hosts_file(folder + "/hosts").size() == 2);
  test::write_file(folder + "/bad", "gpu1:9437\ngpu2\n");
  CHECK_THROWS_WITH(nvsmi::read_fleet_hosts_file(folder + "/bad"), Catch::Contains("line 2"));
}

TEST_CASE("fleet: a hostile or broken agent is marked unreachable, within its deadline") {
  std::string snapshot_error = R"({"error":"no sample for 12 s\u001b[2J"})";
  CannedServer stalled("");
  CannedServer huge("HTTP/1.1 200 OK\r\nContent-Length: 104857600\r\n\r\n", 8u << 20);
  CannedServer garbage(http_answer(200, "{\"schema\":\"nvsmi-agent.snapshot/1\",\"gpus\":[[[["));
  CannedServer other(http_answer(200, "<html>not us</html>"));
  CannedServer stale(http_answer(503, snapshot_error));
  CannedServer locked(http_answer(401, ""));
  CannedServer headers("HTTP/1.1 200 OK\r\nX-Big: " + std::string(40000, 'a') + "\r\n\r\n");
  Polled polled = poll_once({stalled.host(), huge.host(), garbage.host(), other.host(),
                             stale.host(), locked.host(), headers.host()});
  const auto &r = polled.readings;
  // One stalled host costs its own deadline, not the others' (all are asked at once).
  CHECK(polled.took < 10s);
  CHECK(r[0].status == nvsmi::HostStatus::unreachable);
  CHECK(r[0].problem == "no answer in 1 s");
  CHECK(r[1].status == nvsmi::HostStatus::unreachable);
  CHECK(r[1].problem == "answered more than 4 MiB");
  CHECK(r[2].status == nvsmi::HostStatus::unreachable);
  CHECK_THAT(r[2].problem, Catch::StartsWith("answered what is not a snapshot"));
  CHECK_THAT(r[3].problem, Catch::StartsWith("answered what is not a snapshot"));
  CHECK(r[4].status == nvsmi::HostStatus::stale);
  CHECK(r[4].problem == "no sample for 12 s[2J"); // the escape itself never reaches a screen
  CHECK(r[5].status == nvsmi::HostStatus::unreachable);
  CHECK_THAT(r[5].problem, Catch::Contains("401"));
  CHECK(r[6].problem == "answered headers over 16 KiB");
  for (const auto &reading : r)
    CHECK_FALSE(reading.last_good);
  CHECK(nvsmi::fleet_summary_text(nvsmi::fleet_summary_of(r)) ==
        "0 GPUs on 7 hosts: 7 hosts without a fresh sample");
}

TEST_CASE("fleet: five serves on loopback, one stopped and one stalled") {
  // Two answering, one whose nvidia-smi fails (stale: its serve answers 503), one stopped
  // (nothing listens: refused), one stopped by SIGSTOP (connects, never answers).
  Server a("--fixture " + fixture("xml/h100-8gpu-states-v12.xml"));
  Server b("--fixture " + fixture("xml/h100-8gpu-v12.xml"));
  Server failing("--interval 0.2 --nvidia-smi " +
                     quote(std::string(SCRIPTS_DIR) + "/fake-nvidia-smi"),
                 "FAKE_NVSMI_MODE=exit9");
  Server stopped("--fixture " + fixture("xml/h100-8gpu-v12.xml"));
  Server stalled("--fixture " + fixture("xml/h100-8gpu-v12.xml"));
  auto host = [](const Server &server) {
    return nvsmi::FleetHost{"127.0.0.1", std::to_string(server.port())};
  };
  boost::asio::io_context context;
  nvsmi::FleetClientOptions options;
  options.hosts = {host(a), host(b), host(failing), host(stopped), host(stalled)};
  options.timeout = 2000ms;
  nvsmi::FleetPoller poller(context, options);
  const auto &r = poller.hosts();
  // Each serve answers once its first sample is in (the failing one: 503 at once).
  test::wait_until(
      [&] {
        poller.poll([] {});
        context.restart();
        context.run();
        return r[0].last_good && r[1].last_good && r[3].last_good && r[4].last_good;
      },
      test::patience, 100ms);
  CHECK(r[0].status == nvsmi::HostStatus::ok);
  CHECK(r[2].status == nvsmi::HostStatus::stale);
  CHECK_THAT(r[2].problem, Catch::StartsWith("no sample yet"));
  CHECK(r[4].status == nvsmi::HostStatus::ok);

  int stopped_port = stopped.port();
  REQUIRE(stopped.stop() == 0);
  REQUIRE(::kill(stalled.pid(), SIGSTOP) == 0);
  poller.poll([] {});
  context.restart();
  context.run();
  // Marked, with the last good sample kept; the others still answer.
  CHECK(r[0].status == nvsmi::HostStatus::ok);
  CHECK(r[1].status == nvsmi::HostStatus::ok);
  CHECK(r[3].status == nvsmi::HostStatus::unreachable);
  CHECK_THAT(r[3].problem, Catch::StartsWith("cannot connect"));
  CHECK(r[4].status == nvsmi::HostStatus::unreachable);
  CHECK(r[4].problem == "no answer in 2 s");
  REQUIRE(r[4].last_good);
  CHECK(r[4].last_good->gpus.size() == 8);
  CHECK_THAT(nvsmi::fleet_host_line(r[4], std::chrono::system_clock::now()),
             Catch::Matches("127\\.0\\.0\\.1:[0-9]+ \u00b7 unreachable: no answer in 2 s "
                            "\u00b7 last good sample [0-9]+ s ago"));
  CHECK_THAT(nvsmi::fleet_summary_text(nvsmi::fleet_summary_of(r)),
             Catch::StartsWith("32 GPUs on 5 hosts: ") &&
                 Catch::EndsWith(" \u00b7 16 on 3 hosts without a fresh sample"));

  std::string hosts;
  for (int port : {a.port(), b.port(), failing.port(), stopped_port, stalled.port()})
    hosts += (hosts.empty() ? "" : ",") + std::string("127.0.0.1:") + std::to_string(port);

  auto start = std::chrono::steady_clock::now();
  test::Run json = test::run_agent("fleet --format json --timeout 2 --hosts " + hosts);
  auto took = std::chrono::steady_clock::now() - start;
  INFO(json.err);
  REQUIRE(json.exit_code == 0);
  CHECK(took < 20s); // the stalled host's 2 s, not a hang
  auto fleet = nlohmann::json::parse(json.out);
  CHECK(fleet["schema"] == "nvsmi-agent.fleet/1");
  auto &h = fleet["hosts"];
  REQUIRE(h.size() == 5);
  CHECK(h[0]["status"] == "ok");
  CHECK(h[0]["snapshot"]["gpus"].size() == 8);
  CHECK(h[1]["status"] == "ok");
  CHECK(h[2]["status"] == "stale");
  CHECK_THAT(h[2]["problem"].get<std::string>(), Catch::StartsWith("no sample yet"));
  CHECK(h[3]["status"] == "unreachable");
  CHECK_THAT(h[3]["problem"].get<std::string>(), Catch::StartsWith("cannot connect"));
  CHECK(h[4]["status"] == "unreachable");
  CHECK(h[4]["problem"] == "no answer in 2 s");
  CHECK(h[4]["snapshot"].is_null());
  std::string summary = fleet["summary"];
  CHECK_THAT(summary, Catch::StartsWith("16 GPUs on 5 hosts: ") &&
                          Catch::EndsWith(" \u00b7 3 hosts without a fresh sample"));

  test::Run text = test::run_agent("fleet --timeout 2 --hosts " + hosts);
  REQUIRE(text.exit_code == 0);
  auto lines = test::lines_of(text.out);
  REQUIRE_FALSE(lines.empty());
  CHECK_THAT(lines[0], Catch::StartsWith("16 GPUs on 5 hosts: "));
  for (const std::string &line : lines) // a pipe gets 80 columns, broken between parts
    CHECK(nvsmi::text_columns(line) <= 80);
  CHECK_THAT(text.out, Catch::Contains("\n127.0.0.1:" + std::to_string(a.port()) + " \u00b7 ok\n"));
  CHECK_THAT(text.out,
             Catch::Contains("127.0.0.1:" + std::to_string(stalled.port()) +
                             " \u00b7 unreachable: no answer in 2 s \u00b7 never answered"));
  ::kill(stalled.pid(), SIGCONT);
}

TEST_CASE("fleet: the command line refuses what it cannot use, with one line") {
  test::Run none = test::run_agent("fleet");
  CHECK(none.exit_code == nvsmi::exit_usage);
  CHECK_THAT(none.err, Catch::Contains("--hosts or --hosts-file"));
  test::Run bad = test::run_agent("fleet --hosts 'gpu1:99999'");
  CHECK(bad.exit_code == nvsmi::exit_usage);
  CHECK_THAT(bad.err, Catch::Contains("the port is not 1-65535"));
  std::string folder = test::temporary_folder();
  test::write_file(folder + "/empty", "\n");
  test::Run no_password = test::run_agent("fleet --hosts gpu1:1 --fleet-user alice "
                                          "--fleet-password-file " +
                                          quote(folder + "/empty"));
  CHECK(no_password.exit_code == nvsmi::exit_usage);
  CHECK_THAT(no_password.err, Catch::Contains("no password"));
  test::Run user_alone = test::run_agent("fleet --hosts gpu1:1 --fleet-user alice");
  CHECK(user_alone.exit_code == nvsmi::exit_usage);
  // top and serve read their host lists with fleet's options, refused alike before anything
  // starts; top's hosts and a source of this machine's samples are one or the other.
  test::Run top_bad = test::run_agent("top --hosts 'gpu1:99999'");
  CHECK(top_bad.exit_code == nvsmi::exit_usage);
  CHECK_THAT(top_bad.err, Catch::Contains("the port is not 1-65535"));
  test::Run top_both =
      test::run_agent("top --hosts gpu1:1 --fixture " + fixture("xml/h100-8gpu-v12.xml"));
  CHECK(top_both.exit_code == nvsmi::exit_usage);
  CHECK_THAT(top_both.err, Catch::Contains("--fixture"));
  test::Run serve_bad = test::run_agent("serve --fleet-hosts 'user@gpu1:80' --fixture " +
                                        fixture("xml/h100-8gpu-v12.xml"));
  CHECK(serve_bad.exit_code == nvsmi::exit_usage);
  CHECK_THAT(serve_bad.err, Catch::Contains("--fleet-hosts: \"user@gpu1:80\" is not HOST:PORT"));
}

TEST_CASE("top --hosts and serve's /fleet: five serves on loopback, one stopped and one stalled") {
  // Two on fixtures, one sampling the stand-in live (its samples' times move), one stopped
  // (refused) and one stopped by SIGSTOP (connects, never answers).
  Server a("--fixture " + fixture("xml/h100-8gpu-states-v12.xml"));
  Server b("--fixture " + fixture("xml/h100-8gpu-v12.xml"));
  Server live("--interval 0.5 --nvidia-smi " + quote(std::string(SCRIPTS_DIR) + "/fake-nvidia-smi"),
              "FAKE_NVSMI_STAMP_NOW=1");
  Server stopped("--fixture " + fixture("xml/h100-8gpu-v12.xml"));
  Server stalled("--fixture " + fixture("xml/h100-8gpu-v12.xml"));
  for (const Server *server : {&a, &b, &live, &stalled})
    REQUIRE(test::wait_until([&] { return server->get("/api/v1/snapshot").status == 200; }));
  auto label = [](int port) { return "127.0.0.1:" + std::to_string(port); };
  std::string hosts = label(a.port()) + "," + label(b.port()) + "," + label(live.port()) + "," +
                      label(stopped.port()) + "," + label(stalled.port());
  std::string stopped_line = label(stopped.port()) + " \u00b7 unreachable: cannot connect";
  std::string stalled_line = label(stalled.port()) + " \u00b7 unreachable: no answer in 1 s";
  REQUIRE(stopped.stop() == 0);
  REQUIRE(::kill(stalled.pid(), SIGSTOP) == 0);
  ContinueAtEnd resume{stalled.pid()};

  // serve's /fleet.json: fleet --format json's document, polled in the background.
  Server fleet("--fixture " + fixture("xml/h100-8gpu-v12.xml") +
               " --interval 0.5 --fleet-timeout 1 --fleet-hosts " + hosts);
  nlohmann::json document;
  const std::vector<std::string> expected = {"ok", "ok", "ok", "unreachable", "unreachable"};
  CHECK(test::wait_until([&] {
    document = fleet_json(fleet);
    return statuses(document) == expected;
  }));
  INFO(document.dump());
  REQUIRE(statuses(document) == expected);
  CHECK(document["schema"] == "nvsmi-agent.fleet/1");
  auto &h = document["hosts"];
  CHECK_THAT(h[3]["problem"].get<std::string>(), Catch::StartsWith("cannot connect"));
  CHECK(h[4]["problem"] == "no answer in 1 s");
  CHECK(h[4]["snapshot"].is_null());
  CHECK(h[0]["snapshot"]["gpus"].size() == 8);
  CHECK_THAT(document["summary"].get<std::string>(),
             Catch::StartsWith("24 GPUs on 5 hosts: ") &&
                 Catch::EndsWith(" \u00b7 2 hosts without a fresh sample"));
  // The live host's samples keep coming while the stalled one runs out its deadline each poll.
  std::string first = h[2]["snapshot"]["timestamp"];
  CHECK(test::wait_until([&] {
    nlohmann::json now = fleet_json(fleet);
    return statuses(now) == expected && now["hosts"][2]["snapshot"]["timestamp"] != first &&
           now["hosts"][4]["problem"] == "no answer in 1 s";
  }));
  // Without --fleet-hosts there is no fleet page.
  CHECK(a.get("/fleet").status == 404);
  CHECK(a.get("/fleet.json").status == 404);
  test::Http page = fleet.get("/fleet");
  CHECK(page.status == 200);
  CHECK_THAT(page.headers, Catch::Contains("text/html"));

  if (test::installed("chromium")) {
    // Read at a phone's width: the summary, a section per host, the stalled one's reason.
    test::Run dom = test::chromium("--virtual-time-budget=5000 --window-size=390,900 --dump-dom " +
                                   quote(fleet.url("/fleet")));
    REQUIRE(dom.exit_code == 0);
    CHECK_THAT(dom.out, Catch::Contains("24 GPUs on 5 hosts: "));
    CHECK_THAT(dom.out, Catch::Contains("no answer in 1 s"));
    CHECK_THAT(dom.out, Catch::Contains("cannot connect"));
    std::size_t sections = 0;
    for (std::size_t at = 0; (at = dom.out.find("<section", at)) != std::string::npos; ++at)
      ++sections;
    CHECK(sections == 5);
    // The dashboard's state colours and bars: each GPU's state word in its colour, utilization
    // and memory as bars, host a's GPU 3 (99 % of its memory) red; a back link to this host.
    std::vector<std::string> pages;
    try {
      pages = test::browser_steps(
          fleet.url("/fleet"), "390x900",
          "document.querySelectorAll('section').length === 5 && "
          "document.querySelectorAll('section:first-child tr[data-state]').length === 8",
          {"eval:[...document.querySelectorAll('section')].map((section) => "
           "[...section.querySelectorAll('tr[data-state]')].map((row) => ["
           "row.dataset.state, getComputedStyle(row.querySelector('.state')).backgroundColor, "
           "row.querySelectorAll('.bar.util').length, row.querySelectorAll('.bar.mem').length, "
           "row.querySelector('.bar.mem').classList.contains('full'), "
           "getComputedStyle(row.querySelector('.bar.mem .fill')).backgroundColor]))"});
    } catch (const std::runtime_error &problem) {
      FAIL(problem.what());
    }
    CHECK_THAT(pages[0], Catch::Contains("<a href=\"./\">this host's dashboard</a>"));
    nlohmann::json shown = nlohmann::json::parse(pages[1]);
    INFO(shown.dump());
    REQUIRE(shown.size() == 5);
    const std::map<std::string, std::string> family =
        {{"free", "green"},  {"in_use", "cyan"},        {"idle_but_held", "amber"},
         {"hot", "red"},     {"at_power_limit", "red"}, {"lost", "red"},
         {"failing", "red"}, {"idle", "grey"},          {"unknown", "grey"},
         {"stale", "red"}}; // the live host, where a busy machine makes its samples late
    std::vector<std::string> states;
    for (std::size_t host = 0; host < 3; ++host)
      for (const auto &row : shown[host]) {
        INFO("host " << host << ": " << row.dump());
        CHECK(test::colour_family(row[1]) == family.at(row[0]));
        CHECK(row[2] == 1);
        CHECK(row[3] == 1);
        CHECK((test::colour_family(row[5]) == "red") == row[4].get<bool>());
        if (host == 0)
          states.push_back(row[0]);
      }
    CHECK(states == std::vector<std::string>{"free", "in_use", "hot", "idle_but_held", "free",
                                             "at_power_limit", "in_use", "free"});
    std::vector<bool> full;
    for (const auto &row : shown[0])
      full.push_back(row[4]);
    CHECK(full == std::vector<bool>{false, false, false, true, false, false, false, false});
    // The dashboard of a serve with --fleet-hosts links /fleet; one without does not.
    test::Run linked = test::chromium("--virtual-time-budget=5000 --window-size=1400,900 "
                                      "--dump-dom " +
                                      quote(fleet.url("/")));
    CHECK_THAT(linked.out, Catch::Contains("<a id=\"fleet-link\" href=\"fleet\">"));
    test::Run alone = test::chromium("--virtual-time-budget=5000 --window-size=1400,900 "
                                     "--dump-dom " +
                                     quote(a.url("/")));
    CHECK_THAT(alone.out, Catch::Contains("data-state=\"ok\"") &&
                              Catch::Contains("<a id=\"fleet-link\" href=\"fleet\" hidden=\"\">"));
    // Drawn at a phone's width and a desktop's, kept as artifacts to be looked at.
    for (const auto &[name, size] : {std::pair<std::string, std::string>{"fleet-phone", "390,1600"},
                                     {"fleet-desktop", "1400,1400"}}) {
      std::string png = std::string(ARTIFACTS_DIR) + "/" + name + ".png";
      test::run_shell("mkdir -p " + quote(ARTIFACTS_DIR) + " && rm -f " + quote(png));
      test::chromium("--virtual-time-budget=5000 --window-size=" + size +
                     " --screenshot=" + quote(png) + " " + quote(fleet.url("/fleet")));
      struct stat info {};
      CHECK(::stat(png.c_str(), &info) == 0);
      CHECK(info.st_size > 20000); // a blank page of that size is a few kB
    }
  } else {
    WARN("chromium is not installed (scripts/install-deps installs it): /fleet is not drawn");
  }

  if (!test::installed("tmux")) {
    WARN("tmux is not installed (scripts/install-deps installs it): top --hosts is not tested");
    return;
  }
  test::Tmux tmux(120, 40);
  tmux.run("LC_ALL=C.UTF-8 " AGENT_BIN " top --interval 0.5 --timeout 1 --hosts " + hosts +
           "; echo top-exit=$?");
  auto ok_hosts = [&](const std::string &screen) {
    return screen.find(label(a.port()) + " \u00b7 ok") != std::string::npos &&
           screen.find(label(b.port()) + " \u00b7 ok") != std::string::npos;
  };
  REQUIRE(tmux.wait_for([&](const std::string &s) {
    return ok_hosts(s) && s.find("2 hosts without a fresh sample") != std::string::npos;
  }));
  std::string top_screen = tmux.screen();
  test::keep_artifact("top-hosts-120x40.txt", top_screen);
  auto lines = test::lines_of(top_screen);
  REQUIRE(lines.size() >= 40);
  CHECK_THAT(lines[0], Catch::StartsWith("nvsmi-agent top \u00b7 5 hosts"));
  CHECK_THAT(lines[1], Catch::StartsWith("24 GPUs on 5 hosts: "));
  CHECK_THAT(lines[39], Catch::StartsWith("q quit"));
  // The rest below: a page down shows the live host and the two that do not answer, marked.
  tmux.key("NPage");
  tmux.key("NPage");
  CHECK(tmux.wait_for([&](const std::string &s) {
    return s.find(stopped_line) != std::string::npos && s.find(stalled_line) != std::string::npos;
  }));
  test::keep_artifact("top-hosts-120x40-end.txt", tmux.screen());
  // A host that answered, then stops answering: marked, with the age of its last good sample,
  // which stays on the screen, dimmed (A_DIM, SGR 2), as the past.
  REQUIRE(::kill(b.pid(), SIGSTOP) == 0);
  ContinueAtEnd resume_b{b.pid()};
  std::string b_line =
      label(b.port()) + " \u00b7 unreachable: no answer in 1 s \u00b7 last good sample ";
  CHECK(tmux.wait_for([&](const std::string &s) { return s.find(b_line) != std::string::npos; }));
  std::string styled = tmux.tmux("capture-pane -p -e").out;
  test::keep_artifact("top-hosts-120x40-lost.txt", tmux.screen());
  std::size_t below = styled.find("\n", styled.find(label(b.port())));
  REQUIRE(below != std::string::npos);
  std::string next_line = styled.substr(below + 1, styled.find('\n', below + 1) - below - 1);
  INFO(next_line);
  CHECK_THAT(next_line, Catch::Contains("8 GPUs: 3 free") &&
                            (Catch::Contains("\x1b[2m") || Catch::Contains("\x1b[0;2m")));
  ::kill(b.pid(), SIGCONT);
  // At 60 columns every line still fits, broken between its parts; the end is further down.
  tmux.resize(60, 30);
  for (int press = 0; press < 4; ++press)
    tmux.key("NPage");
  CHECK(tmux.wait_for([&](const std::string &s) {
    auto rows = test::lines_of(s);
    bool narrow = std::all_of(rows.begin(), rows.end(), [](const std::string &row) {
      return nvsmi::text_columns(row) <= 60;
    });
    return narrow && rows.size() >= 30 && rows[29].find("q quit") == 0 &&
           s.find(stalled_line) != std::string::npos;
  }));
  test::keep_artifact("top-hosts-60x30-end.txt", tmux.screen());
  tmux.keys("kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk");
  CHECK(tmux.wait_for([&](const std::string &s) { return ok_hosts(s); }));
  test::keep_artifact("top-hosts-60x30.txt", tmux.screen());
  tmux.keys("q");
  CHECK(tmux.wait_for("top-exit=0"));
}

TEST_CASE("top --hosts and /fleet show what a hostile agent says as text, within deadlines") {
  // A snapshot whose names are escape sequences and markup, an agent whose 503 reason is too,
  // one answering 100 MB, one answering what is not JSON, one that never answers.
  nlohmann::json snapshot = nlohmann::json::parse(
      test::run_agent("snapshot --format json --fixture " + fixture("xml/h100-8gpu-v12.xml")).out);
  snapshot["gpus"][0]["name"] = "\x1b[2J\x1b[31mEVIL<img src=x onerror=\"document.title='pwned'\">";
  snapshot["gpus"][1]["processes"] = nlohmann::json::array({snapshot["gpus"][2]["processes"][0]});
  snapshot["gpus"][1]["processes"][0]["user"] = "alice";
  snapshot["gpus"][1]["processes"][0]["command"] = "python3 train.py --token=secret";
  snapshot["gpus"][2]["processes"][0]["name"] =
      "<script>document.title='pwned'</script>\x1b]0;t\x07";
  // A bidirectional override (it would turn what follows around) and a name without a space.
  snapshot["gpus"][3]["name"] = "\u202eevil" + std::string(3000, 'W');
  CannedServer hostile(http_answer(200, snapshot.dump()));
  CannedServer reason(http_answer(503, R"({"error":"\u001b[2Jgone<b>bold</b>"})"));
  CannedServer huge("HTTP/1.1 200 OK\r\nContent-Length: 104857600\r\n\r\n", 8u << 20);
  CannedServer garbage(http_answer(200, "{\"gpus\":[[[["));
  CannedServer stalled("");
  std::string hosts;
  for (const CannedServer *server : {&hostile, &reason, &huge, &garbage, &stalled})
    hosts += (hosts.empty() ? "" : ",") + server->host().label();

  Server fleet("--fixture " + fixture("xml/h100-8gpu-v12.xml") +
               " --interval 0.5 --fleet-timeout 1 --fleet-hosts " + hosts);
  nlohmann::json document;
  const std::vector<std::string> expected = {"ok", "stale", "unreachable", "unreachable",
                                             "unreachable"};
  CHECK(test::wait_until([&] {
    document = fleet_json(fleet);
    return statuses(document) == expected;
  }));
  INFO(document.dump());
  CHECK(document["hosts"][1]["problem"] == "[2Jgone<b>bold</b>");
  CHECK(document["hosts"][2]["problem"] == "answered more than 4 MiB");
  // What the hostile host gave, less what this serve withholds: on loopback its user names
  // pass, beyond loopback not; a command line never.
  auto relayed = [](const nlohmann::json &answer) {
    return answer["hosts"][0]["snapshot"]["gpus"][1]["processes"][0];
  };
  CHECK(relayed(document)["user"] == "alice");
  CHECK(document.dump().find("token=secret") == std::string::npos);
  Server open_fleet("--listen 0.0.0.0:0 --fixture " + fixture("xml/h100-8gpu-v12.xml") +
                    " --interval 0.5 --fleet-timeout 1 --fleet-hosts " + hostile.host().label());
  nlohmann::json open_document;
  CHECK(test::wait_until([&] {
    open_document = fleet_json(open_fleet);
    return statuses(open_document) == std::vector<std::string>{"ok"};
  }));
  CHECK(relayed(open_document)["user"].is_null());
  CHECK(open_document.dump().find("token=secret") == std::string::npos);
  if (test::installed("chromium")) {
    test::Run dom = test::chromium("--virtual-time-budget=5000 --window-size=1000,900 --dump-dom " +
                                   quote(fleet.url("/fleet")));
    REQUIRE(dom.exit_code == 0);
    // Inserted as text: the markup shows as itself, no element of it exists, nothing ran.
    CHECK_THAT(dom.out, Catch::Contains("&lt;img src=x onerror="));
    // A process is named by its program, as on every screen: the last part of its first word's
    // path ("script>" of "<script>...</script>").
    CHECK_THAT(dom.out, Catch::Contains("script&gt;") && !Catch::Contains("<script>document"));
    CHECK_THAT(dom.out, Catch::Contains("gone&lt;b&gt;bold&lt;/b&gt;"));
    CHECK_THAT(dom.out, !Catch::Contains("<img") && !Catch::Contains("<b>"));
    CHECK_THAT(dom.out, Catch::Contains("<title>nvsmi-agent fleet</title>"));
    // The override is shown as U+FFFD; the long name is cut in its cell, the page no wider than
    // the screen.
    CHECK_THAT(dom.out, Catch::Contains("\xef\xbf\xbd"
                                        "evilWWW") &&
                            !Catch::Contains("\u202e"));
    std::vector<std::string> widths;
    try {
      widths = test::browser_steps(
          fleet.url("/fleet"), "1000x900",
          "document.querySelectorAll('tr[data-state]').length === 8",
          {"eval:[document.documentElement.scrollWidth, document.documentElement.clientWidth]"});
    } catch (const std::runtime_error &problem) {
      FAIL(problem.what());
    }
    nlohmann::json width = nlohmann::json::parse(widths[1]);
    CHECK(width[0].get<int>() <= width[1].get<int>());
  }

  if (!test::installed("tmux"))
    return;
  test::Tmux tmux(120, 40);
  tmux.run("LC_ALL=C.UTF-8 " AGENT_BIN " top --interval 0.5 --timeout 1 --hosts " + hosts +
           "; echo top-exit=$?");
  // The escape sequences are shown without their ESC: the screen is not cleared or recoloured.
  REQUIRE(tmux.wait_for("[2J[31mEVIL"));
  CHECK(tmux.wait_for([&](const std::string &s) {
    return s.find("stale: [2Jgone<b>bold</b>") != std::string::npos &&
           s.find("unreachable: answered more than 4 MiB") != std::string::npos &&
           s.find("unreachable: answered what is not a snapshot") != std::string::npos;
  }));
  test::keep_artifact("top-hosts-hostile.txt", tmux.screen());
  CHECK(tmux.shows("nvsmi-agent top"));
  tmux.keys("q");
  CHECK(tmux.wait_for("top-exit=0"));
}

namespace {

// The display column where the first `mark` of `line` ends (its last column), counted as the
// terminal counts (wide characters two, combining marks none); npos where there is none.
std::size_t column_after(const std::string &line, const std::string &mark) {
  std::size_t at = line.find(mark);
  if (at == std::string::npos)
    return std::string::npos;
  return nvsmi::text_columns(nvsmi::printable_text(line.substr(0, at + mark.size())));
}

// The distinct display columns at which each GPU row's first `mark` ends, over the rows that
// `is_row` picks.
std::set<std::size_t> mark_columns(const std::string &screen, const std::string &mark,
                                   const std::function<bool(const std::string &)> &is_row,
                                   std::size_t &rows) {
  std::set<std::size_t> columns;
  rows = 0;
  for (const std::string &line : test::lines_of(screen))
    if (is_row(line)) {
      ++rows;
      columns.insert(column_after(line, mark));
    }
  return columns;
}

} // namespace

TEST_CASE(
    "fleet and top --hosts: every host's rows in the same columns, each state in its colour") {
  // Three hosts named at different lengths: two serves on fixtures, and an agent whose GPU names
  // are wide, combining and escape characters and whose readings are wider than the others'.
  Server a("--fixture " + fixture("xml/h100-8gpu-states-v12.xml"));
  Server b("--fixture " + fixture("xml/gtx1080ti-2gpu-v10-nodoctype.xml"));
  nlohmann::json snapshot = nlohmann::json::parse(
      test::run_agent("snapshot --format json --fixture " + fixture("xml/h100-8gpu-v12.xml")).out);
  snapshot["gpus"][0]["name"] = "\u65e5\u672c\u8a9e GPU\u0301\u0301 \x1b[2J\u4e2d";
  snapshot["gpus"][1]["name"] = "\u200f\u202eH100";
  snapshot["gpus"][0]["temperature_c"] = 100;
  snapshot["gpus"][0]["utilization_gpu_percent"] = 100;
  CannedServer odd(http_answer(200, snapshot.dump()));
  for (const Server *server : {&a, &b})
    REQUIRE(test::wait_until([&] { return server->get("/api/v1/snapshot").status == 200; }));
  std::string hosts = "127.0.0.1:" + std::to_string(a.port()) +
                      ",localhost:" + std::to_string(b.port()) + ",127.1:" + odd.host().port;

  // fleet (80 columns, a pipe): every GPU row's temperature and utilization end at the same
  // columns, whichever host it is on.
  test::Run text = test::run_agent("fleet --timeout 2 --hosts " + hosts);
  INFO(text.out << text.err);
  REQUIRE(text.exit_code == 0);
  test::keep_artifact("fleet-columns.txt", text.out);
  auto gpu_row = [](const std::string &line) { return line.rfind("[", 0) == 0; };
  std::size_t rows = 0;
  CHECK(mark_columns(text.out, "\u00b0C", gpu_row, rows).size() == 1);
  CHECK(rows == 18);
  CHECK(mark_columns(text.out, "%", gpu_row, rows).size() == 1);
  CHECK(mark_columns(text.out, "MiB", gpu_row, rows).size() == 1);
  for (const std::string &line : test::lines_of(text.out)) {
    CHECK(nvsmi::text_columns(line) <= 80);
    CHECK(line.find('\x1b') == std::string::npos);
  }

  if (!test::installed("tmux")) {
    WARN("tmux is not installed (scripts/install-deps installs it): top --hosts is not tested");
    return;
  }
  for (const auto &[columns, lines] : {std::pair<int, int>{160, 60}, {100, 60}}) {
    test::Tmux tmux(columns, lines);
    tmux.run("LC_ALL=C.UTF-8 " AGENT_BIN " top --interval 0.5 --timeout 1 --hosts " + hosts +
             "; echo top-exit=$?");
    // GPU rows start with their index; every one's utilization (right-aligned) ends at one column.
    auto top_row = [](const std::string &line) {
      return std::regex_search(line, std::regex("^ {1,3}[0-9]+  "));
    };
    bool aligned = tmux.wait_for([&](const std::string &s) {
      std::size_t shown = 0;
      return s.find("18 GPUs on 3 hosts") != std::string::npos &&
             mark_columns(s, "%", top_row, shown).size() == 1 && shown == 18;
    });
    std::string screen = tmux.screen();
    std::string styled = tmux.tmux("capture-pane -p -e").out;
    test::keep_artifact("top-hosts-columns-" + std::to_string(columns) + ".txt", screen);
    test::keep_artifact("top-hosts-columns-" + std::to_string(columns) + ".ansi", styled);
    INFO(screen);
    CHECK(aligned);
    for (const std::string &line : test::lines_of(screen))
      CHECK(nvsmi::text_columns(line) <= static_cast<std::size_t>(columns));
    // The summary is the bold line; each state in its colour (free green, in use cyan, idle but
    // held yellow, hot and at power limit red), a memory 95 % full red.
    std::vector<std::string> styled_lines = test::lines_of(styled);
    REQUIRE(styled_lines.size() > 2);
    CHECK(std::regex_search(styled_lines[1],
                            std::regex("^(\x1b\\[[0-9;]*m)*\x1b\\[(0;)?1m(\x1b\\[[0-9;]*m)*"
                                       "18 GPUs on 3 hosts")));
    CHECK_THAT(styled, Catch::Contains("\x1b[32mfree"));
    CHECK_THAT(styled, Catch::Contains("\x1b[36min use"));
    CHECK_THAT(styled, Catch::Contains("\x1b[33midle but held"));
    CHECK_THAT(styled, Catch::Contains("\x1b[31mhot"));
    CHECK_THAT(styled, Catch::Contains("\x1b[31mat power limit"));
    CHECK(std::regex_search(styled, std::regex("\x1b\\[31m[^\x1b]*79\\.1/79\\.6G")));
    // A GPU's name is not bold: the only bold is the summary's.
    std::size_t bold = 0;
    for (const std::string &line : styled_lines)
      bold += line.find("\x1b[1m") != std::string::npos || line.find(";1m") != std::string::npos;
    CHECK(bold == 1);
    CHECK(screen.find('\x1b') == std::string::npos);
    tmux.keys("q");
    CHECK(tmux.wait_for("top-exit=0"));
  }
}

TEST_CASE("top --hosts lays out a tiny or a huge terminal without a line past its edge") {
  std::setlocale(LC_ALL, "C.UTF-8");
  nvsmi::HostReading ok{{"gpu1", "9437"}, nvsmi::HostStatus::ok, "", {}, {}};
  ok.last_good = test::xml_fixture("xml/h100-8gpu-states-v12.xml");
  ok.last_good->gpus[0].name = "\xe6\x97\xa5\xe6\x9c\xac\xcc\x81\xff\x1b[2J";
  ok.last_good_at = std::chrono::system_clock::now();
  nvsmi::HostReading gone{{"\xe6\x97\xa5.example", "9437"},
                          nvsmi::HostStatus::unreachable,
                          "no answer in 1 s",
                          ok.last_good,
                          ok.last_good_at};
  std::vector<nvsmi::HostReading> hosts = {ok, gone};
  for (nvsmi::ScreenSize size :
       {nvsmi::ScreenSize{0, 0}, nvsmi::ScreenSize{1, 1}, nvsmi::ScreenSize{3, 2},
        nvsmi::ScreenSize{20, 5}, nvsmi::ScreenSize{79, 19}, nvsmi::ScreenSize{2000, 400}}) {
    INFO(size.columns << "x" << size.lines);
    for (bool unicode : {true, false}) {
      std::size_t scroll = 1000;
      std::vector<nvsmi::ScreenLine> lines = nvsmi::layout_fleet_screen(
          hosts, std::chrono::system_clock::now(), size, scroll, 1000ms, unicode);
      CHECK(lines.size() == static_cast<std::size_t>(std::max(size.lines, 1)));
      for (const nvsmi::ScreenLine &line : lines) {
        std::string text = nvsmi::line_text(line);
        CHECK(nvsmi::text_columns(text) <= static_cast<std::size_t>(std::max(size.columns, 1)));
        CHECK(nvsmi::printable_text(text) == text);
        if (!unicode)
          for (char c : text)
            CHECK((c >= 0x20 && c < 0x7f));
      }
    }
  }
  std::setlocale(LC_ALL, "C");
}

} // namespace test_fleet_hosts
