// MIG instances in the long-running sampler, through `serve --source xml` and the stand-in as the
// A100 recording (xml/a100-mig-v12.xml) with its listing (listing/a100-mig-3g-2g.txt): -L read
// once per layout, each instance's series on /metrics (promtool's lint where installed), the
// DCGM names' GPU_I_PROFILE, and a row per instance on the dashboard.
#include "serve_support.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

namespace test_mig_serve {

using test::quote;
using test::Server;

namespace {

const std::string fake = quote(std::string(SCRIPTS_DIR) + "/fake-nvidia-smi");

// The stand-in's environment for the A100 with MIG on, its calls written to `calls`.
std::string mig_environment(const std::string &calls, const std::string &extra = "") {
  return "FAKE_NVSMI_XML=" + quote(test::fixture_path("xml/a100-mig-v12.xml")) +
         " FAKE_NVSMI_LIST=" + quote(test::fixture_path("listing/a100-mig-3g-2g.txt")) +
         " FAKE_NVSMI_ARGS=" + quote(calls) + " " + extra;
}

// How many of the stand-in's calls were `-L`.
long listing_calls(const std::string &calls) {
  std::ifstream file(calls); // none until the stand-in's first call
  std::stringstream text;
  text << file.rdbuf();
  std::vector<std::string> lines = test::lines_of(text.str());
  return std::count(lines.begin(), lines.end(), "-L");
}

// The number of samples serve has taken, from its own counter.
double samples(const Server &agent) {
  std::string m = agent.get("/metrics").body;
  std::size_t at = m.find("\nnvsmi_history_samples ");
  return at == std::string::npos ? 0 : std::stod(m.substr(at + 23));
}

} // namespace

TEST_CASE("serve --source xml: each MIG instance's memory, state and processes on /metrics, "
          "labelled by its UUID and profile from one nvidia-smi -L") {
  std::string folder = test::temporary_folder();
  Server agent("--source xml --interval 0.3 --nvidia-smi " + fake,
               mig_environment(folder + "/calls"));
  REQUIRE(test::wait_until([&] { return samples(agent) >= 4; }));
  std::string m = agent.get("/metrics").body;
  std::string device0 = "{gpu=\"0\",gpu_uuid=\"GPU-00000000-0000-0000-0000-0000000000a1\","
                        "uuid=\"MIG-00000000-0000-0000-0000-0000000000b0\",profile=\"3g.40gb\","
                        "gpu_instance=\"1\",compute_instance=\"0\"";
  std::string device1 = "{gpu=\"0\",gpu_uuid=\"GPU-00000000-0000-0000-0000-0000000000a1\","
                        "uuid=\"MIG-00000000-0000-0000-0000-0000000000b1\",profile=\"2g.20gb\","
                        "gpu_instance=\"2\",compute_instance=\"0\"";
  CHECK_THAT(m, Catch::Contains("\nnvsmi_mig_memory_total_bytes" + device0 + "} 42144366592\n"));
  CHECK_THAT(m, Catch::Contains("\nnvsmi_mig_memory_used_bytes" + device1 + "} 4215275520\n"));
  CHECK_THAT(m, Catch::Contains("\nnvsmi_mig_state" + device0 + ",state=\"free\"} 1\n"));
  CHECK_THAT(m, Catch::Contains("\nnvsmi_mig_state" + device0 + ",state=\"in_use\"} 0\n"));
  CHECK_THAT(m, Catch::Contains("\nnvsmi_mig_state" + device1 + ",state=\"in_use\"} 1\n"));
  CHECK_THAT(m, Catch::Contains("\nnvsmi_mig_processes" + device1 + "} 1\n"));
  CHECK_THAT(m, Catch::Contains("\nnvsmi_mig_processes" + device0 + "} 0\n"));
  // The GPU's own utilization is N/A under MIG: no series, never 0.
  CHECK(m.find("\nnvsmi_gpu_utilization_ratio{gpu=\"0\"") == std::string::npos);
  if (test::installed("promtool")) {
    test::Run lint = test::promtool_check_metrics(m);
    INFO(lint.out << lint.err);
    CHECK(lint.exit_code == 0);
  } else {
    WARN("promtool not installed: /metrics not linted");
  }
  // One -L for the layout, however many samples.
  CHECK(listing_calls(folder + "/calls") == 1);
  agent.stop();
}

TEST_CASE("serve: nvidia-smi -L is read again when the MIG layout changes") {
  std::string folder = test::temporary_folder();
  // Every other sample without device 1 (its GPU instance destroyed): two layouts in turn.
  std::string xml = test::read_file(test::fixture_path("xml/a100-mig-v12.xml"));
  std::size_t second = xml.find("<mig_device>", xml.find("<mig_device>") + 1);
  std::size_t end = xml.find("</mig_device>", second) + std::string("</mig_device>").size();
  REQUIRE(second != std::string::npos);
  xml.erase(second, end - second);
  test::write_file(folder + "/one-instance.xml", xml);
  Server agent("--source xml --interval 0.3 --nvidia-smi " + fake,
               mig_environment(folder + "/calls",
                               "FAKE_NVSMI_ALTERNATE=" + quote(folder + "/one-instance.xml")));
  CHECK(test::wait_until([&] { return listing_calls(folder + "/calls") >= 3; }));
  agent.stop();
}

TEST_CASE("serve --metric-names dcgm: a MIG GPU's memory per GPU instance with GPU_I_ID and "
          "GPU_I_PROFILE") {
  std::string folder = test::temporary_folder();
  Server agent("--source xml --interval 0.3 --metric-names dcgm --nvidia-smi " + fake,
               mig_environment(folder + "/calls"));
  std::string m;
  REQUIRE(test::wait_until([&] {
    m = agent.get("/metrics").body;
    return m.find("GPU_I_PROFILE") != std::string::npos;
  }));
  CHECK_THAT(m, Catch::Contains(",GPU_I_ID=\"1\",GPU_I_PROFILE=\"3g.40gb\"} 13\n"));
  CHECK_THAT(m, Catch::Contains(",GPU_I_ID=\"2\",GPU_I_PROFILE=\"2g.20gb\"} 4020\n"));
  agent.stop();
}

TEST_CASE("serve: the dashboard has a row per MIG instance under its GPU, with its profile, state "
          "(and the job that keeps it idle) and holders, and the summary counts the instances") {
  if (!test::installed("chromium")) {
    WARN(
        "chromium is not installed (scripts/install-deps installs it): the dashboard is not drawn");
    return;
  }
  std::string folder = test::temporary_folder();
  // Instance 0 (GPU instance 1, no process) held by a Slurm job for 30 minutes.
  std::string jobs = test::temporary_folder();
  test::write_file(jobs + "/0.1", "4321\n");
  test::write_file(jobs + "/0.1.user", "bob\n");
  REQUIRE(test::run_shell("touch -d '30 minutes ago' " + quote(jobs + "/0.1")).exit_code == 0);
  Server agent("--source xml --interval 0.5 --nvidia-smi " + fake + " --job-mapping-dir " +
                   quote(jobs),
               mig_environment(folder + "/calls"));
  REQUIRE(test::wait_until([&] { return samples(agent) >= 2; }));
  const std::string chrome = "--virtual-time-budget=5000 --window-size=";
  test::Run page = test::chromium(chrome + "1400,1000 --dump-dom " + quote(agent.url()));
  INFO(page.err);
  REQUIRE(page.exit_code == 0);
  CHECK_THAT(page.out, Catch::Contains("1 GPU, 2 MIG instances: 1 in use \u00b7 1 allocated but "
                                       "idle (job 4321 of bob)"));
  // The GPU's row, then its instances' rows, each with its index, profile and state.
  std::regex rows(R"re(<div class="glance-row( mig)?" data-gpu="0"( data-mig="(\d)")? )re"
                  R"re(data-state="([a-z_]+)">.*?<span class="name">([^<]*)</span>)re");
  std::vector<std::string> seen;
  for (auto it = std::sregex_iterator(page.out.begin(), page.out.end(), rows);
       it != std::sregex_iterator(); ++it)
    seen.push_back((*it)[1].str() + "|" + (*it)[3].str() + "|" + (*it)[4].str() + "|" +
                   (*it)[5].str());
  CHECK(seen == std::vector<std::string>{"|"
                                         "|in_use|A100-SXM4-80GB",
                                         " mig|0|allocated_idle|3g.40gb", " mig|1|in_use|2g.20gb"});
  CHECK_THAT(page.out,
             Catch::Contains("<div class=\"reason allocated_idle\">job 4321 of bob</div>"));
  CHECK_THAT(page.out, Catch::Contains("title=\"MIG-00000000-0000-0000-0000-0000000000b1\""));
  // Instance 1's process is no process of this machine: its user unknown, never made up, said
  // in the GPU's words in both rows; instance 0 has none.
  auto count = [&](const std::string &text) {
    std::size_t n = 0;
    for (std::size_t at = page.out.find(text); at != std::string::npos;
         at = page.out.find(text, at + 1))
      ++n;
    return n;
  };
  CHECK(count("<div class=\"c-users\">1 process of unknown user</div>") == 2);
  CHECK(count("<div class=\"c-users\">\u2014</div>") == 1);
  CHECK_THAT(page.out, Catch::Contains("1 GPU \u00b7 last sample"));
  for (const auto &[size, name] : {std::pair{"1400,1000", "dashboard-mig.png"},
                                   std::pair{"400,900", "dashboard-mig-phone.png"}}) {
    std::string png = std::string(ARTIFACTS_DIR) + "/" + name;
    test::run_shell("mkdir -p " + quote(ARTIFACTS_DIR) + " && rm -f " + quote(png));
    test::Run shot =
        test::chromium(chrome + size + " --screenshot=" + quote(png) + " " + quote(agent.url()));
    CHECK(shot.exit_code == 0);
    CHECK(test::read_file(png).size() > 20000);
  }
}

} // namespace test_mig_serve
