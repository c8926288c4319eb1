// End to end: a GPU nvidia-smi cannot read does not take the others with it, through the built
// agent and the stand-in (FAKE_NVSMI_STDERR, FAKE_NVSMI_EXIT_CODE) on the lost fixtures.
#include "serve_support.hpp"
#include "support.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>

namespace test_lost_cli {

using test::quote;
using test::Run;

namespace {

std::string fixture(const std::string &name) { return quote(test::fixture_path(name)); }
std::string fake() { return quote(std::string(SCRIPTS_DIR) + "/fake-nvidia-smi"); }

// `environment` (FAKE_NVSMI_*), then the agent on the stand-in with `arguments`.
Run agent(const std::string &environment, const std::string &arguments) {
  return test::run_shell(environment + " timeout 120 " + quote(AGENT_BIN) + " " + arguments +
                         " --nvidia-smi " + fake());
}

const std::string lost_xml = "FAKE_NVSMI_XML=" + fixture("xml/h100-8gpu-lost-v12.xml");
const std::string lost_stderr = "FAKE_NVSMI_STDERR=" + fixture("xml/h100-8gpu-lost-v12.stderr");

// The 8 GPUs, GPU 4 lost and the others read.
void check_sample(const nlohmann::json &sample) {
  REQUIRE(sample["gpus"].size() == 8);
  for (int i = 0; i < 8; ++i) {
    const nlohmann::json &gpu = sample["gpus"][i];
    INFO("GPU " << i << ": " << gpu.dump());
    CHECK(gpu["index"] == i);
    if (i == 4) {
      CHECK(gpu["state"] == "lost");
      CHECK(gpu["pci_bus_id"] == "00000000:59:00.0");
      CHECK(gpu["temperature_c"].is_null());
      CHECK(gpu["memory_used_mib"].is_null());
    } else {
      CHECK(gpu["state"] != "lost");
      CHECK(gpu["temperature_c"] == 30 + i);
    }
  }
}

std::vector<nlohmann::json> json_lines(const std::string &text) {
  std::vector<nlohmann::json> samples;
  for (std::size_t start = 0; start < text.size();) {
    std::size_t end = text.find('\n', start);
    samples.push_back(nlohmann::json::parse(text.substr(start, end - start)));
    start = end == std::string::npos ? text.size() : end + 1;
  }
  return samples;
}

} // namespace

TEST_CASE("snapshot: nvidia-smi exits 15 naming a lost GPU: the others are printed, it is marked") {
  Run run =
      agent(lost_xml + " " + lost_stderr + " FAKE_NVSMI_EXIT_CODE=15", "snapshot --format json");
  INFO("stderr: " << run.err);
  REQUIRE(run.exit_code == 0);
  check_sample(nlohmann::json::parse(run.out));
  CHECK_THAT(run.err, Catch::StartsWith("nvsmi-agent: ") &&
                          Catch::EndsWith(" GPU 00000000:59:00.0 cannot be read: GPU is lost\n"));
  CHECK(std::count(run.err.begin(), run.err.end(), '\n') == 1);
}

TEST_CASE("snapshot --source csv: the device-handle line among the rows") {
  Run run =
      agent("FAKE_NVSMI_CSV=" + fixture("csv/h100-8gpu-lost.csv") + " FAKE_NVSMI_EXIT_CODE=15",
            "snapshot --source csv --format json");
  INFO("stderr: " << run.err);
  REQUIRE(run.exit_code == 0);
  check_sample(nlohmann::json::parse(run.out));
  CHECK(std::count(run.err.begin(), run.err.end(), '\n') == 1);
}

TEST_CASE("snapshot --fixture: a recording with a lost GPU's values, said in the output only") {
  for (const char *name : {"xml/h100-8gpu-lost-values-v12.xml", "csv/h100-8gpu-lost-values.csv"}) {
    INFO(name);
    Run run =
        test::run_shell(quote(AGENT_BIN) + " snapshot --format json --fixture " + fixture(name));
    REQUIRE(run.exit_code == 0);
    check_sample(nlohmann::json::parse(run.out));
    CHECK(run.err.empty());
  }
}

TEST_CASE("a lost GPU whose every value reads [GPU is lost] keeps its bus id from <gpu id>, in "
          "JSON and /metrics; an id that is no bus id is unknown") {
  // The lost-values recording with GPU 4's PCI values lost too and its <gpu id> another bus id,
  // so that the one place the bus id still stands is the attribute.
  std::string folder = test::temporary_folder();
  auto lost_everywhere = [&](const std::string &id) {
    std::string path = folder + "/lost-" + std::to_string(id.size()) + ".xml";
    REQUIRE(test::run_shell("sed -e 's|<gpu id=\"00000000:59:00.0\">|<gpu id=\"" + id +
                            "\">|' -e '/<gpu id=\"" + id +
                            "\">/,/<\\/pci>/ s#>[0-9A-F:.]*</pci_\\(bus\\|device\\|domain\\|"
                            "device_id\\|bus_id\\|sub_system_id\\)>#>[GPU is lost]</pci_\\1>#' " +
                            fixture("xml/h100-8gpu-lost-values-v12.xml") + " >" + quote(path))
                .exit_code == 0);
    REQUIRE(test::read_file(path).find("<pci_bus_id>[GPU is lost]</pci_bus_id>") !=
            std::string::npos);
    return path;
  };
  std::string xml = lost_everywhere("00000000:3B:00.0");
  Run json = test::run_shell(quote(AGENT_BIN) + " snapshot --format json --fixture " + quote(xml));
  REQUIRE(json.exit_code == 0);
  nlohmann::json gpu = nlohmann::json::parse(json.out)["gpus"][4];
  CHECK(gpu["state"] == "lost");
  CHECK(gpu["pci_bus_id"] == "00000000:3B:00.0");
  test::Server server("--fixture " + quote(xml));
  test::Http metrics = server.get("/metrics");
  REQUIRE(metrics.status == 200);
  CHECK_THAT(metrics.body,
             Catch::Contains("nvsmi_gpu_lost{gpu=\"4\",pci_bus_id=\"00000000:3B:00.0\"} 1"));
  // An id that is not a bus id (a hostile recording's) is not taken for one.
  std::string odd = lost_everywhere("not-a-bus");
  Run unknown =
      test::run_shell(quote(AGENT_BIN) + " snapshot --format json --fixture " + quote(odd));
  REQUIRE(unknown.exit_code == 0);
  CHECK(nlohmann::json::parse(unknown.out)["gpus"][4]["pci_bus_id"].is_null());
}

TEST_CASE("snapshot: a non-zero exit without a readable GPU stays a failure (4)") {
  // A message, but no sample.
  Run empty = agent("FAKE_NVSMI_XML=" + fixture("broken/empty.xml") + " " + lost_stderr +
                        " FAKE_NVSMI_EXIT_CODE=15",
                    "snapshot --format json");
  CHECK(empty.exit_code == 4);
  CHECK(empty.out.empty());
  CHECK_THAT(empty.err, Catch::Contains("exited with code 15"));
  // A sample, but no message naming a GPU.
  Run silent = agent(lost_xml + " FAKE_NVSMI_EXIT_CODE=15", "snapshot --format json");
  CHECK(silent.exit_code == 4);
  CHECK(silent.out.empty());
  CHECK(std::count(silent.err.begin(), silent.err.end(), '\n') == 1);
}

namespace {

// Three samples of `watch --source xml` on the stand-in with `environment`, each checked.
Run check_xml_loop(const std::string &environment) {
  Run run = agent(environment, "watch --source xml --format json --interval 0.2 --count 3");
  INFO("stderr: " << run.err);
  REQUIRE(run.exit_code == 0);
  std::vector<nlohmann::json> samples = json_lines(run.out);
  REQUIRE(samples.size() == 3);
  for (const nlohmann::json &sample : samples)
    check_sample(sample);
  return run;
}

} // namespace

TEST_CASE("watch: every sample of nvidia-smi's loop has the GPU it names on stderr") {
  check_xml_loop(lost_xml + " " + lost_stderr);
}

TEST_CASE("watch --source xml: the device-handle line on stdout before each document") {
  std::string folder = test::temporary_folder();
  std::string xml = folder + "/lines-then-xml.xml";
  REQUIRE(test::run_shell("cat " + fixture("xml/h100-8gpu-lost-v12.stderr") + " " +
                          fixture("xml/h100-8gpu-lost-v12.xml") + " >" + quote(xml))
              .exit_code == 0);
  Run run = check_xml_loop("FAKE_NVSMI_XML=" + quote(xml));
  CHECK(run.err.find("skipped") == std::string::npos);
}

TEST_CASE("watch --source csv: the device-handle line on stdout or on stderr") {
  // On stdout, in place of its row: the sample is whole, and nothing is bad output.
  Run stdout_line = agent("FAKE_NVSMI_CSV=" + fixture("csv/h100-8gpu-lost-noheader-nounits.csv"),
                          "watch --format json --interval 0.2 --count 2");
  INFO("stderr: " << stdout_line.err);
  REQUIRE(stdout_line.exit_code == 0);
  for (const nlohmann::json &sample : json_lines(stdout_line.out))
    check_sample(sample);
  CHECK(stdout_line.err.find("skipped") == std::string::npos);
  CHECK(stdout_line.err.find("printed") == std::string::npos);

  // On stderr, no row on stdout: 7 rows with a count of 8 still make a sample.
  std::string folder = test::temporary_folder();
  std::string rows = folder + "/7-rows.csv";
  REQUIRE(test::run_shell("grep -v '^Unable' " +
                          fixture("csv/h100-8gpu-lost-noheader-nounits.csv") + " >" + quote(rows))
              .exit_code == 0);
  Run stderr_line = agent("FAKE_NVSMI_CSV=" + quote(rows) + " " + lost_stderr,
                          "watch --format json --interval 0.2 --count 2");
  INFO("stderr: " << stderr_line.err);
  REQUIRE(stderr_line.exit_code == 0);
  std::vector<nlohmann::json> samples = json_lines(stderr_line.out);
  REQUIRE(samples.size() == 2);
  for (const nlohmann::json &sample : samples)
    check_sample(sample);
}

} // namespace test_lost_cli
