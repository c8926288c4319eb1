// Conformance: every recording in ../shared/corpus read as expected.json says. Skipped (exit 77,
// which ctest reports as skipped) where the corpus is not beside the project.
#define CATCH_CONFIG_RUNNER
#include "formats/formats.hpp"
#include "nvsmi/compute_apps.hpp"
#include "nvsmi/nvidia_smi_output.hpp"
#include "nvsmi/pmon.hpp"
#include "support.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <map>
#include <optional>

#include <sys/stat.h>

using nlohmann::json;

namespace {

// Compares one reading: numbers by value (500 and 500.0 are the same watts), the rest exactly.
void check_value(const json &expected, const json &actual) {
  if (expected.is_number() && actual.is_number())
    CHECK(actual.get<double>() == Approx(expected.get<double>()).margin(1e-9));
  else
    CHECK(actual == expected);
}

// A reading as expected-processes.json writes it: null for unknown.
template <typename T> json or_null(const std::optional<T> &value) {
  return value ? json(*value) : json(nullptr);
}

// The outputs of a capture file by state and command, e.g. ["load"]["query-compute-apps"]: each
// section is a rule of 80 '#', "# <state> :: <label>", "# $ <command>", another rule, the output.
std::map<std::string, std::map<std::string, std::string>>
capture_sections(const std::string &text) {
  const std::string rule(80, '#');
  std::vector<std::string> lines;
  for (std::size_t start = 0; start < text.size();) {
    std::size_t end = std::min(text.find('\n', start), text.size());
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  std::map<std::string, std::map<std::string, std::string>> sections;
  for (std::size_t i = 0; i + 3 < lines.size(); ++i) {
    if (lines[i] != rule || lines[i + 3] != rule || lines[i + 1].rfind("# ", 0) != 0 ||
        lines[i + 2].rfind("# $ nvidia-smi ", 0) != 0)
      continue;
    std::string state = lines[i + 1].substr(2, lines[i + 1].find(" :: ") - 2);
    std::string command = lines[i + 2].substr(std::string("# $ nvidia-smi ").size());
    std::string key = command.rfind("--query-compute-apps", 0) == 0 ? "query-compute-apps"
                      : command.rfind("pmon", 0) == 0               ? "pmon"
                                                                    : command;
    std::string output;
    std::size_t j = i + 4;
    for (; j < lines.size() && lines[j] != rule; ++j)
      output += lines[j] + "\n";
    sections[state][key] = output;
    i = j - 1;
  }
  return sections;
}

json pmon_value(const nvsmi::PmonRow &row, const std::string &column) {
  if (column == "gpu")
    return or_null(row.gpu_index);
  if (column == "pid")
    return or_null(row.pid);
  if (column == "type")
    return or_null(row.type);
  if (column == "sm")
    return or_null(row.sm_percent);
  if (column == "mem")
    return or_null(row.memory_percent);
  if (column == "enc")
    return or_null(row.encoder_percent);
  if (column == "dec")
    return or_null(row.decoder_percent);
  if (column == "jpg")
    return or_null(row.jpeg_percent);
  if (column == "ofa")
    return or_null(row.ofa_percent);
  if (column == "fb")
    return or_null(row.fb_mib);
  if (column == "command")
    return or_null(row.command);
  FAIL("expected-processes.json names a pmon column the test does not know: " << column);
  return nullptr;
}

} // namespace

TEST_CASE("every capture's compute-apps and pmon sections read as expected-processes.json says") {
  std::string corpus = CORPUS_DIR;
  struct stat info {};
  if (stat((corpus + "/expected-processes.json").c_str(), &info) != 0) {
    WARN("no expected-processes.json in " << corpus << ": the process readers are not checked");
    return;
  }
  json expected = json::parse(test::read_file(corpus + "/expected-processes.json"));
  REQUIRE(expected.size() >= 1);
  for (auto &[file, states] : expected.items()) {
    auto sections = capture_sections(test::read_file(corpus + "/" + file));
    for (auto &[state, want] : states.items()) {
      INFO("corpus file: " << file << ", state: " << state);
      REQUIRE(sections[state].count("query-compute-apps") == 1);
      REQUIRE(sections[state].count("pmon") == 1);

      std::vector<nvsmi::ComputeApp> apps =
          nvsmi::read_compute_apps(sections[state]["query-compute-apps"]);
      REQUIRE(apps.size() == want["compute_apps"].size());
      for (std::size_t i = 0; i < apps.size(); ++i) {
        INFO("compute app " << i);
        const json &app = want["compute_apps"][i];
        CHECK(or_null(apps[i].gpu_uuid) == app["gpu_uuid"]);
        CHECK(or_null(apps[i].pid) == app["pid"]);
        CHECK(or_null(apps[i].process_name) == app["process_name"]);
        CHECK(or_null(apps[i].used_memory_mib) == app["used_gpu_memory_mib"]);
      }

      nvsmi::PmonReader reader;
      std::vector<std::vector<nvsmi::PmonRow>> samples;
      const std::string &pmon = sections[state]["pmon"];
      for (std::size_t start = 0; start < pmon.size();) {
        std::size_t end = std::min(pmon.find('\n', start), pmon.size());
        nvsmi::PmonReader::Outcome outcome = reader.add_line(pmon.substr(start, end - start));
        CHECK(outcome.error.value_or("") == ""); // shows the error
        if (outcome.sample)
          samples.push_back(std::move(*outcome.sample));
        start = end + 1;
      }
      if (auto last = reader.finish())
        samples.push_back(std::move(*last));
      const json &want_pmon = want["pmon"];
      CHECK(json(reader.columns()) == want_pmon["columns"]);
      CHECK(samples.size() == want_pmon["iterations"].get<std::size_t>());
      std::vector<nvsmi::PmonRow> rows;
      for (const auto &sample : samples)
        rows.insert(rows.end(), sample.begin(), sample.end());
      REQUIRE(rows.size() == want_pmon["rows"].size());
      for (std::size_t i = 0; i < rows.size(); ++i)
        for (auto &[column, value] : want_pmon["rows"][i].items()) {
          INFO("pmon row " << i << " " << column);
          CHECK(pmon_value(rows[i], column) == value);
        }
    }
  }
}

TEST_CASE("every corpus recording reads as expected.json says") {
  std::string corpus = CORPUS_DIR;
  json expected = json::parse(test::read_file(corpus + "/expected.json"));
  REQUIRE(expected.size() >= 1);
  for (auto &[file, want] : expected.items()) {
    INFO("corpus file: " << file);
    nvsmi::Snapshot snapshot = nvsmi::read_nvidia_smi_output(test::read_file(corpus + "/" + file));
    json got = json::parse(nvsmi::format_json(snapshot));
    for (const char *key : {"driver_version", "cuda_version"})
      if (want.contains(key)) {
        INFO(key);
        check_value(want[key], got[key]);
      }
    REQUIRE(got["gpus"].size() == want["gpus"].size());
    for (std::size_t i = 0; i < want["gpus"].size(); ++i)
      for (auto &[key, value] : want["gpus"][i].items()) {
        INFO("GPU " << i << " " << key);
        check_value(value, got["gpus"][i][key]);
      }
    // The legacy document must match byte for byte, key order included.
    CHECK(nvsmi::format_legacy(snapshot) == want["legacy"].dump());
  }
}

int main(int argc, char **argv) {
  struct stat info {};
  std::string corpus = CORPUS_DIR;
  if (stat((corpus + "/expected.json").c_str(), &info) != 0) {
    std::printf("SKIPPED: no corpus at %s (../shared/corpus beside the project)\n", corpus.c_str());
    return 77;
  }
  return Catch::Session().run(argc, argv);
}
