// The readers' front door (nvsmi/nvidia_smi_output.hpp): XML or CSV told apart once, from the
// content, and every refusal a ParseError of the readers, which the agent alone turns into its
// exit code.
#include "support.hpp"

#include "nvsmi/nvidia_smi_output.hpp"
#include "nvsmi/quantity.hpp"

#include <catch2/catch.hpp>

#include <algorithm>

namespace test_nvidia_smi_output {

using namespace nvsmi;

namespace {

std::string fixture(const std::string &name) { return test::read_file(test::fixture_path(name)); }

long lost_gpus(const Snapshot &s) {
  return std::count_if(s.gpus.begin(), s.gpus.end(),
                       [](const Gpu &gpu) { return gpu.lost_reason.has_value(); });
}

} // namespace

TEST_CASE("front door: XML is read as XML, however it begins") {
  std::string xml = fixture("xml/h100-8gpu-v12.xml");
  for (const std::string &bytes : {xml, "\xEF\xBB\xBF" + xml, "\n \r\n" + xml + "\n\n"}) {
    CHECK(output_kind(bytes) == Source::xml);
    Snapshot s = read_nvidia_smi_output(bytes);
    CHECK(s.source == Source::xml);
    CHECK(s.gpus.size() == 8);
    CHECK(lost_gpus(s) == 0);
  }
}

TEST_CASE("front door: lines naming an unreadable GPU before the XML put that GPU in, lost") {
  std::string bytes =
      "Unable to determine the device handle for GPU 0000:9A:00.0: Unknown Error\n" +
      fixture("xml/h100-8gpu-v12.xml");
  CHECK(output_kind(bytes) == Source::xml);
  Snapshot s = read_nvidia_smi_output(bytes);
  CHECK(s.source == Source::xml);
  CHECK(s.gpus.size() == 9);
  CHECK(lost_gpus(s) == 1);
}

TEST_CASE("front door: CSV is read as CSV") {
  for (const char *name : {"csv/h100-8gpu.csv", "csv/rtx4080-windows-crlf.csv"}) {
    INFO(name);
    std::string bytes = fixture(name);
    CHECK(output_kind(bytes) == Source::csv);
    Snapshot s = read_nvidia_smi_output(bytes);
    CHECK(s.source == Source::csv);
    CHECK(!s.gpus.empty());
  }
}

TEST_CASE("front door: empty output and garbage are the readers' ParseError") {
  for (const std::string &empty :
       {std::string(), std::string(" \n\t\r\n"), std::string("\xEF\xBB\xBF\n")}) {
    CHECK_THROWS_AS(read_nvidia_smi_output(empty), ParseError);
    CHECK_THROWS_WITH(read_nvidia_smi_output(empty), "empty output");
    CHECK_THROWS_AS(read_nvidia_smi_recording(empty), ParseError);
  }
  for (const std::string &garbage :
       {std::string("NVIDIA-SMI has failed because it couldn't communicate with the driver"),
        std::string("<nvidia_smi_log><gpu>"), std::string("\x00\xff\xfe<<>>", 7),
        std::string("Unable to determine the device handle for GPU 0000:9A:00.0: x\n<oops")}) {
    CHECK_THROWS_AS(read_nvidia_smi_output(garbage), ParseError);
    CHECK_THROWS_AS(read_nvidia_smi_recording(garbage), ParseError);
  }
}

TEST_CASE("front door: a recording of nvidia-smi's loop is every sample of it") {
  std::string xml = fixture("xml/h100-8gpu-v12.xml");
  std::vector<Snapshot> documents = read_nvidia_smi_recording(xml + "\n" + xml + xml);
  REQUIRE(documents.size() == 3);
  for (const Snapshot &s : documents) {
    CHECK(s.source == Source::xml);
    CHECK(s.gpus.size() == 8);
  }
  std::vector<Snapshot> one = read_nvidia_smi_recording(fixture("csv/h100-8gpu.csv"));
  REQUIRE(one.size() == 1);
  CHECK(one[0].source == Source::csv);
  CHECK(one[0].gpus.size() == 8);
}

} // namespace test_nvidia_smi_output
