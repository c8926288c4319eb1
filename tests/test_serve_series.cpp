// /api/v1/series through ServeState::answer, on samples with readings chosen so that each bucket's
// min, mean and max are known: bucketing aligned to the step, nulls where nothing was known, the
// bounds and the 400s, an outage answered 200 with fresh:false, and since/step.
#include "nvsmi/nvidia_smi_output.hpp"
#include "serve/embedded_files.hpp"
#include "serve/serve_series.hpp"
#include "serve/serve_state.hpp"
#include "snapshot_builders.hpp"
#include "support.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <regex>

namespace test_serve_series {

using namespace nvsmi;
using json = nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;

namespace {

const std::chrono::steady_clock::time_point start{};
constexpr double t0 = 1'800'000'000; // a multiple of every step used here

Snapshot states_fixture() {
  std::string name = "xml/h100-8gpu-states-v12.xml";
  Snapshot snapshot = read_nvidia_smi_output(test::read_file(test::fixture_path(name)));
  snapshot.host = test::observed_host();
  return snapshot;
}

// A sample at `offset` seconds after t0 (and as long after `start` on the steady clock).
ServeClock clock_at(double offset) {
  return {start + milliseconds(static_cast<long long>(offset * 1000)), t0 + offset};
}

// The answer as the server gives it: a series is made later, in turn with other costly ones.
HttpResponse get(const ServeState &state, const std::string &query, double offset) {
  HttpResponse response = state.answer("/api/v1/series", query, clock_at(offset), {});
  return response.later ? response.later() : response;
}

json body(const HttpResponse &response) {
  REQUIRE(response.body);
  return json::parse(*response.body);
}

// One sample a second for `count` seconds, GPU 0's utilization the second's number (0, 1, ...).
ServeState filled(int count, double history_seconds = 3600) {
  ServeState state(milliseconds(1000), history_seconds);
  Snapshot snapshot = states_fixture();
  for (int i = 0; i < count; ++i) {
    snapshot.gpus[0].utilization_gpu_percent = i;
    state.add(snapshot, clock_at(i));
  }
  return state;
}

} // namespace

TEST_CASE("series: buckets aligned to the step hold the min, mean and max of their samples") {
  ServeState state = filled(10);
  json series = body(get(state, "seconds=10&points=5", 9.5));
  CHECK(series["schema"] == "nvsmi-agent.series/1");
  CHECK(series["step"] == 2.0);
  CHECK(series["fresh"] == true);
  CHECK(series["problem"].is_null());
  CHECK(series["hostname"] == "gpu07");
  CHECK(series["interval_seconds"] == 1.0);
  CHECK(series["received"] == t0 + 9);
  // Buckets [t0, t0+2), ..., [t0+8, t0+10), named by their start, multiples of 2 in Unix time.
  CHECK(series["times"] == json({t0, t0 + 2, t0 + 4, t0 + 6, t0 + 8}));
  REQUIRE(series["gpus"].size() == 8);
  const json &gpu0 = series["gpus"][0];
  CHECK(gpu0["index"] == 0);
  CHECK(gpu0["uuid"] == "GPU-00000000-0000-0000-0000-000000000000");
  CHECK(gpu0["name"] == "NVIDIA H100 80GB HBM3");
  CHECK(gpu0["utilization_percent"]["min"] == json({0, 2, 4, 6, 8}));
  CHECK(gpu0["utilization_percent"]["mean"] == json({0.5, 2.5, 4.5, 6.5, 8.5}));
  CHECK(gpu0["utilization_percent"]["max"] == json({1, 3, 5, 7, 9}));
  const json &gpu5 = series["gpus"][5];
  CHECK(gpu5["power_draw_w"]["mean"][0] == 697.5);
  CHECK(gpu5["power_limit_w"][0] == 700);
  CHECK(series["gpus"][2]["temperature_c"]["max"][4] == 89);
  CHECK(gpu0["memory_total_mib"][0] == 81559);
  CHECK(series["host"]["cpu_percent"]["mean"][0] == 12.5);
  CHECK(series["host"]["memory_total_mib"][0] == 515000);
  // The newest sample whole, with each GPU's state and its processes.
  CHECK(series["latest"]["gpus"][2]["state"] == "hot");
  CHECK(series["latest"]["gpus"][3]["state"] == "idle_but_held");
  CHECK(series["latest"]["gpus"][3]["processes"].size() == 2);
  CHECK(series["latest"]["gpus"][0]["utilization_gpu_percent"] == 9);
}

TEST_CASE("series: a reading no sample of a bucket knew is null, never 0") {
  ServeState state(milliseconds(1000), 3600);
  Snapshot snapshot = states_fixture();
  snapshot.gpus[1].utilization_gpu_percent = std::nullopt;
  snapshot.gpus[1].power_draw_w = std::nullopt;
  state.add(snapshot, clock_at(0));
  snapshot.gpus[1].utilization_gpu_percent = 40;
  state.add(snapshot, clock_at(1));
  snapshot.gpus[1].utilization_gpu_percent = std::nullopt;
  state.add(snapshot, clock_at(2));
  snapshot.host = std::nullopt;
  state.add(snapshot, clock_at(3));
  json series = body(get(state, "seconds=4&points=4", 3.5));
  REQUIRE(series["step"] == 1.0);
  const json &gpu1 = series["gpus"][1];
  CHECK(gpu1["utilization_percent"]["mean"] == json({nullptr, 40, nullptr, nullptr}));
  CHECK(gpu1["utilization_percent"]["min"] == json({nullptr, 40, nullptr, nullptr}));
  CHECK(gpu1["power_draw_w"]["max"] == json({nullptr, nullptr, nullptr, nullptr}));
  CHECK(series["host"]["cpu_percent"]["mean"] == json({12.5, 12.5, 12.5, nullptr}));

  SECTION("a recording has no host at all") {
    ServeState replay(milliseconds(1000), 3600);
    replay.add(read_nvidia_smi_output(test::read_file(test::fixture_path("xml/h100-8gpu-v12.xml"))),
               clock_at(0));
    CHECK(body(get(replay, "", 0.5))["host"].is_null());
  }
}

TEST_CASE("series: the host's disk and network rates, null where a sample had none") {
  ServeState state(milliseconds(1000), 3600);
  Snapshot snapshot = states_fixture(); // the first sample: no rates yet
  state.add(snapshot, clock_at(0));
  snapshot.host->disk_read_bytes_per_second = 100e6;
  snapshot.host->disk_write_bytes_per_second = 0;
  snapshot.host->network_receive_bytes_per_second = 2e6;
  snapshot.host->network_send_bytes_per_second = 1e6;
  state.add(snapshot, clock_at(1));
  snapshot.host->disk_read_bytes_per_second = 300e6;
  state.add(snapshot, clock_at(1.5));
  json series = body(get(state, "seconds=2&points=2", 1.9));
  REQUIRE(series["step"] == 1.0);
  const json &host = series["host"];
  CHECK(host["disk_read_bytes_per_second"]["mean"] == json({nullptr, 200e6}));
  CHECK(host["disk_read_bytes_per_second"]["min"] == json({nullptr, 100e6}));
  CHECK(host["disk_read_bytes_per_second"]["max"] == json({nullptr, 300e6}));
  CHECK(host["disk_write_bytes_per_second"]["mean"] == json({nullptr, 0}));
  CHECK(host["network_receive_bytes_per_second"]["mean"] == json({nullptr, 2e6}));
  CHECK(host["network_send_bytes_per_second"]["max"] == json({nullptr, 1e6}));
}

TEST_CASE("series: buckets without samples are left out; their gap shows in the times") {
  ServeState state(milliseconds(1000), 3600);
  Snapshot snapshot = states_fixture();
  for (double at : {0.0, 1.0, 7.0, 8.0})
    state.add(snapshot, clock_at(at));
  json series = body(get(state, "seconds=10&points=10", 8.5));
  CHECK(series["times"] == json({t0, t0 + 1, t0 + 7, t0 + 8}));
  CHECK(series["gpus"][0]["temperature_c"]["mean"].size() == 4);
}

TEST_CASE("series: the step is round, at least the interval, and the body stays bounded") {
  CHECK(series_step(1, 3600, 300) == 15);
  CHECK(series_step(1, 300, 300) == 1);
  CHECK(series_step(0.05, 10, 300) == 0.05);
  CHECK(series_step(0.2, 60, 300) == 0.2);
  CHECK(series_step(0.3, 60, 300) == 0.5);
  CHECK(series_step(5, 600, 300) == 5);
  CHECK(series_step(1, 86400 * 3, 2) == 86400 * 2);

  ServeState state = filled(1000);
  json all = body(get(state, "points=10", 999.5));
  CHECK(all["times"].size() <= 10);
  CHECK(all["step"] == 120.0); // 1000 s held, in at most 10 buckets: 100 s, rounded up
  CHECK(all["gpus"][0]["utilization_percent"]["max"].back() == 999);
  CHECK(all["gpus"][0]["utilization_percent"]["min"][0] == 0);
  // The default: 300 buckets at most, however long the history.
  json whole = body(get(state, "", 999.5));
  CHECK(whole["times"].size() <= 300);
  CHECK(whole["times"].size() >= 200);
  // More seconds than the history holds is all of it.
  CHECK(body(get(state, "seconds=99999999&points=10", 999.5))["times"] == all["times"]);
  std::size_t small = get(state, "points=10", 999.5).body->size();
  // Three times the samples: as many buckets, a body as large (its numbers a digit longer).
  ServeState longer = filled(3000, 7200);
  HttpResponse three_times = get(longer, "points=10", 2999.5);
  CHECK(body(three_times)["times"].size() <= 10);
  CHECK(three_times.body->size() < small * 11 / 10);
}

TEST_CASE("series: a bad or too large parameter is a 400 that names it") {
  ServeState state = filled(5);
  for (const auto &[query, named] :
       std::vector<std::pair<std::string, std::string>>{{"points=0", "points"},
                                                        {"points=2001", "points"},
                                                        {"points=1.5", "points"},
                                                        {"points=many", "points"},
                                                        {"seconds=-1", "seconds"},
                                                        {"seconds=0", "seconds"},
                                                        {"seconds=abc", "seconds"},
                                                        {"seconds=inf", "seconds"},
                                                        {"step=0", "step"},
                                                        {"step=1&since=x", "since"},
                                                        {"since=5", "since"}}) {
    HttpResponse response = get(state, query, 4.5);
    INFO(query);
    CHECK(response.status == 400);
    CHECK_THAT(body(response)["error"].get<std::string>(), Catch::StartsWith(named));
  }
  CHECK(get(state, "points=2000", 4.5).status == 200);
}

TEST_CASE("series: an outage is answered 200 with the history and fresh:false; 503 before any "
          "sample") {
  ServeState empty(milliseconds(1000), 3600);
  HttpResponse before = get(empty, "", 0);
  CHECK(before.status == 503);

  ServeState state = filled(5);
  state.note_error("nvidia-smi exited with code 9");
  HttpResponse response = get(state, "", 60);
  CHECK(response.status == 200);
  json series = body(response);
  CHECK(series["fresh"] == false);
  CHECK_THAT(series["problem"].get<std::string>(),
             Catch::StartsWith("no sample for 56 s") && Catch::Contains("exited with code 9"));
  CHECK(series["received"] == t0 + 4);
  CHECK(series["times"].size() >= 1);
  CHECK(series["latest"]["gpus"].size() == 8);
  // The other JSON endpoints still refuse stale data.
  CHECK(state.answer("/api/v1/snapshot", "", clock_at(60), {}).status == 503);
}

TEST_CASE("series: since=T with the step gives the buckets from T on, aligned as before") {
  ServeState state = filled(10);
  json first = body(get(state, "seconds=10&points=5", 9.5));
  REQUIRE(first["step"] == 2.0);
  Snapshot snapshot = states_fixture();
  snapshot.gpus[0].utilization_gpu_percent = 50;
  state.add(snapshot, clock_at(10));
  state.add(snapshot, clock_at(11));
  state.add(snapshot, clock_at(12));
  json later = body(get(state, "step=2&since=" + std::to_string(t0 + 8), 12.5));
  CHECK(later["step"] == 2.0);
  // The bucket at t0+8 again (the client's is replaced), then the new ones.
  CHECK(later["times"] == json({t0 + 8, t0 + 10, t0 + 12}));
  CHECK(later["gpus"][0]["utilization_percent"]["max"] == json({9, 50, 50}));
}

TEST_CASE("serve: the chart library is served from the binary, cached for a day") {
  ServeState state(milliseconds(1000), 3600);
  HttpResponse script = state.answer("/assets/dygraph.min.js", "", clock_at(0), {});
  CHECK(script.status == 200);
  CHECK(script.content_type == "text/javascript; charset=utf-8");
  CHECK(script.body->size() > 100000);
  CHECK(*script.body == test::read_file("/usr/share/javascript/dygraphs/dygraph.min.js"));
  CHECK(script.headers == std::vector<std::pair<std::string, std::string>>{
                              {"Cache-Control", "public, max-age=86400"}});
  HttpResponse style = state.answer("/assets/dygraph.min.css", "", clock_at(0), {});
  CHECK(style.status == 200);
  CHECK(*style.body == test::read_file("/usr/share/javascript/dygraphs/dygraph.min.css"));
  HttpResponse page = state.answer("/", "", clock_at(0), {});
  CHECK_THAT(*page.body, Catch::Contains("<script src=\"/assets/dygraph.min.js\"></script>"));
  CHECK(state.answer("/assets/other.js", "", clock_at(0), {}).status == 404);
}

TEST_CASE("series: answers waiting for clients that do not read stay under a bound, then 503") {
  // 3000 samples of 8 GPUs: each points=2000 answer is hundreds of KiB, as in issue 23, where
  // 500 such clients pushed the agent past its MemoryMax.
  constexpr std::size_t bound = 4u << 20;
  ServeState state(milliseconds(1000), 3600, 256u << 20, bound);
  Snapshot snapshot = states_fixture();
  for (int i = 0; i < 3000; ++i)
    state.add(snapshot, clock_at(i));
  std::vector<HttpResponse> held; // the bodies of clients that asked and never read
  std::size_t busy = 0;
  for (int client = 0; client < 100; ++client) {
    HttpResponse response = get(state, "points=2000", 2999.5);
    if (response.status == 200) {
      REQUIRE(response.body->size() > 100'000);
      held.push_back(std::move(response));
    } else {
      CHECK(response.status == 503);
      CHECK(std::find(response.headers.begin(), response.headers.end(),
                      std::pair<std::string, std::string>("Retry-After", "1")) !=
            response.headers.end());
      ++busy;
    }
    CHECK(state.pending_bytes() <= bound);
  }
  CHECK(held.size() >= 2);
  CHECK(busy > 0);
  std::string metrics = *state.answer("/metrics", "", clock_at(2999.5), {}).body;
  CHECK_THAT(metrics, Catch::Contains("nvsmi_serve_pending_body_bytes " +
                                      std::to_string(state.pending_bytes())));
  held.clear(); // the clients read or left
  CHECK(state.pending_bytes() == 0);
  CHECK(get(state, "points=2000", 2999.5).status == 200);
  CHECK(state.pending_bytes() == 0); // a body no one holds is no longer counted
}

TEST_CASE("series: the summary line is the newest sample's fleet summary, made by the agent") {
  ServeState state(milliseconds(1000), 3600);
  Snapshot snapshot = states_fixture();
  state.add(snapshot, clock_at(0));
  CHECK(
      body(get(state, "", 0.5))["summary"] ==
      "8 GPUs: 3 free \u00b7 2 in use \u00b7 1 idle but held \u00b7 1 at power limit \u00b7 1 hot");
  // The newest sample's, with the holders of the idle GPU that its processes name.
  REQUIRE(snapshot.gpus[3].processes);
  (*snapshot.gpus[3].processes)[0].user = "alice";
  (*snapshot.gpus[3].processes)[1].user = "<b>bob\x1b[2J</b>";
  state.add(snapshot, clock_at(1));
  json series = body(get(state, "", 1.5));
  CHECK(series["summary"] == "8 GPUs: 3 free \u00b7 2 in use \u00b7 1 idle but held (alice, "
                             "<b>bob\x1b[2J</b>) \u00b7 1 at power limit \u00b7 1 hot");
  // The escape byte travels escaped: the body itself holds no control character.
  CHECK(get(state, "", 1.5).body->find('\x1b') == std::string::npos);
  // An outage keeps the last summary, under fresh:false.
  CHECK(body(get(state, "", 60))["fresh"] == false);
  CHECK(body(get(state, "", 60))["summary"] == series["summary"]);
}

namespace {

struct Hsl {
  double hue, saturation;
};

Hsl hsl(const std::string &hex) {
  double rgb[3];
  for (int i = 0; i < 3; ++i)
    rgb[i] = std::stoi(hex.substr(1 + 2 * i, 2), nullptr, 16) / 255.0;
  double high = std::max({rgb[0], rgb[1], rgb[2]}), low = std::min({rgb[0], rgb[1], rgb[2]});
  double chroma = high - low, lightness = (high + low) / 2;
  double saturation = chroma == 0 ? 0 : chroma / (1 - std::abs(2 * lightness - 1));
  double hue = 0;
  if (chroma > 0) {
    if (high == rgb[0])
      hue = 60 * std::fmod((rgb[1] - rgb[2]) / chroma + 6, 6);
    else if (high == rgb[1])
      hue = 60 * ((rgb[2] - rgb[0]) / chroma + 2);
    else
      hue = 60 * ((rgb[0] - rgb[1]) / chroma + 4);
  }
  return {hue, saturation};
}

} // namespace

TEST_CASE("serve: both pages colour the states from one stylesheet, in the team's colours, and "
          "the dashboard has eight GPU colours") {
  ServeState state(milliseconds(1000), 3600);
  HttpResponse style = state.answer("/assets/shared.css", "", clock_at(0), {});
  REQUIRE(style.status == 200);
  CHECK(style.content_type == "text/css; charset=utf-8");
  const std::string &css = *style.body;
  std::map<std::string, std::string> colours;
  const std::regex variable("--([a-z_]+): (#[0-9a-f]{6})");
  for (std::sregex_iterator it(css.begin(), css.end(), variable), end; it != end; ++it)
    colours[(*it)[1]] = (*it)[2];
  // Free green, in use cyan (teal on white), held amber, the alarms red, the rest grey.
  auto hue_in = [&](const std::string &name, double from, double to) {
    INFO(name << " " << colours[name]);
    REQUIRE(colours.count(name) == 1);
    Hsl colour = hsl(colours[name]);
    CHECK(colour.saturation >= 0.35);
    CHECK(((from <= to) ? (colour.hue >= from && colour.hue < to)
                        : (colour.hue >= from || colour.hue < to)));
  };
  hue_in("free", 90, 160);
  hue_in("in_use", 170, 200);
  hue_in("held", 30, 55);
  hue_in("alarm", 345, 15);
  CHECK(hsl(colours["dim"]).saturation < 0.25);
  // Each state's rule names its colour: every rule that mentions `.state.KEY` sets that one.
  std::map<std::string, std::string> state_colour;
  const std::regex rule(R"re(([^{}]+)\{([^}]*)\})re"),
      background(R"re(background: var\(--([a-z_]+)\))re");
  for (std::sregex_iterator it(css.begin(), css.end(), rule), end; it != end; ++it) {
    std::string selectors = (*it)[1], body = (*it)[2];
    std::smatch found;
    if (!std::regex_search(body, found, background))
      continue;
    const std::regex state_class(R"re(\.state(\.[a-z_]+)?\s*(,|$))re");
    for (std::sregex_iterator s(selectors.begin(), selectors.end(), state_class), send; s != send;
         ++s)
      state_colour[(*s)[1].matched ? (*s)[1].str().substr(1) : "*"] = found[1];
  }
  CHECK(state_colour == std::map<std::string, std::string>{{"*", "dim"},
                                                           {"free", "free"},
                                                           {"in_use", "in_use"},
                                                           {"idle_but_held", "held"},
                                                           {"allocated_idle", "held"},
                                                           {"hot", "alarm"},
                                                           {"at_power_limit", "alarm"},
                                                           {"lost", "alarm"},
                                                           {"failing", "alarm"},
                                                           {"stale", "alarm"}});
  // Both pages load it and its script, and keep no state colour of their own.
  HttpResponse script = state.answer("/assets/shared.js", "", clock_at(0), {});
  REQUIRE(script.status == 200);
  CHECK(script.content_type == "text/javascript; charset=utf-8");
  std::string dashboard = *state.answer("/", "", clock_at(0), {}).body;
  std::shared_ptr<const std::string> fleet = fleet_page();
  for (const std::string *page : {static_cast<const std::string *>(&dashboard), fleet.get()}) {
    CHECK_THAT(*page, Catch::Contains("<link rel=\"stylesheet\" href=\"/assets/shared.css\">"));
    CHECK_THAT(*page, Catch::Contains("<script src=\"/assets/shared.js\"></script>"));
    CHECK_THAT(*page, !Catch::Contains(".state.") && !Catch::Contains("--free:"));
  }
  // The GPUs' colours: eight, every two far apart (RGB, 0-255 each).
  std::smatch found;
  REQUIRE(std::regex_search(dashboard, found, std::regex(R"re(const palette = \[([^\]]*)\])re")));
  std::string palette = found[1];
  std::vector<std::array<int, 3>> lines;
  const std::regex hex("#([0-9a-f]{2})([0-9a-f]{2})([0-9a-f]{2})");
  for (std::sregex_iterator it(palette.begin(), palette.end(), hex), end; it != end; ++it)
    lines.push_back({std::stoi((*it)[1], nullptr, 16), std::stoi((*it)[2], nullptr, 16),
                     std::stoi((*it)[3], nullptr, 16)});
  REQUIRE(lines.size() == 8);
  for (std::size_t a = 0; a < lines.size(); ++a)
    for (std::size_t b = a + 1; b < lines.size(); ++b) {
      double apart = 0;
      for (int i = 0; i < 3; ++i)
        apart += std::pow(lines[a][i] - lines[b][i], 2);
      INFO("colours " << a << " and " << b);
      CHECK(std::sqrt(apart) >= 60);
    }
}

TEST_CASE("series: SM, tensor, DRAM activity and traffic where a GPU has them, no key where not") {
  ServeState state(milliseconds(1000), 3600);
  Snapshot snapshot = states_fixture();
  for (Gpu &gpu : snapshot.gpus) // the XML's PCIe throughput aside: only dmon's figures here
    gpu.pcie_rx_bytes_per_second = gpu.pcie_tx_bytes_per_second = std::nullopt;
  snapshot.gpus[0].sm_active_percent = 20;
  snapshot.gpus[0].nvlink_tx_bytes_per_second = 1000;
  state.add(snapshot, clock_at(0));
  snapshot.gpus[0].sm_active_percent = 40;
  snapshot.gpus[0].nvlink_tx_bytes_per_second = std::nullopt;
  state.add(snapshot, clock_at(1));
  json series = body(get(state, "seconds=2&points=2", 1.5));
  const json &gpu0 = series["gpus"][0];
  CHECK(gpu0["sm_active_percent"]["mean"] == json({20, 40}));
  CHECK(gpu0["nvlink_tx_bytes_per_second"]["mean"] == json({1000, nullptr}));
  CHECK_FALSE(gpu0.contains("tensor_active_percent")); // never known: no key, never 0
  CHECK_FALSE(series["gpus"][1].contains("sm_active_percent"));
  CHECK_FALSE(series["gpus"][1].contains("pcie_rx_bytes_per_second"));
}

TEST_CASE("series: each GPU's and the host's keys come in the order the dashboard has read, "
          "from one table each") {
  ServeState state = filled(3);
  HttpResponse response = get(state, "seconds=10&points=5", 2.5);
  REQUIRE(response.body);
  const std::string &text = *response.body;
  // The first GPU's fixed series, then the host's: each after the one before, the totals and
  // limits as one array (the largest), the others as min, mean and max.
  std::size_t at = 0;
  for (const char *key :
       {"\"name\":", "\"utilization_percent\":{\"min\":", "\"memory_used_mib\":{",
        "\"memory_total_mib\":[", "\"power_draw_w\":{", "\"power_limit_w\":[",
        "\"temperature_c\":{", "\"host\":{\"cpu_percent\":{", "\"memory_used_mib\":{",
        "\"memory_total_mib\":[", "\"disk_read_bytes_per_second\":{",
        "\"disk_write_bytes_per_second\":{", "\"network_receive_bytes_per_second\":{",
        "\"network_send_bytes_per_second\":{", "},\"latest\":"}) {
    std::size_t found = text.find(key, at);
    INFO(key);
    REQUIRE(found != std::string::npos);
    at = found;
  }
}

} // namespace test_serve_series
