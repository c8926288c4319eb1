// End to end: `nvsmi-agent serve` on fixtures and on the stand-in nvidia-smi, over real HTTP.
#include "process_support.hpp"
#include "serve_support.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <thread>
#include <unistd.h>

namespace test_serve {

using test::Http;
using test::quote;
using test::Server;

namespace {

using namespace std::chrono_literals;

std::string fixture(const std::string &name) { return quote(test::fixture_path(name)); }
std::string fake_nvidia_smi() { return quote(std::string(SCRIPTS_DIR) + "/fake-nvidia-smi"); }

// Polls `path` until `ready` holds for the answer, for at most test::patience; the last answer.
template <typename Ready>
Http wait_for(const Server &server, const std::string &path, Ready ready) {
  Http http;
  test::wait_until(
      [&] {
        http = server.get(path);
        return ready(http);
      },
      test::patience, 100ms);
  return http;
}

// The samples of a history answer, none where it is not one.
nlohmann::json samples_of(const Http &http) {
  auto json = nlohmann::json::parse(http.body, nullptr, false);
  return json.is_object() && json.contains("samples") ? json["samples"] : nlohmann::json::array();
}

bool fake_left() {
  return !test::wait_until([] { return !test::running_here(test::fake_nvidia_smi_process); });
}

bool has(const std::string &text, const std::string &part) {
  return text.find(part) != std::string::npos;
}

const std::string gpu3 =
    R"({gpu="3",uuid="GPU-00000000-0000-0000-0000-000000000003",name="NVIDIA H100 80GB HBM3")";

} // namespace

TEST_CASE("serve: /metrics is Prometheus text in base units that promtool accepts") {
  Server server("--metrics-processes --fixture " + fixture("xml/h100-8gpu-v12.xml"));
  Http http = server.get("/metrics");
  REQUIRE(http.status == 200);
  CHECK_THAT(http.headers, Catch::Contains("text/plain; version=0.0.4"));
  const std::string &m = http.body;
  CHECK_THAT(m, Catch::Contains("# HELP nvsmi_gpu_temperature_celsius "));
  CHECK_THAT(m, Catch::Contains("# TYPE nvsmi_gpu_temperature_celsius gauge\n"));
  CHECK_THAT(m, Catch::Contains("nvsmi_gpu_temperature_celsius" + gpu3 + "} 33\n"));
  CHECK_THAT(m, Catch::Contains("nvsmi_gpu_memory_total_bytes" + gpu3 + "} 85520809984\n"));
  CHECK_THAT(m, Catch::Contains("nvsmi_gpu_power_limit_watts" + gpu3 + "} 700\n"));
  CHECK_THAT(m, Catch::Contains("nvsmi_gpu_clock_hz" + gpu3.substr(0, gpu3.size()) +
                                R"(,clock="sm"} 1980000000)"));
  CHECK_THAT(m, Catch::Contains(R"(nvsmi_gpu_info{gpu="0",)"));
  CHECK_THAT(m, Catch::Contains(R"(driver_version="550.54.15",pci_bus_id="00000000:19:00.0"} 1)"));
  CHECK_THAT(m, Catch::Contains("nvsmi_gpu_process_memory_used_bytes" + gpu3 + ",pid="));
  // A recording: no user to label its processes with or total, no host, and no 0 for either.
  CHECK_FALSE(has(m, "user="));
  CHECK_FALSE(has(m, "nvsmi_user_"));
  CHECK_FALSE(has(m, "nvsmi_host_"));
  CHECK_THAT(m, Catch::Contains("\nnvsmi_up 1\n"));
  CHECK_THAT(m, Catch::Contains("# TYPE nvsmi_sample_errors_total counter\n"));
  CHECK_THAT(m, Catch::Contains("nvsmi_child_restarts_total 0\n"));
  // Every family has its HELP and TYPE, and promtool finds nothing wrong.
  std::string file = test::temporary_folder() + "/metrics";
  test::write_file(file, m);
  if (!test::installed("promtool")) {
    WARN("promtool is not installed (scripts/install-deps installs it): not checked");
    return;
  }
  test::Run check = test::run_shell("promtool check metrics <" + quote(file));
  INFO(check.out << check.err);
  CHECK(check.exit_code == 0);
}

TEST_CASE("serve: an unknown reading is an absent series, never 0 or NaN") {
  Server server("--fixture " + fixture("xml/rtx4090-all-unknown-v13.xml"));
  Http http = server.get("/metrics");
  REQUIRE(http.status == 200);
  CHECK_FALSE(has(http.body, "nvsmi_gpu_temperature_celsius"));
  CHECK_FALSE(has(http.body, "nvsmi_gpu_utilization_ratio"));
  CHECK_FALSE(has(http.body, "nvsmi_gpu_power_draw_watts"));
  CHECK_FALSE(has(http.body, "NaN"));
  CHECK_THAT(http.body, Catch::Contains("nvsmi_gpu_info{gpu=\"0\""));
  CHECK_THAT(http.body, Catch::Contains("\nnvsmi_up 1\n"));
}

TEST_CASE("serve: the JSON API: typed snapshot, legacy document, history") {
  Server server("--interval 0.1 --fixture " + fixture("xml/h100-8gpu-v12.xml"));
  Http snapshot = server.get("/api/v1/snapshot");
  REQUIRE(snapshot.status == 200);
  CHECK_THAT(snapshot.headers, Catch::Contains("application/json"));
  auto typed = nlohmann::json::parse(snapshot.body);
  CHECK(typed["schema"] == "nvsmi-agent.snapshot/1");
  CHECK(typed["gpus"].size() == 8);
  CHECK(typed["gpus"][3]["temperature_c"] == 33);
  // A recording was not taken on this machine: no host, and nobody known to run its processes.
  CHECK(typed["host"].is_null());
  REQUIRE(typed["gpus"][3]["processes"].size() == 2);
  CHECK(typed["gpus"][3]["processes"][0]["user"].is_null());
  CHECK(typed["gpus"][3]["processes"][0]["container"].is_null());

  Http legacy = server.get("/api/v1/legacy");
  REQUIRE(legacy.status == 200);
  CHECK_THAT(legacy.body, Catch::StartsWith(R"({"temp":[{"data":["30","30C"],"name":0},)"));

  // Enough samples that the last 0.25 s holds fewer of them, below.
  wait_for(server, "/api/v1/history?seconds=60",
           [](const Http &h) { return samples_of(h).size() >= 20; });
  auto history = nlohmann::json::parse(server.get("/api/v1/history?seconds=60").body);
  CHECK(history["schema"] == "nvsmi-agent.history/1");
  CHECK(history["interval_seconds"] == 0.1);
  CHECK(history["history_seconds"] == 3600);
  REQUIRE(history["samples"].size() >= 3);
  double last = history["samples"].back()["received"];
  CHECK(history["samples"].back()["snapshot"]["gpus"].size() == 8);
  CHECK(history["samples"].back()["snapshot"]["host"].is_null());
  CHECK(history["samples"].back()["snapshot"]["gpus"][3]["processes"][1]["command"].is_null());
  // ?since= gives only what arrived later; ?seconds= only the last seconds.
  std::string since = "/api/v1/history?since=" + std::to_string(last + 1e-6);
  auto newer = nlohmann::json::parse(
      wait_for(server, since, [](const Http &h) { return !samples_of(h).empty(); }).body);
  CHECK(newer["samples"].size() >= 1);
  // No more than arrived after `last` by the time of a later look: how many that is depends on
  // how busy the machine is, not on a guess at it.
  nlohmann::json later = samples_of(server.get("/api/v1/history?seconds=60"));
  CHECK(newer["samples"].size() <=
        static_cast<std::size_t>(std::count_if(later.begin(), later.end(), [&](const auto &sample) {
          return sample["received"].template get<double>() > last;
        })));
  for (const auto &sample : newer["samples"])
    CHECK(sample["received"].get<double>() > last);
  auto recent = nlohmann::json::parse(server.get("/api/v1/history?seconds=0.25").body);
  CHECK(recent["samples"].size() < history["samples"].size());
  Http bad = server.get("/api/v1/history?seconds=soon");
  CHECK(bad.status == 400);
  CHECK_THAT(bad.body, Catch::Contains("seconds must be a number"));
}

TEST_CASE("serve and watch: a sample of the repeated hour gets the same UTC offset from both") {
  // Europe/Berlin's clocks went back from 03:00 CEST to 02:00 CET on 26 October 2025, so its
  // 02:00-02:59 came twice: a recording of 02:40 and then 02:10 is of the first pass and then the
  // second. Both commands take their samples from sampling/, which attaches the offset once.
  std::string xml = test::read_file(test::fixture_path("xml/gtx1080ti-2gpu-v10-nodoctype.xml"));
  auto at = [&xml](const std::string &wall) {
    std::string copy = xml;
    std::string stamp = "Thu Jan 10 08:00:01 2019";
    return copy.replace(copy.find(stamp), stamp.size(), wall);
  };
  std::string recording = test::temporary_folder() + "/repeated-hour.xml";
  test::write_file(recording, at("Sun Oct 26 02:40:00 2025") + at("Sun Oct 26 02:10:00 2025"));
  const std::vector<std::string> expected = {"2025-10-26T02:40:00+02:00",
                                             "2025-10-26T02:10:00+01:00"};

  test::Run watch = test::run_shell("TZ=Europe/Berlin " + quote(AGENT_BIN) +
                                    " watch --interval 0.05 --count 2 --format json --fixture " +
                                    quote(recording));
  REQUIRE(watch.exit_code == 0);
  std::vector<std::string> watched;
  for (const std::string &line : test::lines_of(watch.out))
    watched.push_back(nlohmann::json::parse(line)["timestamp"]);
  CHECK(watched == expected);

  Server server("--interval 0.05 --fixture " + quote(recording), "TZ=Europe/Berlin");
  nlohmann::json samples =
      samples_of(wait_for(server, "/api/v1/history?seconds=3600",
                          [](const Http &h) { return samples_of(h).size() >= 2; }));
  REQUIRE(samples.size() >= 2);
  std::vector<std::string> served = {samples[0]["snapshot"]["timestamp"],
                                     samples[1]["snapshot"]["timestamp"]};
  CHECK(served == expected);
}

TEST_CASE("serve: only GET and HEAD on the known paths, within limits") {
  Server server("--fixture " + fixture("xml/a100-mig-v12.xml"));
  Http post = server.get("/metrics", "-X POST");
  CHECK(post.status == 405);
  CHECK_THAT(post.headers, Catch::Contains("Allow: GET, HEAD"));
  CHECK(server.get("/nope").status == 404);
  CHECK(server.get("/../../etc/passwd", "--path-as-is").status == 404);
  CHECK(server.get("/api/v1/snapshot/../../../etc/passwd", "--path-as-is").status == 404);
  Http get = server.get("/api/v1/snapshot");
  Http head = server.get("/api/v1/snapshot", "-I");
  CHECK(head.status == 200);
  CHECK_FALSE(has(head.body, "schema")); // curl -I writes the headers there, and no body follows
  CHECK_THAT(head.headers, Catch::Contains("Content-Length: " + std::to_string(get.body.size())));
  Http huge_header = server.get("/metrics", "-H 'X-Big: " + std::string(10000, 'a') + "'");
  CHECK(huge_header.status == 431);
  std::string upload = test::temporary_folder() + "/upload";
  test::write_file(upload, std::string(2000, 'a'));
  Http body = server.get("/metrics", "-X GET --data-binary @" + quote(upload));
  CHECK(body.status == 413);
  CHECK(server.get("/metrics").status == 200); // still serving
}

TEST_CASE("serve: stale data is never served as fresh") {
  SECTION("nvidia-smi hangs after 25 samples") {
    // Fresh for 25 samples (5 s), long enough to be seen by a poll on a busy machine.
    Server server("--interval 0.2 --stall-timeout 60 --nvidia-smi " + fake_nvidia_smi(),
                  "FAKE_NVSMI_HANG_AFTER=25");
    Http fresh =
        wait_for(server, "/metrics", [](const Http &h) { return has(h.body, "\nnvsmi_up 1\n"); });
    CHECK_THAT(fresh.body, Catch::Contains("nvsmi_gpu_temperature_celsius"));
    Http stale =
        wait_for(server, "/metrics", [](const Http &h) { return has(h.body, "\nnvsmi_up 0\n"); });
    CHECK_THAT(stale.body, Catch::Contains("\nnvsmi_up 0\n"));
    CHECK_FALSE(has(stale.body, "nvsmi_gpu_"));
    CHECK_THAT(stale.body, Catch::Contains("nvsmi_last_sample_timestamp_seconds "));
    Http snapshot = server.get("/api/v1/snapshot");
    CHECK(snapshot.status == 503);
    CHECK_THAT(nlohmann::json::parse(snapshot.body)["error"].get<std::string>(),
               Catch::StartsWith("no sample for "));
    CHECK(server.get("/api/v1/legacy").status == 503);
    CHECK(server.get("/api/v1/history").status == 503);
    CHECK(server.stop() == 0);
  }
  SECTION("nvidia-smi fails from the start") {
    Server server("--interval 0.2 --nvidia-smi " + fake_nvidia_smi(), "FAKE_NVSMI_MODE=exit9");
    Http metrics = wait_for(server, "/metrics", [](const Http &h) {
      return has(h.body, R"(nvsmi_sample_errors_total{cause="child_exit"} 1)");
    });
    CHECK_THAT(metrics.body, Catch::Contains("\nnvsmi_up 0\n"));
    CHECK_FALSE(has(metrics.body, "nvsmi_last_sample_timestamp_seconds"));
    Http snapshot = server.get("/api/v1/snapshot");
    CHECK(snapshot.status == 503);
    CHECK_THAT(snapshot.headers, Catch::Contains("Retry-After: 1"));
    CHECK_THAT(snapshot.body, Catch::Contains("no sample yet; last problem: "));
  }
  CHECK_FALSE(fake_left());
}

// Runs tests/serve_abuse.py against `server` and returns what it saw.
nlohmann::json abuse(const Server &server, const std::string &arguments) {
  test::Run run = test::run_shell("python3 " + quote(std::string(TESTS_DIR) + "/serve_abuse.py") +
                                  " " + std::to_string(server.port()) + " " + arguments);
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  return nlohmann::json::parse(run.out);
}

TEST_CASE("serve: many clients at once, and slow ones, do not stop it answering") {
  Server server("--request-timeout 1 --fixture " + fixture("xml/h100-8gpu-v12.xml"));
  SECTION("1000 concurrent connections") {
    auto seen = abuse(server, "many 1000");
    CHECK(seen["ok"] == 1000);
    CHECK(seen["after"] == 200);
  }
  SECTION("500 slow-loris connections are cut at the request timeout") {
    auto seen = abuse(server, "loris 500 60"); // waits at most 60 s for them to be cut
    CHECK(seen["status"] == 200);
    CHECK(seen["closed"] == 500);
  }
}

TEST_CASE("serve: clients that ask for fine series and never read hold at most 32 MiB") {
  Server server("--interval 0.01 --fixture " + fixture("xml/h100-8gpu-v12.xml"));
  // History enough that each answer is hundreds of KiB: in issue 23, 500 such clients held
  // 298 MiB, past the unit's MemoryMax.
  REQUIRE(test::wait_until([&] {
    std::string metrics = server.get("/metrics").body;
    std::size_t at = metrics.find("\nnvsmi_history_samples ");
    return at != std::string::npos && std::stod(metrics.substr(at + 23)) >= 1000;
  }));
  auto seen = abuse(server, "stall 300 '/api/v1/series?seconds=30&points=2000'");
  INFO(seen.dump());
  // Where the kernel takes each body whole (loopback's buffers grow to MiBs), nothing waits and
  // all are 200; elsewhere the bodies that wait stay under the bound and the rest are 503.
  REQUIRE(seen["pending"].is_number());
  CHECK(seen["pending"].get<double>() <= 32 << 20);
  CHECK(seen["statuses"].value("200", 0) > 0);
  CHECK(seen["statuses"].value("200", 0) + seen["statuses"].value("503", 0) == 300);
  CHECK(server.get("/metrics").status == 200);
  CHECK(server.stop() == 0);
}

TEST_CASE("serve: past --max-connections the connection idle longest goes for a new client") {
  // The five idle ones are still held when the sixth comes, however slow the machine is to get
  // to it: their request timeout is long.
  Server server("--max-connections 5 --request-timeout 120 --fixture " +
                fixture("xml/a100-mig-v12.xml"));
  auto seen = abuse(server, "cap 5 60"); // five idle, then requests until one is answered
  CHECK(seen["while_held"] == 200);      // was refused: five idle clients held every slot
  CHECK(seen["after"] == 200);
  CHECK_THAT(server.log(), Catch::Contains("all 5 connections in use: closed the one idle longest "
                                           "for a new client (--max-connections)"));
}

TEST_CASE("serve: SIGTERM stops nvidia-smi and the server, exit 0") {
  Server server("--interval 0.1 --nvidia-smi " + fake_nvidia_smi());
  wait_for(server, "/metrics", [](const Http &h) { return has(h.body, "\nnvsmi_up 1\n"); });
  CHECK(test::running_here(test::fake_nvidia_smi_process));
  test::Run taken = test::run_agent("serve --listen 127.0.0.1:" + std::to_string(server.port()) +
                                    " --fixture " + fixture("xml/a100-mig-v12.xml"));
  CHECK(taken.exit_code == 7);
  CHECK_THAT(taken.err, Catch::Contains("cannot listen on 127.0.0.1:"));
  CHECK(server.stop() == 0);
  CHECK_FALSE(fake_left());
  CHECK(test::run_agent("serve --listen nowhere").exit_code == 2);
}

TEST_CASE("serve: nvidia-smi missing or not executable at the start is exit 3, not a retry loop") {
  std::string folder = test::temporary_folder();
  test::write_file(folder + "/nvidia-smi", "#!/bin/sh\n");
  for (const std::string &path : {std::string("/nonexistent/nvidia-smi"), folder + "/nvidia-smi"}) {
    test::Run run = test::run_shell("timeout 30 " + quote(AGENT_BIN) +
                                    " serve --listen 127.0.0.1:0 --nvidia-smi " + quote(path));
    INFO(run.err);
    CHECK(run.exit_code == 3);
    CHECK_THAT(run.err, Catch::Contains("nvsmi-agent: cannot run " + path + ": "));
  }
}

TEST_CASE("serve: the 503 names nvidia-smi's own message as the last problem, xml or csv") {
  for (const char *source : {"xml", "csv"}) {
    INFO(source);
    Server server(std::string("--interval 0.2 --source ") + source + " --nvidia-smi " +
                      fake_nvidia_smi(),
                  "FAKE_NVSMI_MODE=exit9");
    Http snapshot = wait_for(server, "/api/v1/snapshot", [](const Http &h) {
      return h.status == 503 && has(h.body, "exited with code 9");
    });
    INFO(server.log());
    CHECK(snapshot.status == 503);
    CHECK_THAT(nlohmann::json::parse(snapshot.body)["error"].get<std::string>(),
               Catch::Contains("; last problem: nvidia-smi exited with code 9: NVIDIA-SMI has "
                               "failed because it couldn't communicate with the NVIDIA driver."));
    // Still so while it waits to restart nvidia-smi: that is no problem of its own.
    REQUIRE(test::wait_until([&] { return has(server.log(), "restarting nvidia-smi in 2 s"); }));
    CHECK_THAT(server.get("/api/v1/snapshot").body, Catch::Contains("NVIDIA-SMI has failed"));
    CHECK(server.stop() == 0);
  }
}

TEST_CASE("serve: SIGHUP takes nvidia-smi's process group down, exit 129") {
  std::string marker = test::unique_marker();
  Server server("--interval 0.1 --nvidia-smi " + fake_nvidia_smi(), "FAKE_NVSMI_MARKER=" + marker);
  wait_for(server, "/metrics", [](const Http &h) { return has(h.body, "\nnvsmi_up 1\n"); });
  REQUIRE_FALSE(test::processes_named(marker).empty());
  ::kill(server.pid(), SIGHUP);
  CHECK(test::wait_until([&] { return test::process_ended(server.pid()); }));
  CHECK(test::wait_until([&] { return test::processes_named(marker).empty(); }));
  CHECK_THAT(server.log(), Catch::Contains("stopping on Hangup"));
  CHECK(server.stop() == 129);
}

TEST_CASE("serve: a GPU whose XML readings say [GPU is lost] is nvsmi_gpu_lost 1, state lost") {
  // GPU 4's ECC counts alone say it: the readings the XML reader looked at for it before did not.
  std::string xml = test::temporary_folder() + "/lost-ecc.xml";
  test::write_file(
      xml, test::with_lost_readings(test::read_file(test::fixture_path("xml/h100-8gpu-v12.xml")), 4,
                                    "ecc_errors"));
  Server server("--interval 0.2 --fixture " + quote(xml));
  Http metrics = wait_for(server, "/metrics", [](const Http &h) { return h.status == 200; });
  CHECK(has(metrics.body, "\nnvsmi_gpu_lost{gpu=\"4\",pci_bus_id=\"00000000:59:00.0\"} 1\n"));
  CHECK(has(metrics.body, "\nnvsmi_gpu_lost{gpu=\"3\",pci_bus_id=\"00000000:49:00.0\"} 0\n"));
  CHECK(has(metrics.body, "state=\"lost\"} 1\n"));
  CHECK(server.stop() == 0);
}

TEST_CASE("serve: nvidia-smi replaced right after the GPU query started: processes retried") {
  // Issue 23, item 16: a process stream's first start that fails is no reason to stop serving.
  std::string folder = test::temporary_folder();
  std::string wrapper = test::nvidia_smi_upgraded_after_start(folder);
  // --pmon on: pmon's start fails and is retried too, without waiting for a process.
  Server server("--interval 0.2 --pmon on --nvidia-smi " + quote(wrapper),
                test::upgraded_nvidia_smi_environment(folder));
  auto retried = [&] {
    return has(server.log(), "restarting nvidia-smi --query-compute-apps in 2 s") &&
           has(server.log(), "restarting nvidia-smi pmon in 2 s");
  };
  test::wait_until([&] { return retried() || test::process_ended(server.pid()); });
  INFO(server.log());
  REQUIRE_FALSE(test::process_ended(server.pid())); // was exit 3
  REQUIRE(retried());
  CHECK(has(server.log(), "cannot run " + wrapper + ": Permission denied"));
  // Fresh GPU samples meanwhile, without processes.
  auto processes_of_gpu0 = [](const Http &h) {
    auto json = nlohmann::json::parse(h.body, nullptr, false);
    return h.status == 200 && json.is_object() ? json["gpus"][0]["processes"] : nlohmann::json();
  };
  Http snapshot =
      wait_for(server, "/api/v1/snapshot", [](const Http &h) { return h.status == 200; });
  CHECK(processes_of_gpu0(snapshot).is_null());
  CHECK(has(server.get("/metrics").body, "\nnvsmi_up 1\n"));
  // nvidia-smi works again: the processes come back.
  REQUIRE(test::run_shell("chmod +x " + quote(wrapper)).exit_code == 0);
  snapshot = wait_for(server, "/api/v1/snapshot", [&](const Http &h) {
    nlohmann::json processes = processes_of_gpu0(h);
    return processes.is_array() && processes.size() == 1 && processes[0]["pid"] == ::getpid();
  });
  CHECK(processes_of_gpu0(snapshot).size() == 1);
  CHECK(has(server.get("/metrics").body, "\nnvsmi_up 1\n"));
  CHECK(server.stop() == 0);
  CHECK_FALSE(fake_left());
}

// Issue 39, item 1: the first sample served had no process lists, so the free GPUs said "idle".
TEST_CASE("serve: the first sample it answers with already lists the processes") {
  std::string folder = test::temporary_folder();
  test::write_file(folder + "/processes", "1 " + std::to_string(::getpid()) + " 30000 python3\n");
  Server server("--interval 1 --nvidia-smi " + fake_nvidia_smi(),
                "FAKE_NVSMI_MODE=demo FAKE_NVSMI_DEMO_PROCESSES=" + quote(folder + "/processes"));
  // The first /metrics with readings: GPU 0, which has no process, is free, and no GPU is "idle"
  // (under the threshold, who holds it unknown).
  Http metrics =
      wait_for(server, "/metrics", [](const Http &h) { return has(h.body, "\nnvsmi_up 1\n"); });
  CHECK(has(metrics.body, R"(nvsmi_gpu_state{gpu="0",)"));
  for (const std::string &line : test::lines_of(metrics.body)) {
    if (line.rfind("nvsmi_gpu_state{", 0) != 0 || line.substr(line.size() - 2) != " 1")
      continue;
    INFO(line);
    CHECK_FALSE(has(line, R"(state="idle")"));
    if (has(line, R"(gpu="0",)"))
      CHECK(has(line, R"(state="free")"));
  }
  Http snapshot = server.get("/api/v1/snapshot");
  REQUIRE(snapshot.status == 200);
  nlohmann::json sample = nlohmann::json::parse(snapshot.body);
  CHECK_FALSE(sample.contains("processes_unknown_reason"));
  for (const nlohmann::json &gpu : sample["gpus"]) {
    INFO("GPU " << gpu["index"]);
    REQUIRE(gpu["processes"].is_array());
    CHECK(gpu["processes"].size() == (gpu["index"] == 1 ? 1u : 0u));
  }
  CHECK(server.stop() == 0);
  CHECK_FALSE(fake_left());
}

} // namespace test_serve
