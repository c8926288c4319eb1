// The dashboard loaded in headless Chromium from a serve on the 8-GPU states fixture: the agent's
// summary line, a row at a glance per GPU with its state and why, temperature and power coloured
// by the thresholds, the processes in a table sorted by a click or a key, small multiples with
// the threshold lines and one time format, no sideways scrolling at 400 px, hostile names shown
// as text, and the outage banner with the history kept and greyed. Screenshots are kept as test
// artifacts (BUILD/artifacts/dashboard.png and dashboard-phone.png).
#include "process_support.hpp"
#include "serve_support.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cmath>
#include <map>
#include <regex>
#include <set>
#include <sys/stat.h>

namespace test_serve_browser {

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
       matches(page,
               R"re(<div class="glance-row( stale)?" data-gpu="(\d+)" data-state="([a-z_]+)">)re"))
    states[std::stoi(row[2])] = row[3];
  return states;
}

// The processes table's rows, top to bottom: the GPU, pid and user of each.
struct ProcessRow {
  int gpu;
  int pid;
  std::string user;
  bool operator==(const ProcessRow &other) const {
    return gpu == other.gpu && pid == other.pid && user == other.user;
  }
};
std::vector<ProcessRow> process_rows(const std::string &page) {
  std::vector<ProcessRow> rows;
  for (const std::smatch &row :
       matches(page, R"re(<tr data-gpu="(\d)"><td class="num gpu">\d</td>)re"
                     R"re(<td class="num pid">(\d+)</td><td class="user">([^<]*)</td>)re"))
    rows.push_back({std::stoi(row[1]), std::stoi(row[2]), row[3]});
  return rows;
}

std::vector<int> gpus_of(const std::vector<ProcessRow> &rows) {
  std::vector<int> gpus;
  for (const ProcessRow &row : rows)
    gpus.push_back(row.gpu);
  return gpus;
}

