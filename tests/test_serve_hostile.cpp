// serve against hostile clients and hostile data: bytes that are not UTF-8 in a request, in
// nvidia-smi's output and in a process name, and a Host that is not this machine's.
#include "serve_support.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
#include <thread>
#include <vector>

namespace test_serve_hostile {

using test::Http;
using test::quote;
using test::Server;

namespace {

const std::string replacement = "\xef\xbf\xbd"; // U+FFFD

// Sends `request` as raw bytes and returns all the server answers before it closes.
std::string raw_request(int port, const std::string &request) {
  std::string file = test::temporary_folder() + "/request";
  test::write_file(file, request);
  test::Run run = test::run_shell("python3 -c 'import socket,sys\n"
                                  "s=socket.create_connection((\"127.0.0.1\"," +
                                  std::to_string(port) +
                                  "),timeout=30)\n"
                                  "s.sendall(open(sys.argv[1],\"rb\").read())\n"
                                  "s.shutdown(socket.SHUT_WR)\n"
                                  "data=b\"\"\n"
                                  "while True:\n"
                                  "  c=s.recv(65536)\n"
                                  "  if not c: break\n"
                                  "  data+=c\n"
                                  "sys.stdout.buffer.write(data)' " +
                                  quote(file));
  return run.out;
}

bool alive(const Server &server) { return server.get("/metrics").status == 200; }

} // namespace

TEST_CASE("serve: a request holding bytes that are not UTF-8 is answered; the server lives on") {
  Server server("--interval 0.2 --fixture " + quote(test::fixture_path("xml/h100-8gpu-v12.xml")));
  for (const char *target : {"/api/v1/history?since=\xff", "/api/v1/history?seconds=\xc3\x28",
                             "/api/v1/history?since=%FF"}) {
    std::string answer = raw_request(server.port(), std::string("GET ") + target +
                                                        " HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                                        "Connection: close\r\n\r\n");
    INFO(target << "\n" << answer << "\n" << server.log());
    REQUIRE_THAT(answer, Catch::StartsWith("HTTP/1.1 400"));
    auto body = nlohmann::json::parse(answer.substr(answer.find("\r\n\r\n") + 4));
    CHECK_THAT(body["error"].get<std::string>(), Catch::Contains("must be a number of seconds"));
    REQUIRE(alive(server));
  }
  CHECK(server.stop() == 0);
}

TEST_CASE("serve: nvidia-smi printing bytes that are not UTF-8 cannot end the server") {
  std::string folder = test::temporary_folder();
  std::string smi = folder + "/nvidia-smi";
  test::write_file(smi, "#!/bin/sh\nprintf 'NVIDIA-SMI \\377\\376 has failed\\n'\nexit 9\n");
  test::run_shell("chmod +x " + quote(smi));
  // The first start succeeds (the stand-in runs), then it keeps failing with that message.
  Server server("--interval 0.2 --stall-timeout 1 --nvidia-smi " + quote(smi));
  Http http;
  for (auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
       std::chrono::steady_clock::now() < deadline;
       std::this_thread::sleep_for(std::chrono::milliseconds(100))) {
    http = server.get("/api/v1/snapshot");
    if (http.status == 503 && http.body.find("last problem") != std::string::npos)
      break;
  }
  INFO(http.body << "\n" << server.log());
  REQUIRE(http.status == 503);
  auto body = nlohmann::json::parse(http.body); // valid JSON: the bad bytes were replaced
  CHECK_THAT(body["error"].get<std::string>(), Catch::Contains(replacement));
  CHECK(server.get("/api/v1/history").status == 503);
  CHECK(alive(server));
  CHECK(server.stop() == 0);
}

TEST_CASE("serve: a process name that is not UTF-8 keeps /metrics valid for promtool") {
  Server server("--metrics-processes --fixture " +
                quote(test::fixture_with_process_name("py\xff\xfe\"x\\y")));
  Http http = server.get("/metrics");
  REQUIRE(http.status == 200);
  CHECK_THAT(http.body,
             Catch::Contains("process_name=\"py" + replacement + replacement + "\\\"x\\\\y\""));
  if (!test::installed("promtool")) {
    WARN("promtool is not installed (scripts/install-deps installs it): not checked");
    return;
  }
  std::string file = test::temporary_folder() + "/metrics";
  test::write_file(file, http.body);
  test::Run check = test::run_shell("promtool check metrics <" + quote(file));
  INFO(check.out << check.err);
  CHECK(check.exit_code == 0);
}

TEST_CASE("serve: on a loopback address it answers only a Host that names loopback") {
  Server server("--fixture " + quote(test::fixture_path("xml/h100-8gpu-v12.xml")));
  std::string port = std::to_string(server.port());
  for (const std::string &host : std::vector<std::string>{
           "localhost", "localhost:" + port, "LOCALHOST:" + port, "127.0.0.1:" + port, "127.0.0.1",
           "127.1.2.3:" + port, "[::1]:" + port, "[::1]"}) {
    INFO(host);
    CHECK(server.get("/api/v1/snapshot", "-H " + quote("Host: " + host)).status == 200);
  }
  for (const std::string &host :
       std::vector<std::string>{"evil.example", "evil.example:" + port, "127.0.0.1.evil.example",
                                "localhost.evil.example:" + port, "[::2]:" + port,
                                "127.0.0.1:" + port + "x", "10.0.0.1:" + port}) {
    INFO(host);
    Http http = server.get("/api/v1/snapshot", "-H " + quote("Host: " + host));
    CHECK(http.status == 421);
    CHECK(http.body.find("gpus") == std::string::npos);
  }
  CHECK(server.get("/metrics", "-H " + quote("Host: rebind.example")).status == 421);
}

TEST_CASE("serve: on every address it answers any Host (the operator chose to expose it)") {
  if (!test::installed("curl"))
    return;
  int port = test::free_port();
  std::string folder = test::temporary_folder();
  test::Run started =
      test::run_shell(std::string(AGENT_BIN) + " serve --listen 0.0.0.0:" + std::to_string(port) +
                      " --fixture " + quote(test::fixture_path("xml/h100-8gpu-v12.xml")) + " 2>" +
                      quote(folder + "/err") + " & echo $!");
  int pid = std::stoi(started.out);
  test::Run answer;
  for (auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
       std::chrono::steady_clock::now() < deadline;
       std::this_thread::sleep_for(std::chrono::milliseconds(100))) {
    answer = test::run_shell("curl -s -o /dev/null -w '%{http_code}' --max-time 5 -H "
                             "'Host: gpu7.example:9437' http://127.0.0.1:" +
                             std::to_string(port) + "/api/v1/snapshot");
    if (answer.out == "200")
      break;
  }
  test::run_shell("kill " + std::to_string(pid));
  INFO(test::read_file(folder + "/err"));
  CHECK(answer.out == "200");
}

TEST_CASE("serve: the history is streamed, to HTTP/1.1, HTTP/1.0 and HEAD alike") {
  Server server("--interval 0.05 --fixture " + quote(test::fixture_path("xml/h100-8gpu-v12.xml")));
  Http full;
  for (auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
       std::chrono::steady_clock::now() < deadline;
       std::this_thread::sleep_for(std::chrono::milliseconds(100))) {
    full = server.get("/api/v1/history");
    if (full.status == 200 && nlohmann::json::parse(full.body)["samples"].size() >= 20)
      break;
  }
  REQUIRE(full.status == 200);
  CHECK_THAT(full.headers, Catch::Contains("Transfer-Encoding: chunked"));
  auto one = nlohmann::json::parse(full.body);
  REQUIRE(one["samples"].size() >= 20); // more than one 32 KiB part
  CHECK(full.body.size() > 64 * 1024);
  CHECK(one["samples"][0]["snapshot"]["gpus"][3]["temperature_c"] == 33);

  Http old = server.get("/api/v1/history", "--http1.0");
  REQUIRE(old.status == 200);
  CHECK_THAT(old.headers, !Catch::Contains("chunked"));
  CHECK(nlohmann::json::parse(old.body)["samples"].size() >= one["samples"].size());

  Http head = server.get("/api/v1/history", "-I");
  CHECK(head.status == 200);
  CHECK(head.body.find("samples") == std::string::npos); // curl -I puts the headers there
  CHECK(alive(server)); // and the connection after HEAD was not left in a broken state
}

} // namespace test_serve_hostile
