// Conformance: every recording in ../shared/corpus read as expected.json says. Skipped (exit 77,
// which ctest reports as skipped) where the corpus is not beside the project.
#define CATCH_CONFIG_RUNNER
#include "formats/formats.hpp"
#include "nvidia_smi/source.hpp"
#include "support.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

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

} // namespace

TEST_CASE("every corpus recording reads as expected.json says") {
  std::string corpus = CORPUS_DIR;
  json expected = json::parse(test::read_file(corpus + "/expected.json"));
  REQUIRE(expected.size() >= 1);
  for (auto &[file, want] : expected.items()) {
    INFO("corpus file: " << file);
    nvsmi::Snapshot snapshot = nvsmi::parse_output(test::read_file(corpus + "/" + file), file);
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
