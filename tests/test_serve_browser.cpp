// The dashboard loaded in headless Chromium from a serve on the 8-GPU states fixture: a row at a
// glance per GPU with its state, the processes with their users, charts with clock times, no
// sideways scrolling at 400 px, and the outage banner with the history kept. Screenshots are
// kept as test artifacts (BUILD/artifacts/dashboard.png and dashboard-phone.png).
#include "process_support.hpp"
#include "serve_support.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <map>
#include <regex>
#include <sys/stat.h>

using test::quote;
using json = nlohmann::json;

namespace {

const std::string fake = quote(SCRIPTS_DIR "/fake-nvidia-smi");
const std::string states_fixture = "xml/h100-8gpu-states-v12.xml";

std::string chromium(const std::string &arguments) {
  test::Run run = test::chromium(arguments);
  INFO(run.err);
  CHECK(run.exit_code == 0);
  return run.out;
}

// The page after its first requests are drawn: virtual time waits for them.
std::string dom(const test::Server &server, const std::string &size = "1400,1000") {
  return chromium("--virtual-time-budget=5000 --window-size=" + size + " --dump-dom " +
                  quote(server.url()));
}

std::vector<std::smatch> matches(const std::string &text, const std::string &pattern) {
  std::regex expression(pattern);
  return {std::sregex_iterator(text.begin(), text.end(), expression), std::sregex_iterator()};
}

// The at-a-glance rows: GPU index to its state key.
std::map<int, std::string> glance_states(const std::string &page) {
  std::map<int, std::string> states;
  for (const std::smatch &row :
       matches(page, R"re(<div class="glance-row" data-gpu="(\d+)" data-state="([a-z_]+)">)re"))
    states[std::stoi(row[1])] = row[2];
  return states;
}

int attribute(const std::string &page, const std::string &name) {
  auto found = matches(page, "data-" + name + "=\"(\\d+)\"");
  return found.empty() ? -1 : std::stoi(found.front()[1]);
}

void screenshot(const test::Server &server, const std::string &size, const std::string &name) {
  std::string png = std::string(ARTIFACTS_DIR) + "/" + name;
  test::run_shell("mkdir -p " + quote(ARTIFACTS_DIR) + " && rm -f " + quote(png));
  chromium("--virtual-time-budget=5000 --window-size=" + size + " --screenshot=" + quote(png) +
           " " + quote(server.url()));
  struct stat info {};
  REQUIRE(::stat(png.c_str(), &info) == 0);
  CHECK(info.st_size > 20000);
}

json series(const test::Server &server) {
  return json::parse(server.get("/api/v1/series").body, nullptr, false);
}

std::string hostname() {
  std::string name = test::run_shell("hostname").out;
  return name.substr(0, name.find('\n'));
}

} // namespace