// The page's DOM at load and after each of `steps`, done in Chromium as a person would
// (tests/browser_actions.py); an eval: step's answer is its value as JSON.
std::vector<std::string> act(const test::Server &server, const std::string &ready,
                             const std::vector<std::string> &steps,
                             const std::string &size = "1400x1000") {
  try {
    return test::browser_steps(server.url(), size, ready, steps);
  } catch (const std::runtime_error &problem) {
    FAIL(problem.what());
  }
  return {};
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

// "#0072b2" as the browser computes a colour: "rgb(0, 114, 178)".
std::string rgb(const std::string &hex) {
  REQUIRE(std::regex_match(hex, std::regex("#[0-9a-f]{6}")));
  std::string text = "rgb(";
  for (int i = 0; i < 3; ++i)
    text += (i ? ", " : "") + std::to_string(std::stoi(hex.substr(1 + 2 * i, 2), nullptr, 16));
  return text + ")";
}

// How far apart two computed colours ("rgb(r, g, b)") are, in RGB's 0-255 cube.
double rgb_distance(const std::string &a, const std::string &b) {
  auto parts = [](const std::string &css) {
    std::vector<double> values;
    for (const std::smatch &part : matches(css, R"re(\d+)re"))
      values.push_back(std::stod(part[0]));
    REQUIRE(values.size() == 3);
    return values;
  };
  std::vector<double> x = parts(a), y = parts(b);
  return std::sqrt(std::pow(x[0] - y[0], 2) + std::pow(x[1] - y[1], 2) + std::pow(x[2] - y[2], 2));
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
  // GPU 3 (idle but held) nobody's. GPU 6's has markup and an escape sequence on its command line.
  test::Background hot("exec sleep 300");
  test::Background trainer("exec python3 -c 'import time; time.sleep(300)' '<b>bold</b>' "
                           "\"$(printf '\\033[2Jgone')\"");
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
  test::Server server("--interval 0.2 --expose command-lines --source xml --nvidia-smi " + fake,
                      "FAKE_NVSMI_XML=" + quote(copy));
  // Some history to draw, and the processes' users known.
  REQUIRE(test::wait_until([&] {
    json answer = series(server);
    return answer.is_object() && answer["times"].size() >= 15 &&
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
  // The agent's one summary line first, its holders by the agent's exposure rule (loopback).
  CHECK_THAT(page, Catch::Contains("<p id=\"summary\" aria-live=\"polite\">8 GPUs: 3 free \xc2\xb7 "
                                   "2 in use \xc2\xb7 1 idle but held (nobody) \xc2\xb7 1 at power "
                                   "limit \xc2\xb7 1 hot</p>"));
  // Why a GPU is hot or at its limit, as text in its row; its temperature and power coloured.
  CHECK_THAT(page, Catch::Contains("<div class=\"reason hot\">89 \xc2\xb0"
                                   "C, hot from 85 \xc2\xb0"
                                   "C</div>"));
  CHECK(
      matches(page, R"re(<div class="reason at_power_limit">\d+ of 700 W limit</div>)re").size() ==
      1);
  CHECK_THAT(page, Catch::Contains("<div class=\"c-temp hot\">89 \xc2\xb0"
                                   "C</div>"));
  CHECK(matches(page, R"re(<div class="c-power at_power_limit">\d+ / 700 W</div>)re").size() == 1);
  CHECK(matches(page, "<div class=\"c-temp[ a-z_]*\">\\d+ \xc2\xb0"
                      "C</div>")
            .size() == 8);
  CHECK(matches(page, R"re(<div class="c-temp (hot|too_hot)">)re").size() == 1);
  CHECK_THAT(page, Catch::Contains("<div class=\"c-users\">nobody</div>"));
  // The processes table: a row per process with its pid and user, by GPU then pid at first.
  auto processes = process_rows(page);
  REQUIRE(processes.size() == 4);
  CHECK(processes[0] == ProcessRow{2, hot.pid(), "root"});
  CHECK(processes[1].user == "nobody");
  CHECK(processes[2].user == "nobody");
  CHECK(processes[3] == ProcessRow{6, trainer.pid(), "root"});
  for (const char *column :
       {"GPU", "pid", "user", "command", "GPU memory", "SM", "CPU", "host memory", "container"})
    CHECK_THAT(page, Catch::Contains(">" + std::string(column) + "</button></th>"));
  CHECK(matches(page, R"re(<td class="num gpu_memory">\d+\.\d GiB</td>)re").size() == 4);
  CHECK(matches(page, R"re(<td class="num host_memory">\d+\.\d GiB</td>)re").size() == 4);
  // No pmon here: SM unknown, shown as a dash, never 0.
  CHECK(matches(page, "<td class=\"num sm\">\xe2\x80\x94</td>").size() == 4);
  // A command line with markup and an escape byte is text: no element made, no byte let through.
  CHECK_THAT(page, Catch::Contains("&lt;b&gt;bold&lt;/b&gt; \xef\xbf\xbd[2Jgone"));
  CHECK(page.find('\x1b') == std::string::npos);
  // Small multiples for eight GPUs: a small chart per reading per GPU, each with its points; the
  // threshold lines drawn on the temperature and power charts.
  for (const char *chart : {"gpu-utilization_percent", "gpu-memory_used_mib", "gpu-power_draw_w",
                            "gpu-temperature_c"}) {
    INFO(chart);
    auto drawn = matches(page, "data-chart=\"" + std::string(chart) +
                                   "\" data-gpu=\"(\\d)\" data-points=\"(\\d+)\"");
    REQUIRE(drawn.size() == 8);
    for (const std::smatch &small : drawn)
      CHECK(std::stoi(small[2]) >= 2);
  }
  CHECK(matches(page, "data-chart=\"gpu-temperature_c\" data-gpu=\"\\d\" data-points=\"\\d+\" "
                      "data-lines=\"90 \xc2\xb0"
                      "C,hot 85 \xc2\xb0"
                      "C\"")
            .size() == 8);
  CHECK(matches(page, "data-chart=\"gpu-power_draw_w\" data-gpu=\"\\d\" data-points=\"\\d+\" "
                      "data-lines=\"95 % of 700 W\"")
            .size() == 8);
  for (const char *chart :
       {"host-cpu_percent", "host-memory_used_mib", "host-disk", "host-network"}) {
    INFO(chart);
    auto drawn = matches(page, "data-chart=\"" + std::string(chart) + "\" data-points=\"(\\d+)\"");
    REQUIRE(drawn.size() == 1);
    CHECK(std::stoi(drawn[0][1]) >= 2);
  }
  // One time format, 24-hour HH:MM:SS, in the header and on the time axis.
  CHECK(matches(page, R"re(last sample \d\d:\d\d:\d\d )re").size() == 1);
  CHECK(matches(page, R"re(dygraph-axis-label-x">\d\d:\d\d:\d\d<)re").size() >= 2);
  CHECK(matches(page, R"re(dygraph-axis-label-x">[^<]*[^\d:<][^<]*<)re").empty());
  CHECK(matches(page, R"re(\d(AM|PM|am|pm)\b| (AM|PM)\b)re").empty());
  CHECK(matches(page, R"re(dygraph-axis-label-y">\d+ %<)re").size() >= 2);
  CHECK(matches(page, R"re(dygraph-axis-label-y">\d+ W<)re").size() >= 2);
  CHECK(matches(page, "dygraph-axis-label-y\">\\d+ \xc2\xb0"
                      "C<")
            .size() >= 2);
  screenshot(server, "1400,1000", "dashboard.png");

  // At 400 px: no sideways scrolling of the page, the rows still all there.
  std::string phone = dom(server, "400,900");
  CHECK(glance_states(phone).size() == 8);
  int scroll = attribute(phone, "scroll-width"), client = attribute(phone, "client-width");
  CHECK(client > 0);
  CHECK(scroll <= client);
  screenshot(server, "400,900", "dashboard-phone.png");

  // Sorting: a click on a header sorts by its column (numbers largest first), Enter on the
  // focused header the other way; unknown values stay last.
  auto pages = act(server, "document.querySelectorAll('#processes tbody tr').length === 4",
                   {"click:th[data-key=\"gpu_memory\"] button",
                    "key:th[data-key=\"gpu_memory\"] button:Enter",
                    // The keyboard's focus stays on the header it pressed.
                    "wait:document.activeElement === "
                    "document.querySelector('th[data-key=\"gpu_memory\"] button')",
                    "click:th[data-key=\"user\"] button",
                    // The markup of the command line is its text: no element made of it.
                    "wait:document.querySelectorAll('#processes td.command b').length === 0 && "
                    "[...document.querySelectorAll('#processes td.command')].some("
                    "(td) => td.textContent.includes('<b>bold</b> \\ufffd[2Jgone'))"});
  CHECK(gpus_of(process_rows(pages[0])) == std::vector<int>{2, 3, 3, 6});
  CHECK(gpus_of(process_rows(pages[1])) == std::vector<int>{6, 3, 2, 3});
  CHECK_THAT(pages[1], Catch::Contains("<th class=\"num\" data-key=\"gpu_memory\" "
                                       "aria-sort=\"descending\">"));
  CHECK(gpus_of(process_rows(pages[2])) == std::vector<int>{3, 2, 3, 6});
  CHECK_THAT(pages[2], Catch::Contains("<th class=\"num\" data-key=\"gpu_memory\" "
                                       "aria-sort=\"ascending\">"));
  std::vector<std::string> users;
  for (const ProcessRow &row : process_rows(pages[4]))
    users.push_back(row.user);
  CHECK(users == std::vector<std::string>{"nobody", "nobody", "root", "root"});
}

TEST_CASE("serve: the dashboard colours each state as every screen does, and a full memory red") {
  if (!test::installed("chromium")) {
    WARN("chromium is not installed: not rendered");
    return;
  }
  // GPU 3 of the states fixture uses 81000 of 81559 MiB (99 %), GPU 6 65536 (80 %).
  test::Server server("--interval 1 --fixture " + quote(test::fixture_path(states_fixture)));
  REQUIRE(test::wait_until([&] { return series(server).is_object(); }));
  auto pages = act(
      server,
      "document.querySelectorAll('#glance .glance-row[data-gpu]').length === 8 && "
      "document.body.dataset.state === 'ok'",
      {"eval:(() => {"
       "  const rows = [...document.querySelectorAll('#glance .glance-row[data-gpu]')];"
       "  const colour = (e, property) => getComputedStyle(e)[property];"
       "  return rows.map((row) => [row.dataset.state,"
       "                            colour(row.querySelector('.state'), 'backgroundColor'),"
       "                            row.querySelector('.c-mem').classList.contains('full'),"
       "                            colour(row.querySelector('.c-mem .fill'), 'backgroundColor')]);"
       "})()"});
  json rows = json::parse(pages[1]);
  INFO(rows.dump());
  REQUIRE(rows.size() == 8);
  // The team's palette, the terminal's tones: free green, in use cyan (teal), idle but held
  // amber, the alarms red.
  const std::map<std::string, std::string> family = {{"free", "green"},
                                                     {"in_use", "cyan"},
                                                     {"idle_but_held", "amber"},
                                                     {"hot", "red"},
                                                     {"at_power_limit", "red"}};
  for (const json &row : rows) {
    INFO(row.dump());
    CHECK(test::colour_family(row[1]) == family.at(row[0]));
  }
  // Memory at or over the agent's memory_full_fraction (95 %): GPU 3's bar red, no other.
  for (std::size_t gpu = 0; gpu < rows.size(); ++gpu) {
    INFO("GPU " << gpu << ": " << rows[gpu].dump());
    CHECK(rows[gpu][2] == (gpu == 3));
    CHECK((test::colour_family(rows[gpu][3]) == "red") == (gpu == 3));
  }
}

TEST_CASE("serve: the dashboard gives eight GPUs eight colours, samples of their lines in its "
          "legends, and a click on a GPU hides it in every chart and a second shows it") {
  if (!test::installed("chromium")) {
    WARN("chromium is not installed: not rendered");
    return;
  }
  // The stand-in's demo: eight H100s, with dmon's activity (a chart of eight lines each).
  test::Server server("--interval 0.5 --nvidia-smi " + fake, "FAKE_NVSMI_MODE=demo");
  REQUIRE(test::wait_until([&] {
    json answer = series(server);
    return answer.is_object() && answer["times"].size() >= 10 && answer["gpus"].size() == 8 &&
           answer["gpus"][0].contains("sm_active_percent");
  }));
  const std::string activity = ".chart-card[data-chart=\"activity-sm_active_percent\"]";
  const std::string ready = "document.querySelectorAll('#gpu-legend .gpu-key').length === 8 && "
                            "document.querySelector('" +
                            activity +
                            " canvas') && "
                            "document.querySelectorAll('.multiple-row .small-chart').length === 32";
  // Each line's colour as the page draws it: the GPUs' key, the chart library's own series, the
  // chart's legend samples, the small multiples' labels.
  const std::string colours =
      "eval:(() => {"
      "  const strokes = (selector) => [...document.querySelectorAll(selector)].map("
      "    (line) => getComputedStyle(line).stroke);"
      "  return { key: strokes('#gpu-legend .gpu-key line'),"
      "           series: view.charts.get('activity-sm_active_percent').graph.getColors(),"
      "           samples: strokes('" +
      activity +
      " .legend .v svg line'),"
      "           multiples: strokes('.multiple-row .multiple-label line') };"
      "})()";
  // Where the page puts the process table: right under the glance, above the first chart.
  const std::string places = "eval:(() => {"
                             "  const box = (e) => e.getBoundingClientRect();"
                             "  return { glance: box(document.getElementById('glance')).bottom,"
                             "           processes: box(document.getElementById('processes')).top,"
                             "           chart: box(document.querySelector('#charts > .box')).top,"
                             "           scroll: document.documentElement.scrollWidth,"
                             "           client: document.documentElement.clientWidth };"
                             "})()";
  const std::string shown =
      "eval:(() => ({"
      "  pressed: [...document.querySelectorAll('#gpu-legend .gpu-key')].map("
      "    (key) => key.getAttribute('aria-pressed')),"
      "  activity: view.charts.get('activity-sm_active_percent').graph.visibility(),"
      "  entries: [...document.querySelectorAll('" +
      activity +
      " .legend .v')].map("
      "    (v) => v.classList.contains('off')),"
      "  rows: [...document.querySelectorAll('.multiple-row:not(.head) .multiple-label')].map("
      "    (label) => label.textContent),"
      "  focus: document.activeElement.textContent }))()";
  std::string artifacts = ARTIFACTS_DIR;
  test::run_shell("mkdir -p " + quote(artifacts));
  auto key = [](int gpu) {
    return "#gpu-legend .gpu-key:nth-child(" + std::to_string(gpu + 1) + ")";
  };
  auto pages = act(
      server, ready,
      {colours, places, "shot:" + artifacts + "/dashboard-8gpu.png",
       // A click on GPU 3's key hides it in every chart...
       "click:" + key(3), "wait:document.querySelector('" + key(3) + "').ariaPressed === 'false'",
       shown, "shot:" + artifacts + "/dashboard-8gpu-gpu3-hidden.png",
       // ...and a click on its entry in a chart's own legend shows it again.
       "click:" + activity + " .legend .v[data-series=\"3\"]",
       "wait:document.querySelector('" + key(3) + "').ariaPressed === 'true'", shown,
       // The keyboard: Enter on GPU 1's key hides it, the focus staying there.
       "key:" + key(1) + ":Enter",
       "wait:document.querySelector('" + key(1) + "').ariaPressed === 'false'", shown});
  json colour = json::parse(pages[1]);
  INFO(colour.dump());
  std::vector<std::string> keys = colour["key"], drawn = colour["series"];
  REQUIRE(keys.size() == 8);
  REQUIRE(drawn.size() == 8);
  CHECK(std::set<std::string>(keys.begin(), keys.end()).size() == 8);
  for (std::size_t gpu = 0; gpu < 8; ++gpu) {
    INFO("GPU " << gpu);
    CHECK(rgb(drawn[gpu]) == keys[gpu]);
    CHECK(colour["samples"][gpu] == keys[gpu]);
    CHECK(colour["multiples"][gpu] == keys[gpu]);
  }
  // Told apart, not only different: every two at least 60 apart in RGB (0-255 each).
  for (std::size_t a = 0; a < 8; ++a)
    for (std::size_t b = a + 1; b < 8; ++b) {
      INFO(keys[a] << " and " << keys[b]);
      CHECK(rgb_distance(keys[a], keys[b]) >= 60);
    }
  json place = json::parse(pages[2]);
  INFO(place.dump());
  CHECK(place["processes"].get<double>() < place["chart"].get<double>());
  CHECK(place["processes"].get<double>() - place["glance"].get<double>() < 80);

  const std::vector<bool> all(8, true);
  auto without = [&](std::vector<int> gpus) {
    std::vector<bool> visible = all;
    for (int gpu : gpus)
      visible[gpu] = false;
    return visible;
  };
  auto check_shown = [&](const std::string &page, const std::vector<bool> &visible) {
    json state = json::parse(page);
    INFO(state.dump());
    std::vector<std::string> rows;
    for (std::size_t gpu = 0; gpu < 8; ++gpu) {
      CHECK(state["pressed"][gpu] == (visible[gpu] ? "true" : "false"));
      CHECK(state["activity"][gpu] == visible[gpu]);
      CHECK(state["entries"][gpu] == !visible[gpu]);
      if (visible[gpu])
        rows.push_back("GPU " + std::to_string(gpu));
    }
    CHECK(state["rows"] == rows);
    return state;
  };
  check_shown(pages[6], without({3}));
  check_shown(pages[10], all);
  CHECK(check_shown(pages[13], without({1}))["focus"] == "GPU 1");

  // At a phone's width: the same colours, the processes still before the charts, nothing wider
  // than the screen.
  auto phone = act(server, ready,
                   {colours, places, "shot:" + artifacts + "/dashboard-8gpu-phone.png",
                    "eval:document.getElementById('gpu-legend').scrollIntoView()",
                    "shot:" + artifacts + "/dashboard-8gpu-phone-charts.png"},
                   "400x900");
  json phone_colour = json::parse(phone[1]);
  CHECK(phone_colour["key"] == colour["key"]);
  json phone_place = json::parse(phone[2]);
  INFO(phone_place.dump());
  CHECK(phone_place["processes"].get<double>() < phone_place["chart"].get<double>());
  CHECK(phone_place["scroll"].get<int>() <= phone_place["client"].get<int>());
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
  // What is shown is greyed: the rows, the summary line, the small charts' rows.
  CHECK(matches(page, R"re(<div class="glance-row stale" data-gpu=)re").size() == 8);
  CHECK_THAT(page,
             Catch::Contains("<p id=\"summary\" aria-live=\"polite\" class=\"stale\">8 GPUs: "));
  CHECK(matches(page, R"re(<div class="multiple-row stale" data-id=)re").size() == 8);
  auto drawn = matches(
      page, "data-chart=\"gpu-utilization_percent\" data-gpu=\"\\d\" data-points=\"(\\d+)\"");
  REQUIRE(drawn.size() == 8);
  CHECK(std::stoi(drawn[0][1]) >= 1);
  CHECK(matches(page, R"re(dygraph-axis-label-x">\d\d:\d\d:\d\d<)re").size() >= 1);
}

TEST_CASE("serve: the dashboard's header says what monitoring costs, once ten seconds of it are "
          "known") {
  if (!test::installed("chromium")) {
    WARN("chromium is not installed: not rendered");
    return;
  }
  test::Server server("--interval 0.5 --nvidia-smi " + fake);
  // The page asks every interval; the agent reads its cost at most every 5 s for it. Before ten
  // seconds of it the page says nothing (top's rule, tested on its header): on a busy machine
  // those may be gone before a browser has drawn the page, so that is not asserted here.
  REQUIRE(test::wait_until([&] {
    json answer = series(server);
    return answer.is_object() && answer["monitor"].is_object() &&
           answer["monitor"]["window_seconds"].get<double>() >= 10;
  }));
  std::string page = dom(server);
  CHECK(matches(page, R"re(<span class="meta" id="cost" title="the agent and the nvidia-smi it )re"
                      R"re(runs, over the last \d+ s">monitoring cost: \d+(\.\d+)? % of a )re"
                      R"re(core</span>)re")
            .size() == 1);
  screenshot(server, "1400,1000", "dashboard-cost.png");
  screenshot(server, "400,900", "dashboard-cost-phone.png");
}

TEST_CASE("serve: the dashboard's header says what --cpu-budget gave up to keep to it") {
  if (!test::installed("chromium")) {
    WARN("chromium is not installed: not rendered");
    return;
  }
  // Judged every 2 s; the stand-in's bash and awk cost far more than 0.01 % of a core.
  test::Server server("--interval 0.5 --cpu-budget 0.01 --nvidia-smi " + fake,
                      "NVSMI_TEST_BUDGET_WINDOW_SECONDS=2");
  json monitor;
  REQUIRE(test::wait_until(
      [&] {
        json answer = series(server);
        if (!answer.is_object() || !answer["monitor"].is_object())
          return false;
        monitor = answer["monitor"];
        return monitor["window_seconds"].get<double>() >= 10 && monitor["budget_steps"].size() >= 2;
      },
      std::chrono::seconds(120)));
  INFO(monitor.dump());
  CHECK(monitor["budget_percent"] == 0.01);
  // The ladder's order (sampling/sampler.hpp): pmon first where it runs, else dmon.
  CHECK_THAT(monitor["budget_steps"][0].get<std::string>(), Catch::Contains(" every 10 s"));
  std::string page = dom(server);
  CHECK(matches(page, R"re(<span class="meta over-budget" id="cost" title="the agent and the )re"
                      R"re(nvidia-smi it runs, over the last \d+ s; to keep to --cpu-budget )re"
                      R"re(0\.01 %: [a-z]+ every 10 s, [^"]+">monitoring cost: \d+(\.\d+)? % )re"
                      "of a core \xc2\xb7 "
                      R"re(budget 0\.01 %: [^<]+</span>)re")
            .size() == 1);
  screenshot(server, "1400,1000", "dashboard-budget.png");
  screenshot(server, "400,900", "dashboard-budget-phone.png");
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

TEST_CASE("serve: the dashboard says why a GPU is failing or lost in its row, not on hover") {
  if (!test::installed("chromium")) {
    WARN("chromium is not installed: not rendered");
    return;
  }
  test::Server failing("--interval 0.2 --fixture " +
                       quote(test::fixture_path("xml/h100-8gpu-failing-v12.xml")));
  REQUIRE(test::wait_until([&] { return series(failing).is_object(); }));
  std::string page = dom(failing);
  CHECK(glance_states(page)[3] == "failing");
  CHECK_THAT(page,
             Catch::Contains("<div class=\"reason failing\">2 uncorrectable ECC errors</div>"));
  CHECK_THAT(page, Catch::Contains("1 failing</p>"));

  test::Server lost("--interval 0.2 --fixture " +
                    quote(test::fixture_path("xml/h100-8gpu-lost-values-v12.xml")));
  REQUIRE(test::wait_until([&] { return series(lost).is_object(); }));
  page = dom(lost);
  CHECK(glance_states(page)[4] == "lost");
  CHECK_THAT(page, Catch::Contains("<div class=\"reason lost\">GPU is lost</div>"));
  CHECK_THAT(page, Catch::Contains("1 lost</p>"));
}

TEST_CASE("serve: the dashboard draws a few GPUs as lines of one chart, in the palette, with the "
          "threshold lines named") {
  if (!test::installed("chromium")) {
    WARN("chromium is not installed: not rendered");
    return;
  }
  test::Server server("--interval 0.2 --fixture " +
                      quote(test::fixture_path("xml/gtx1080ti-2gpu-v10-nodoctype.xml")));
  REQUIRE(test::wait_until([&] {
    json answer = series(server);
    return answer.is_object() && answer["times"].size() >= 15;
  }));
  std::string page = dom(server);
  CHECK(glance_states(page).size() == 2);
  CHECK(page.find("data-chart=\"gpu-utilization_percent\" data-gpu=") == std::string::npos);
  CHECK(matches(page, "data-chart=\"gpu-temperature_c\" data-points=\"\\d+\" "
                      "data-lines=\"90 \xc2\xb0"
                      "C,hot 85 \xc2\xb0"
                      "C\"")
            .size() == 1);
  CHECK(matches(page, "data-chart=\"gpu-power_draw_w\" data-points=\"\\d+\" "
                      "data-lines=\"95 % of 250 W\"")
            .size() == 1);
  CHECK_THAT(page, Catch::Contains("limit GPU 0,1"));
  // Each chart's legend names each GPU beside a sample of its line, in the GPU's colour.
  const std::string sample = R"re(<span class="v" data-series="(\d)"><svg class="sample" )re"
                             R"re(width="24" height="8" aria-hidden="true"><line [^>]*)re"
                             R"re(stroke="(#[0-9a-f]{6})"[^>]*></line></svg>GPU (\d)</span>)re";
  std::map<std::string, std::set<std::string>> colours;
  for (const std::smatch &entry : matches(page, sample)) {
    CHECK(entry[1] == entry[3]);
    colours[entry[3]].insert(entry[2]);
  }
  CHECK(colours ==
        std::map<std::string, std::set<std::string>>{{"0", {"#0072b2"}}, {"1", {"#e69f00"}}});
  CHECK(matches(page, sample).size() >= 8);
  CHECK(matches(page, R"re(dygraph-axis-label-x">\d\d:\d\d:\d\d<)re").size() >= 4);
}

TEST_CASE("serve: a hostile process name stays text in its cell: markup, a bidirectional "
          "override, zero-width characters, 3000 characters without a space") {
  if (!test::installed("chromium")) {
    WARN("chromium is not installed: not rendered");
    return;
  }
  // Any local user names their process: here GPU 2's first. Every screen names a process by its
  // first word (its program), so the override, the zero-width characters and the 3000 letters come
  // before the first space, the markup around them.
  const std::string name = "<img\xe2\x80\xae"
                           "gnp.exe\xe2\x80\x8b\xe2\x80\x8d" +
                           std::string(3000, 'W') + " src=x onerror=\"document.title='pwned'\">";
  std::string escaped; // as nvidia-smi writes it in its XML
  for (char c : name)
    escaped += c == '<' ? "&lt;" : c == '>' ? "&gt;" : c == '"' ? "&quot;" : std::string(1, c);
  test::Server server("--interval 0.2 --fixture " +
                      quote(test::fixture_with_process_name(escaped)));
  REQUIRE(test::wait_until([&] { return series(server).is_object(); }));
  const std::string look =
      "eval:(() => {"
      "  const cell = document.querySelector('#processes td.command');"
      "  return { text: cell.textContent, images: document.querySelectorAll('img').length,"
      "           title: document.title,"
      "           table: [document.querySelector('.table-box').scrollWidth,"
      "                   document.querySelector('.table-box').clientWidth],"
      "           scroll: document.documentElement.scrollWidth,"
      "           client: document.documentElement.clientWidth };"
      "})()";
  std::string artifacts = ARTIFACTS_DIR;
  test::run_shell("mkdir -p " + quote(artifacts));
  for (const auto &[size, png] :
       {std::pair<std::string, std::string>{"1400x1000", "wide"}, {"400x900", "phone"}}) {
    INFO(size);
    auto pages = act(server, "document.querySelectorAll('#processes td.command').length > 0",
                     {look, "shot:" + artifacts + "/dashboard-hostile-" + png + ".png"}, size);
    json seen = json::parse(pages[1]);
    std::string text = seen["text"];
    // The markup is its text, the override shown as U+FFFD (it would turn what follows around).
    CHECK_THAT(text, Catch::StartsWith("<img\xef\xbf\xbdgnp.exe"));
    CHECK_THAT(text, Catch::Contains("\xef\xbf\xbdgnp.exe"));
    CHECK(text.find("\xe2\x80\xae") == std::string::npos);
    CHECK(seen["images"] == 0);
    CHECK(seen["title"] != "pwned");
    // Cut in its cell (its table fits a wide screen whole), the page never wider than the screen.
    if (size == "1400x1000")
      CHECK(seen["table"][0].get<int>() <= seen["table"][1].get<int>());
    CHECK(seen["scroll"].get<int>() <= seen["client"].get<int>());
  }
}

} // namespace test_serve_browser
