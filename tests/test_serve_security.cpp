// serve behind the Prometheus exporters' web config (--web.config.file): basic auth against
// bcrypt hashes made by htpasswd, TLS with a certificate made by openssl, checked with curl; a
// config that is not what it seems refused at start-up; a flood of wrong passwords that does not
// starve the server or a client that knows its password.
#include "serve_support.hpp"
#include "support.hpp"

#include "process_support.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <unistd.h>
#include <vector>

namespace test_serve_security {

using test::quote;
using test::Server;

namespace {

const std::string recording = quote(test::fixture_path("xml/h100-8gpu-v12.xml"));

// A bcrypt hash of `password` (cost 10 unless told, "$2y$"), as an operator makes one.
std::string bcrypt(const std::string &password, int cost = 10) {
  test::Run run = test::run_shell("htpasswd -nbBC " + std::to_string(cost) + " user " +
                                  quote(password) + " | cut -d: -f2");
  REQUIRE(run.exit_code == 0);
  std::string hash = run.out.substr(0, run.out.find('\n'));
  REQUIRE(hash.rfind("$2y$" + std::string(cost < 10 ? "0" : "") + std::to_string(cost) + "$", 0) ==
          0);
  return hash;
}

// A folder with a self-signed certificate for 127.0.0.1 (cert.pem, key.pem).
std::string certificate_folder() {
  std::string folder = test::temporary_folder();
  test::Run run = test::run_shell(
      "openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=127.0.0.1 "
      "-addext subjectAltName=IP:127.0.0.1,DNS:localhost -keyout " +
      quote(folder + "/key.pem") + " -out " + quote(folder + "/cert.pem") + " 2>&1");
  INFO(run.out);
  REQUIRE(run.exit_code == 0);
  return folder;
}

// `text` as web.yml in `folder` (a new one where none is given).
std::string web_config(const std::string &text, std::string folder = "") {
  std::string path = (folder.empty() ? test::temporary_folder() : folder) + "/web.yml";
  test::write_file(path, text);
  return path;
}

// TLS with the certificate of `folder` (named relative to the config's folder, as the exporters
// read them), and the user prometheus with `password`.
std::string tls_and_password_config(const std::string &folder, const std::string &password) {
  return web_config("tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\n"
                    "basic_auth_users:\n  prometheus: " +
                        bcrypt(password) + "\n",
                    folder);
}

} // namespace

TEST_CASE("serve with basic_auth_users: 401 without the right password, 200 with it") {
  std::string config = web_config("basic_auth_users:\n  prometheus: " + bcrypt("s3cret") + "\n");
  Server server("--fixture " + recording + " --web.config.file " + quote(config));
  for (const char *credentials :
       {"", "-u prometheus:wrong", "-u nobody:s3cret",
        "-u prometheus:", "-H 'Authorization: Basic !!!!'", "-H 'Authorization: Bearer s3cret'"}) {
    INFO(credentials);
    test::Http denied = server.get("/metrics", credentials);
    CHECK(denied.status == 401);
    CHECK_THAT(denied.headers, Catch::Contains("WWW-Authenticate: Basic"));
    CHECK(denied.body.find("nvsmi_") == std::string::npos);
  }
  CHECK(server.get("/api/v1/snapshot").status == 401);
  // A page rebinding its name to loopback gets 421, not a login prompt to phish with.
  test::Http rebound = server.get("/metrics", "-H 'Host: evil.example'");
  CHECK(rebound.status == 421);
  CHECK(rebound.headers.find("WWW-Authenticate") == std::string::npos);
  CHECK(server.get("/", "-u prometheus:s3cret").status == 200);
  test::Http metrics = server.get("/metrics", "-u prometheus:s3cret");
  CHECK(metrics.status == 200);
  CHECK_THAT(metrics.body, Catch::Contains("nvsmi_up"));
  CHECK(server.stop() == 0);
}

TEST_CASE("serve with tls_server_config answers HTTPS only, with its certificate") {
  std::string folder = certificate_folder();
  std::string config = tls_and_password_config(folder, "s3cret");
  Server server("--fixture " + recording + " --web.config.file " + quote(config));
  REQUIRE(server.url().rfind("https://", 0) == 0);
  std::string ca = "--cacert " + quote(folder + "/cert.pem");
  CHECK(server.get("/metrics", ca).status == 401);
  test::Http metrics = server.get("/metrics", ca + " -u prometheus:s3cret");
  CHECK(metrics.status == 200);
  CHECK_THAT(metrics.body, Catch::Contains("nvsmi_up"));
  // An unknown certificate is refused by the client; plain HTTP gets no answer.
  CHECK(server.get("/metrics", "-u prometheus:s3cret").status == 0);
  test::Run plain =
      test::run_shell("curl -s --max-time 20 -o /dev/null -w '%{http_code}' " +
                      quote("http://127.0.0.1:" + std::to_string(server.port()) + "/metrics"));
  CHECK(plain.out == "000");
  CHECK(server.get("/metrics", ca + " -u prometheus:s3cret").status == 200);
  CHECK(server.stop() == 0);
}

TEST_CASE("serve with client_auth_type RequireAndVerifyClientCert wants a certificate of its CA") {
  std::string folder = certificate_folder();
  std::string client = certificate_folder(), stranger = certificate_folder();
  std::string config = web_config("tls_server_config:\n  cert_file: cert.pem\n"
                                  "  key_file: key.pem\n  client_ca_file: " +
                                      client +
                                      "/cert.pem\n"
                                      "  client_auth_type: RequireAndVerifyClientCert\n",
                                  folder);
  Server server("--fixture " + recording + " --web.config.file " + quote(config));
  std::string ca = "--cacert " + quote(folder + "/cert.pem");
  auto with = [&](const std::string &who) {
    return ca + " --cert " + quote(who + "/cert.pem") + " --key " + quote(who + "/key.pem");
  };
  CHECK(server.get("/metrics", with(client)).status == 200);
  CHECK(server.get("/metrics", ca).status == 0);
  CHECK(server.get("/metrics", with(stranger)).status == 0);
  CHECK(server.get("/metrics", with(client)).status == 200);
  CHECK(server.stop() == 0);
}

TEST_CASE("serve refuses a web config it cannot honour, with one line, before it listens") {
  std::string hash = bcrypt("s3cret");
  std::string folder = certificate_folder();
  struct Case {
    std::string config, says;
  };
  for (const Case &bad : {
           Case{"basic_auth_user:\n  prometheus: " + hash + "\n", "unknown or unsupported key"},
           Case{"tls_server_config:\n  cert_file: " + folder + "/cert.pem\n  key_file: " + folder +
                    "/key.pem\n  cipher_suites: [TLS_AES_128_GCM_SHA256]\n",
                "\"cipher_suites\""},
           Case{"tls_server_config:\n  cert_file: " + folder + "/cert.pem\n  key_file: " + folder +
                    "/key.pem\n  client_ca_file: " + folder + "/cert.pem\n",
                "client_ca_file needs client_auth_type"},
           Case{"tls_server_config:\n  cert_file: " + folder + "/cert.pem\n  key_file: " + folder +
                    "/key.pem\n  client_auth_type: RequireAnyClientCert\n",
                "is not supported"},
           Case{"tls_server_config:\n  cert_file: " + folder + "/cert.pem\n  key_file: " + folder +
                    "/key.pem\n  client_auth_type: RequireAndVerifyClientCert\n",
                "needs client_ca_file"},
           Case{"basic_auth_users:\n  prometheus: s3cret\n", "not a bcrypt hash"},
           Case{"basic_auth_users:\n  prometheus: \"$2y$99$" + hash.substr(7) + "\"\n",
                "not a bcrypt hash"},
           Case{"basic_auth_users: [prometheus]\n", "basic_auth_users must map"},
           Case{"tls_server_config:\n  cert_file: " + folder + "/cert.pem\n", "needs both"},
           Case{"tls_server_config:\n  cert_file: " + folder +
                    "/missing.pem\n  key_file: " + folder + "/key.pem\n",
                "cert_file"},
           Case{"tls_server_config:\n  cert_file: " + folder + "/key.pem\n  key_file: " + folder +
                    "/cert.pem\n",
                "cert_file"},
           Case{"basic_auth_users: {a: [b\n", "not YAML"},
       }) {
    INFO(bad.config);
    test::Run run = test::run_agent("serve --listen 127.0.0.1:0 --fixture " + recording +
                                    " --web.config.file " + quote(web_config(bad.config)));
    CHECK(run.exit_code == 2);
    CHECK_THAT(run.err, Catch::StartsWith("nvsmi-agent: --web.config.file "));
    CHECK_THAT(run.err, Catch::Contains(bad.says));
    CHECK(std::count(run.err.begin(), run.err.end(), '\n') == 1);
  }
  test::Run unreadable = test::run_agent("serve --listen 127.0.0.1:0 --fixture " + recording +
                                         " --web.config.file /nonexistent/web.yml");
  CHECK(unreadable.exit_code == 2);
  CHECK_THAT(unreadable.err, Catch::Contains("/nonexistent/web.yml: cannot be read"));
}

TEST_CASE("a flood of wrong passwords neither stops serve nor keeps out the right one") {
  std::string config = web_config("basic_auth_users:\n  prometheus: " + bcrypt("s3cret") + "\n");
  Server server("--fixture " + recording + " --web.config.file " + quote(config));
  REQUIRE(server.get("/metrics", "-u prometheus:s3cret").status == 200);
  test::Run run =
      test::run_shell("python3 " + quote(std::string(TESTS_DIR) + "/serve_abuse.py") + " " +
                      std::to_string(server.port()) + " badauth 16 5 prometheus:s3cret");
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  auto seen = nlohmann::json::parse(run.out);
  INFO(seen.dump());
  // Every right request answered, though the checker is always full of wrong ones.
  CHECK(seen["right"].size() == 1);
  CHECK(seen["right"].value("200", 0) > 0);
  // Each wrong one refused: checked (401), or past its client's checking time (429) or the
  // queue's room (503) without a check.
  for (const auto &[status, count] : seen["wrong"].items())
    CHECK((status == "401" || status == "429" || status == "503"));
  CHECK(seen["wrong"].value("429", 0) + seen["wrong"].value("503", 0) > 0);
  CHECK(server.get("/metrics", "-u prometheus:s3cret").status == 200);
  CHECK(server.stop() == 0);
}

TEST_CASE("serve: another local user's flood of wrong passwords keeps out no right one, though "
          "none is remembered yet") {
  if (::geteuid() != 0) {
    WARN("skipped: flooding as another local user (nobody) needs root");
    return;
  }
  // A user for each try, so that each right password is checked during the flood, as a
  // scraper's is after serve restarts.
  std::string users;
  for (int i = 0; i < 4; ++i)
    users += "  scraper" + std::to_string(i) + ": " + bcrypt("right" + std::to_string(i)) + "\n";
  Server server("--fixture " + recording + " --web.config.file " +
                quote(web_config("basic_auth_users:\n" + users)));
  // The script where nobody may read it, and write that its flood has begun.
  std::string folder = test::temporary_folder();
  REQUIRE(test::run_shell("chmod 1777 " + quote(folder) + " && cp " +
                          quote(std::string(TESTS_DIR) + "/serve_abuse.py") + " " + quote(folder))
              .exit_code == 0);
  std::string ready = folder + "/flooding";
  test::Background flood("exec setpriv --reuid=nobody --regid=nogroup --clear-groups "
                         "/usr/bin/python3 " +
                         quote(folder + "/serve_abuse.py") + " " + std::to_string(server.port()) +
                         " flood 16 600 scraper0 " + quote(ready));
  REQUIRE(test::wait_until([&] { return ::access(ready.c_str(), F_OK) == 0; }));
  // Two bcrypt checks at cost 10 (55 ms each on an idle machine: the flood's one under way, then
  // this one), many times over on a busy machine, and still half of Prometheus' scrape timeout.
  // Before, the flood's checks filled the queue and most right ones got 503.
  auto right = [&](int i) {
    auto start = std::chrono::steady_clock::now();
    test::Http answer =
        server.get("/metrics", "-u scraper" + std::to_string(i) + ":right" + std::to_string(i));
    double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    INFO("scraper" << i << ": " << answer.status << " in " << took << " s");
    CHECK(answer.status == 200);
    CHECK(took < 5);
  };
  // The flood's checks fill its share of the queue: each right one's turn comes after one of
  // theirs at most.
  for (int i = 0; i < 4; ++i)
    right(i);
  ::kill(flood.pid(), SIGTERM);
  REQUIRE(flood.wait() == 0);
  auto seen = nlohmann::json::parse(flood.out())["wrong"];
  INFO(seen.dump() << flood.err());
  CHECK(seen.value("401", 0) > 0); // its wrong passwords were checked meanwhile
  for (const auto &[status, count] : seen.items())
    CHECK((status == "401" || status == "429" || status == "503"));
  CHECK(server.stop() == 0);
}

// The CPU time all threads of process `pid` have run, in seconds: the scheduler's count in
// nanoseconds (/proc/PID/task/TID/schedstat), which a busy machine's waiting does not enter.
double cpu_seconds(int pid) {
  double total = 0;
  std::error_code error;
  for (const auto &task :
       std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task", error)) {
    std::ifstream stat(task.path() / "schedstat");
    double nanoseconds = 0;
    if (stat >> nanoseconds) // a thread that ended meanwhile has none
      total += nanoseconds / 1e9;
  }
  return total;
}

TEST_CASE("serve: a wrong password takes as long for a user who does not exist as for one who "
          "does") {
  // Cost 5, htpasswd -nbB's default: a check of about 3 ms, where the decoy for unknown users
  // was always cost 10 (55 ms).
  std::string config = web_config("basic_auth_users:\n  prometheus: " + bcrypt("s3cret", 5) + "\n");
  Server server("--fixture " + recording + " --web.config.file " + quote(config));
  // The server's work for one answer: its CPU time across the request. Not the time to the 401
  // that curl sees: on a busy machine that is mostly the scheduler's, and one run's medians were
  // 10 ms for a known user and 5 for an unknown one.
  auto answer_seconds = [&](const std::string &user, int i) {
    double before = cpu_seconds(server.pid());
    test::Run run = test::run_shell("curl -s -o /dev/null --max-time 60 -w '%{http_code}' -u " +
                                    quote(user + ":wrong" + std::to_string(i)) + " " +
                                    quote(server.url("/metrics")));
    CHECK(run.out == "401");
    return cpu_seconds(server.pid()) - before;
  };
  std::vector<double> known, unknown;
  for (int i = 0; i < 30; ++i) { // interleaved, so that the server's own sampling falls on both
    known.push_back(answer_seconds("prometheus", i));
    unknown.push_back(answer_seconds("nobody-here", i));
  }
  auto median = [](std::vector<double> times) {
    std::nth_element(times.begin(), times.begin() + times.size() / 2, times.end());
    return times[times.size() / 2];
  };
  double ratio = median(unknown) / median(known);
  INFO("median CPU for a known user " << median(known) << " s, unknown " << median(unknown)
                                      << " s");
  // The same work, so about 1; a factor of 2 either way for what else the server did meanwhile.
  // Before, 18 (55 ms against 3).
  CHECK(ratio < 2);
  CHECK(ratio > 0.5);
  CHECK(server.stop() == 0);
}

TEST_CASE("serve refuses a web config, certificate or key that is no regular file or that "
          "another user could change: exit 2, one line") {
  std::string folder = certificate_folder();
  std::string tls = "tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\n";
  auto start = [&](const std::string &config) {
    // A FIFO once hung serve before it listened: bounded here, so that such a fault fails.
    return test::run_shell("timeout 20 " + quote(AGENT_BIN) +
                           " serve --listen 127.0.0.1:0 --fixture " + recording +
                           " --web.config.file " + quote(config));
  };
  auto refused = [&](const std::string &config, const std::string &says) {
    test::Run run = start(config);
    INFO(config << "\n" << run.err);
    CHECK(run.exit_code == 2);
    CHECK_THAT(run.err, Catch::StartsWith("nvsmi-agent: --web.config.file " + config + ": "));
    CHECK_THAT(run.err, Catch::Contains(says));
    CHECK(std::count(run.err.begin(), run.err.end(), '\n') == 1);
  };
  auto shell = [](const std::string &command) {
    test::Run run = test::run_shell(command);
    INFO(command << "\n" << run.err);
    REQUIRE(run.exit_code == 0);
  };
  refused(folder, "is a folder, not a regular file"); // was exit 1, "basic_filebuf::underflow"
  std::string fifo = folder + "/fifo.yml";
  shell("mkfifo " + quote(fifo));
  refused(fifo, "is a FIFO, not a regular file"); // hung
  // A FIFO as each file the config names, a file anyone (or the group) may write.
  std::string config = web_config(tls, folder);
  for (std::string key : {"cert_file", "key_file"}) {
    std::string other = test::temporary_folder();
    shell("cp " + quote(folder) + "/*.pem " + quote(other) + " && rm " +
          quote(other + (key == "cert_file" ? "/cert.pem" : "/key.pem")) + " && mkfifo " +
          quote(other + (key == "cert_file" ? "/cert.pem" : "/key.pem")));
    std::string in_other = web_config(tls, other);
    refused(in_other, key + " " + other + (key == "cert_file" ? "/cert.pem" : "/key.pem") +
                          " is a FIFO, not a regular file");
  }
  shell("chmod 666 " + quote(config));
  refused(config, "can be written by every user (mode 0666): chmod go-w it");
  shell("chmod 664 " + quote(config));
  refused(config, "can be written by its group (mode 0664)");
  shell("chmod 644 " + quote(config) + " && chmod 620 " + quote(folder + "/key.pem"));
  refused(config, "key_file " + folder + "/key.pem can be written by its group (mode 0620)");
  shell("chmod 600 " + quote(folder + "/key.pem") + " && chmod 646 " + quote(folder + "/cert.pem"));
  refused(config, "cert_file " + folder + "/cert.pem can be written by every user");
  shell("chmod 644 " + quote(folder + "/cert.pem"));
  std::string with_ca = web_config(tls + "  client_ca_file: ca.pem\n"
                                         "  client_auth_type: RequireAndVerifyClientCert\n",
                                   test::temporary_folder());
  std::string ca_folder = with_ca.substr(0, with_ca.rfind('/'));
  shell("cp " + quote(folder) + "/*.pem " + quote(ca_folder) + " && cp " +
        quote(folder + "/cert.pem") + " " + quote(ca_folder + "/ca.pem") + " && chmod 666 " +
        quote(ca_folder + "/ca.pem"));
  refused(with_ca, "client_ca_file " + ca_folder + "/ca.pem can be written by every user");
  if (::geteuid() != 0) {
    WARN("not checked: files another user owns (chown needs root)");
    return;
  }
  // Neither root nor the user serve runs as (root here): nobody.
  shell("chown nobody " + quote(config));
  refused(config, "is owned by uid 65534 (nobody), neither root nor the user serve runs as (uid "
                  "0 (root))");
  shell("chown root " + quote(config) + " && chown nobody " + quote(folder + "/key.pem"));
  refused(config, "key_file " + folder + "/key.pem is owned by uid 65534 (nobody)");
}

TEST_CASE("serve warns once of a private key that every user can read, and serves") {
  std::string folder = certificate_folder();
  REQUIRE(test::run_shell("chmod 644 " + quote(folder + "/key.pem")).exit_code == 0);
  Server server("--fixture " + recording + " --web.config.file " +
                quote(web_config("tls_server_config:\n  cert_file: cert.pem\n  key_file: "
                                 "key.pem\n",
                                 folder)));
  std::string warning = "key_file " + folder +
                        "/key.pem can be read by every user (mode 0644): "
                        "chmod o-r it";
  std::string log = server.log();
  INFO(log);
  CHECK_THAT(log, Catch::Contains("warning: --web.config.file " + folder + "/web.yml: " + warning));
  CHECK(log.find(warning) == log.rfind(warning));
  CHECK(server.get("/metrics", "--cacert " + quote(folder + "/cert.pem")).status == 200);
  CHECK(server.stop() == 0);
}

TEST_CASE("a real Prometheus scrapes serve over TLS with basic auth") {
  if (!test::installed("prometheus")) {
    WARN("prometheus is not installed (scripts/install-deps installs it): not scraped");
    return;
  }
  std::string folder = certificate_folder();
  std::string config = tls_and_password_config(folder, "s3cret");
  Server server("--fixture " + recording + " --web.config.file " + quote(config));
  test::write_file(folder + "/password", "s3cret");
  test::Prometheus prometheus({server.port()}, "    scheme: https\n"
                                               "    tls_config:\n      ca_file: " +
                                                   folder +
                                                   "/cert.pem\n"
                                                   "    basic_auth:\n      username: prometheus\n"
                                                   "      password_file: " +
                                                   folder + "/password\n");
  nlohmann::json up = prometheus.query("nvsmi_up", [](const nlohmann::json &found) {
    return found.size() == 1 && found[0]["value"][1] == "1";
  });
  INFO(prometheus.log() << server.log());
  REQUIRE(up.size() == 1);
  CHECK(up[0]["value"][1] == "1");
  CHECK(server.stop() == 0);
}

TEST_CASE("fleet asks a serve behind TLS and basic auth with the CA and password it is given") {
  std::string folder = certificate_folder();
  Server server("--fixture " + recording + " --web.config.file " +
                quote(tls_and_password_config(folder, "s3cret")));
  std::string password = test::temporary_folder() + "/password";
  test::write_file(password, "s3cret\n");
  std::string host = "https://127.0.0.1:" + std::to_string(server.port());
  std::string ca = " --fleet-ca " + quote(folder + "/cert.pem");
  auto fleet = [&](const std::string &arguments) {
    test::Run run = test::run_agent("fleet --format json --hosts " + arguments);
    INFO(run.err);
    REQUIRE(run.exit_code == 0);
    return nlohmann::json::parse(run.out)["hosts"][0];
  };
  auto ok = fleet(host + ca + " --fleet-user prometheus --fleet-password-file " + quote(password));
  CHECK(ok["status"] == "ok");
  CHECK(ok["snapshot"]["gpus"].size() == 8);
  // TLS is per host: a plain serve beside it is asked in plain HTTP in the same run.
  Server plain_serve("--fixture " + recording);
  test::Run mixed = test::run_agent(
      "fleet --format json --hosts " + host + ",127.0.0.1:" + std::to_string(plain_serve.port()) +
      ca + " --fleet-user prometheus --fleet-password-file " + quote(password));
  REQUIRE(mixed.exit_code == 0);
  auto both = nlohmann::json::parse(mixed.out)["hosts"];
  CHECK(both[0]["status"] == "ok");
  CHECK(both[1]["status"] == "ok");
  // The certificate names localhost too: a host name is checked against it as well.
  auto by_name = fleet("https://localhost:" + std::to_string(server.port()) + ca +
                       " --fleet-user prometheus --fleet-password-file " + quote(password));
  CHECK(by_name["status"] == "ok");
  // serve's /fleet behind the same TLS and basic auth, asking that host with them: 401 without
  // the password, as every other path, and the host's sample with it.
  Server fleet_serve("--fixture " + recording + " --interval 0.5 --web.config.file " +
                     quote(tls_and_password_config(folder, "s3cret")) + " --fleet-hosts " + host +
                     ca + " --fleet-user prometheus --fleet-password-file " + quote(password));
  std::string trust = "--cacert " + quote(folder + "/cert.pem");
  CHECK(fleet_serve.get("/fleet.json", trust).status == 401);
  CHECK(fleet_serve.get("/fleet", trust).status == 401);
  CHECK(test::wait_until([&] {
    test::Http answer = fleet_serve.get("/fleet.json", trust + " -u prometheus:s3cret");
    auto parsed = nlohmann::json::parse(answer.body, nullptr, false);
    return answer.status == 200 && parsed.is_object() && parsed["hosts"][0]["status"] == "ok";
  }));

  auto no_password = fleet(host + ca);
  CHECK(no_password["status"] == "unreachable");
  CHECK_THAT(no_password["problem"].get<std::string>(), Catch::Contains("401"));
  test::write_file(password, "wrong\n");
  auto wrong =
      fleet(host + ca + " --fleet-user prometheus --fleet-password-file " + quote(password));
  CHECK_THAT(wrong["problem"].get<std::string>(), Catch::Contains("401"));
  // A certificate no given authority signed, and one that does not name the host: refused.
  std::string stranger = certificate_folder();
  auto unknown = fleet(host + " --fleet-ca " + quote(stranger + "/cert.pem"));
  CHECK(unknown["status"] == "unreachable");
  CHECK_THAT(unknown["problem"].get<std::string>(), Catch::StartsWith("TLS handshake failed"));
  std::string elsewhere = test::temporary_folder();
  REQUIRE(test::run_shell("openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "
                          "/CN=elsewhere.example -addext subjectAltName=DNS:elsewhere.example "
                          "-keyout " +
                          quote(elsewhere + "/key.pem") + " -out " +
                          quote(elsewhere + "/cert.pem") + " 2>&1")
              .exit_code == 0);
  Server misnamed("--fixture " + recording + " --web.config.file " +
                  quote(web_config("tls_server_config:\n  cert_file: cert.pem\n  key_file: "
                                   "key.pem\n",
                                   elsewhere)));
  auto other_name = fleet("https://127.0.0.1:" + std::to_string(misnamed.port()) + " --fleet-ca " +
                          quote(elsewhere + "/cert.pem"));
  CHECK_THAT(other_name["problem"].get<std::string>(), Catch::StartsWith("TLS handshake failed"));
  // Plain HTTP to a TLS port is no sample either.
  auto plain = fleet("127.0.0.1:" + std::to_string(server.port()));
  CHECK(plain["status"] == "unreachable");
}

} // namespace test_serve_security