TEST_CASE("serve: the dashboard shows each GPU's state, who holds it and clock-time charts") {
  if (!test::installed("chromium")) {
    WARN("chromium is not installed (scripts/install-deps installs it): not rendered");
    return;
  }
  // The fixture's processes made real, so that /proc gives their users: GPU 2 and 6 root's,
  // GPU 3 (idle but held) nobody's.
  test::Background hot("exec sleep 300"), trainer("exec sleep 300");
  test::Background held_a("exec setpriv --reuid=nobody --regid=nogroup --clear-groups sleep 300");
  test::Background held_b("exec setpriv --reuid=nobody --regid=nogroup --clear-groups sleep 300");
  std::string xml = test::read_file(test::fixture_path(states_fixture));
  for (const auto &[recorded, real] :
       std::vector<std::pair<std::string, int>>{{"4242", hot.pid()},
                                                {"5001", held_a.pid()},
                                                {"5002", held_b.pid()},
                                                {"6006", trainer.pid()}}) {
    std::string tag = "<pid>" + recorded + "</pid>";
    REQUIRE(xml.find(tag) != std::string::npos);
    xml.replace(xml.find(tag), tag.size(), "<pid>" + std::to_string(real) + "</pid>");
  }
  std::string copy = test::temporary_folder() + "/states.xml";
  test::write_file(copy, xml);
  test::Server server("--interval 0.2 --source xml --nvidia-smi " + fake,
                      "FAKE_NVSMI_XML=" + quote(copy));
  // Some history to draw, and the processes' users known.
  REQUIRE(test::wait_until([&] {
    json answer = series(server);
    return answer.is_object() && answer["times"].size() >= 5 &&
           answer["latest"]["gpus"][3]["processes"][0]["user"] == "nobody";
  }));

  std::string page = dom(server);
  CHECK_THAT(page, Catch::Contains("data-state=\"ok\""));
  CHECK_THAT(page, Catch::Contains("<title>" + hostname() + " \xc2\xb7 nvsmi-agent</title>"));
  CHECK_THAT(page, Catch::Contains("<h1 id=\"host\">" + hostname() + "</h1>"));
  CHECK(glance_states(page) == std::map<int, std::string>{{0, "free"},
                                                          {1, "in_use"},
                                                          {2, "hot"},
                                                          {3, "idle_but_held"},
                                                          {4, "free"},
                                                          {5, "at_power_limit"},
                                                          {6, "in_use"},
                                                          {7, "free"}});
  CHECK_THAT(page, Catch::Contains("<span class=\"state idle_but_held\">idle but held</span>"));
  CHECK_THAT(page, Catch::Contains("<span class=\"state at_power_limit\">at power limit</span>"));
  CHECK_THAT(page, Catch::Contains("89 \xc2\xb0"
                                   "C"));
  CHECK_THAT(page, Catch::Contains("<div class=\"c-users\">nobody</div>"));
  // The processes table: a row per process, with its user.
  auto processes = matches(
      page, R"re(<tr data-gpu="(\d)"><td class="num">\d</td><td class="user">([^<]*)</td>)re");
  REQUIRE(processes.size() == 4);
  CHECK(processes[0][1] == "2");
  CHECK(processes[0][2] == "root");
  CHECK(processes[1][2] == "nobody");
  CHECK(processes[2][2] == "nobody");
  CHECK(processes[3][1] == "6");
  // Charts with clock times on the time axis and units on the value axis, the host's too.
  for (const char *chart : {"gpu-utilization_percent", "gpu-memory_used_mib", "gpu-power_draw_w",
                            "gpu-temperature_c", "host-cpu_percent", "host-memory_used_mib"}) {
    INFO(chart);
    auto drawn = matches(page, "data-chart=\"" + std::string(chart) + "\" data-points=\"(\\d+)\"");
    REQUIRE(drawn.size() == 1);
    CHECK(std::stoi(drawn[0][1]) >= 2);
  }
  CHECK(matches(page, R"re(dygraph-axis-label-x">\d\d:\d\d(:\d\d(\.\d)?)?<)re").size() >= 2);
  CHECK(matches(page, R"re(dygraph-axis-label-y">\d+ %<)re").size() >= 2);
  CHECK(matches(page, R"re(dygraph-axis-label-y">\d+ W<)re").size() >= 2);
  CHECK(matches(page, "dygraph-axis-label-y\">\\d+ \xc2\xb0"
                      "C<")
            .size() >= 2);
  CHECK_THAT(page, Catch::Contains("limit GPU 0,1,2,3,4,5,6,7"));
  screenshot(server, "1400,1000", "dashboard.png");

  // At 400 px: no sideways scrolling of the page, the rows still all there.
  std::string phone = dom(server, "400,900");
  CHECK(glance_states(phone).size() == 8);
  int scroll = attribute(phone, "scroll-width"), client = attribute(phone, "client-width");
  CHECK(client > 0);
  CHECK(scroll <= client);
  screenshot(server, "400,900", "dashboard-phone.png");
}

TEST_CASE("serve: the dashboard keeps the history under the banner when sampling stops") {
  if (!test::installed("chromium")) {
    WARN("chromium is not installed: not rendered");
    return;
  }
  // Ten samples, then a stand-in that answers no more (and is not restarted for 60 s).
  test::Server server("--interval 0.2 --stall-timeout 60 --source xml --nvidia-smi " + fake,
                      "FAKE_NVSMI_HANG_AFTER=10 FAKE_NVSMI_XML=" +
                          quote(test::fixture_path(states_fixture)));
  REQUIRE(test::wait_until([&] {
    json answer = series(server);
    return answer.is_object() && answer["fresh"] == false;
  }));
  // A page loaded during the outage (a reload) still draws the history.
  std::string page = dom(server);
  CHECK_THAT(page, Catch::Contains("data-state=\"error\""));
  CHECK_THAT(page, Catch::Contains("Cannot sample the GPUs: no sample for "));
  auto states = glance_states(page);
  CHECK(states.size() == 8);
  for (const auto &[gpu, state] : states)
    CHECK(state == "stale");
  auto drawn = matches(page, "data-chart=\"gpu-utilization_percent\" data-points=\"(\\d+)\"");
  REQUIRE(drawn.size() == 1);
  CHECK(std::stoi(drawn[0][1]) >= 1);
  CHECK(matches(page, R"re(dygraph-axis-label-x">\d\d:\d\d(:\d\d(\.\d)?)?<)re").size() >= 1);
}

TEST_CASE("serve: the dashboard says so when the agent has no sample yet") {
  if (!test::installed("chromium")) {
    WARN("chromium is not installed: not rendered");
    return;
  }
  test::Server server("--interval 0.2 --nvidia-smi " + fake, "FAKE_NVSMI_MODE=exit9");
  std::string page = dom(server);
  CHECK_THAT(page, Catch::Contains("data-state=\"error\""));
  CHECK_THAT(page, Catch::Contains("Cannot sample the GPUs: no sample yet"));
}
