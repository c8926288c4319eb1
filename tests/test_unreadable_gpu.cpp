// A GPU nvidia-smi cannot read while it reads the others: the messages it prints for it
// (docs/research/fleet-health.md, section 10), and the readers keeping it in the sample, lost.
#include "formats/formats.hpp"
#include "support.hpp"

#include "nvsmi/csv_reader.hpp"
#include "nvsmi/gpu_state.hpp"
#include "nvsmi/nvidia_smi_output.hpp"
#include "nvsmi/quantity.hpp"
#include "nvsmi/stream.hpp"
#include "nvsmi/unreadable_gpu.hpp"
#include "nvsmi/xml_reader.hpp"

#include <catch2/catch.hpp>

namespace test_unreadable_gpu {

using namespace nvsmi;

namespace {

std::string fixture(const std::string &name) { return test::read_file(test::fixture_path(name)); }

// Every GPU of the 8-GPU machine but `lost` is read, with the index and bus id it has there.
void check_others_intact(const Snapshot &s, int lost) {
  REQUIRE(s.gpus.size() == 8);
  const char *buses[] = {"19", "29", "39", "49", "59", "69", "79", "89"};
  for (int i = 0; i < 8; ++i) {
    const Gpu &gpu = s.gpus[static_cast<std::size_t>(i)];
    INFO("GPU " << i);
    CHECK(gpu.index == i);
    CHECK(gpu.pci_bus_id == "00000000:" + std::string(buses[i]) + ":00.0");
    if (i == lost)
      continue;
    CHECK_FALSE(gpu.lost_reason);
    CHECK(gpu.uuid == "GPU-00000000-0000-0000-0000-00000000000" + std::to_string(i));
    CHECK(gpu.memory_total_mib == 81559);
    CHECK(gpu.temperature_c == 30 + i);
  }
}

// A lost GPU's readings are unknown, never 0.
void check_nothing_read(const Gpu &gpu) {
  CHECK(gpu_state(gpu) == GpuState::lost);
  CHECK_FALSE(gpu.uuid);
  CHECK_FALSE(gpu.name);
  CHECK_FALSE(gpu.temperature_c);
  CHECK_FALSE(gpu.memory_used_mib);
  CHECK_FALSE(gpu.utilization_gpu_percent);
  CHECK_FALSE(gpu.power_draw_w);
}

} // namespace

TEST_CASE("device-handle line: every shape nvidia-smi prints") {
  struct Case {
    const char *line, *bus_id, *reason;
    std::optional<int> index;
  };
  const Case cases[] = {
      {"Unable to determine the device handle for GPU 0000:0B:00.0: Unknown Error", "0000:0B:00.0",
       "Unknown Error", std::nullopt},
      {"Unable to determine the device handle for gpu 0000:18:00.0: Unknown Error", "0000:18:00.0",
       "Unknown Error", std::nullopt},
      {"Unable to determine the device handle for GPU0000:07:00.0: Unknown Error", "0000:07:00.0",
       "Unknown Error", std::nullopt},
      {"Unable to determine the device handle for GPU 0000:05:00.0: GPU is lost.  Reboot the "
       "system to recover this GPU",
       "0000:05:00.0", "GPU is lost", std::nullopt},
      {"Unable to determine the device handle for GPU 0000:05:00.0: GPU is lost. Reboot the system "
       "to recover this GPU",
       "0000:05:00.0", "GPU is lost", std::nullopt},
      {"Unable to determine the device handle for GPU0: 0000:24:00.0: GPU is lost.  Reboot the "
       "system to recover this GPU",
       "0000:24:00.0", "GPU is lost", 0},
      {"Unable to determine the device handle for GPU 3: 0000:B1:00.0: Unknown Error",
       "0000:B1:00.0", "Unknown Error", 3},
      {"Unable to detect the device handle for GPU0000:B1:00.0: Unknown Error", "0000:B1:00.0",
       "Unknown Error", std::nullopt},
      {"Unable to determine the device handle for GPU 00000000:3B:00.0: GPU requires reset\r",
       "00000000:3B:00.0", "GPU requires reset", std::nullopt},
  };
  for (const Case &c : cases) {
    INFO(c.line);
    auto gpu = parse_unreadable_gpu_line(c.line);
    REQUIRE(gpu);
    CHECK(gpu->pci_bus_id == c.bus_id);
    CHECK(gpu->reason == c.reason);
    CHECK(gpu->index == c.index);
  }
}

TEST_CASE("device-handle line: anything else is not one") {
  for (const char *line :
       {"", "GPU 1: NVIDIA GeForce RTX 2080 Ti (UUID: GPU-f0f3ae96-0000)", "No devices were found",
        "Unable to determine the device handle for GPU: Unknown Error",
        "Unable to determine the device handle for GPU zz:00.0: Unknown Error",
        "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.",
        "2024/03/12 14:03:27.512, 550.54.15, 8, 0, GPU-0, NVIDIA H100, 00000000:19:00.0"}) {
    INFO(line);
    CHECK_FALSE(parse_unreadable_gpu_line(line));
  }
}

TEST_CASE("find_unreadable_gpus: every message in the text, each bus id once") {
  auto gpus = find_unreadable_gpus(
      "Unable to determine the device handle for gpu 0000:18:00.0: Unknown Error\n"
      "GPU 1: NVIDIA GeForce RTX 2080 Ti (UUID: GPU-f0f3ae96-0000)\n"
      "Unable to determine the device handle for GPU 00000000:18:00.0: Unknown Error\n"
      "Unable to determine the device handle for GPU0000:07:00.0: GPU is lost.  Reboot");
  REQUIRE(gpus.size() == 2);
  CHECK(gpus[0].pci_bus_id == "0000:18:00.0");
  CHECK(gpus[1].pci_bus_id == "0000:07:00.0");
  CHECK(gpus[1].reason == "GPU is lost");
  CHECK(find_unreadable_gpus("").empty());
}

TEST_CASE("add_unreadable_gpus: XML in bus order, renumbered; a GPU already there is marked") {
  Snapshot s = read_xml(fixture("xml/h100-8gpu-lost-v12.xml"));
  REQUIRE(s.gpus.size() == 7); // the XML leaves the lost GPU out
  auto lost = find_unreadable_gpus(fixture("xml/h100-8gpu-lost-v12.stderr"));
  add_unreadable_gpus(s, lost);
  check_others_intact(s, 4);
  CHECK(s.gpus[4].lost_reason == std::string("GPU is lost"));
  check_nothing_read(s.gpus[4]);
  add_unreadable_gpus(s, lost); // a second time changes nothing
  CHECK(s.gpus.size() == 8);

  Snapshot whole = read_xml(fixture("xml/h100-8gpu-v12.xml"));
  add_unreadable_gpus(whole, {{"0000:39:00.0", std::nullopt, "Unknown Error"}});
  REQUIRE(whole.gpus.size() == 8);
  CHECK(whole.gpus[2].lost_reason == std::string("Unknown Error"));
  CHECK(whole.gpus[2].uuid); // what was read of it stays
}

TEST_CASE("add_unreadable_gpus: CSV by the message's index, else the lowest free one") {
  Snapshot s;
  s.source = Source::csv;
  for (int index : {1, 2, 4}) {
    Gpu gpu;
    gpu.index = index;
    s.gpus.push_back(gpu);
  }
  add_unreadable_gpus(s, {{"0000:24:00.0", 0, "GPU is lost"},
                          {"0000:30:00.0", std::nullopt, "x"},
                          {"0000:40:00.0", std::nullopt, "y"}});
  REQUIRE(s.gpus.size() == 6);
  std::vector<int> indices;
  for (const Gpu &gpu : s.gpus)
    indices.push_back(gpu.index);
  CHECK(indices == std::vector<int>{0, 1, 2, 3, 4, 5});
  CHECK(s.gpus[0].pci_bus_id == std::string("00000000:24:00.0"));
  CHECK(s.gpus[3].lost_reason == std::string("x"));
  CHECK(s.gpus[5].lost_reason == std::string("y"));
}

TEST_CASE("XML: a <gpu> whose readings say it is lost is kept, marked, the others intact") {
  Snapshot s = read_xml(fixture("xml/h100-8gpu-lost-values-v12.xml"));
  check_others_intact(s, 4);
  CHECK(s.gpus[4].lost_reason == std::string("GPU is lost"));
  check_nothing_read(s.gpus[4]);
  for (const Gpu &gpu : read_xml(fixture("xml/h100-8gpu-v12.xml")).gpus)
    CHECK_FALSE(gpu.lost_reason);
}

TEST_CASE("XML: the every-marker fixture has [GPU is lost] in its readings: a lost GPU") {
  Snapshot s = read_xml(fixture("xml/rtx4090-all-unknown-v13.xml"));
  REQUIRE(s.gpus.size() == 1);
  CHECK(s.gpus[0].lost_reason == std::string("GPU is lost"));
}

TEST_CASE("CSV: the device-handle line in place of a row is the GPU, lost, counted") {
  for (const char *name : {"csv/h100-8gpu-lost.csv", "csv/h100-8gpu-lost-noheader-nounits.csv"}) {
    INFO(name);
    Snapshot s = read_csv(fixture(name));
    check_others_intact(s, 4);
    CHECK(s.gpus[4].lost_reason == std::string("GPU is lost"));
    check_nothing_read(s.gpus[4]);
  }
  // A line whose GPU has a row too is that GPU marked, not one more: the count says 8.
  std::string text = fixture("csv/h100-8gpu.csv") +
                     "Unable to determine the device handle for GPU 0000:29:00.0: Unknown Error\n";
  Snapshot marked = read_csv(text);
  REQUIRE(marked.gpus.size() == 8);
  CHECK(marked.gpus[1].lost_reason == std::string("Unknown Error"));
  // One more GPU than the count says is still refused, and the message says why.
  std::string extra = fixture("csv/h100-8gpu.csv") +
                      "Unable to determine the device handle for GPU 0000:99:00.0: Unknown Error\n";
  CHECK_THROWS_WITH(read_csv(extra), Catch::Contains("8 rows and 1 GPUs it could not read") &&
                                         Catch::Contains("count column says 8"));
  CHECK_THROWS_WITH(read_csv("Unable to determine the device handle for GPU 0000:99:00.0: "
                             "Unknown Error\n"),
                    Catch::Contains("could not read any GPU"));
}

TEST_CASE("CSV: a row of [GPU is lost] cells is the GPU, lost; one [Unknown Error] is not") {
  Snapshot s = read_csv(fixture("csv/h100-8gpu-lost-values.csv"));
  check_others_intact(s, 4);
  CHECK(s.gpus[4].lost_reason == std::string("GPU is lost"));
  check_nothing_read(s.gpus[4]);

  CsvLayout layout = CsvLayout::from_fields(
      {"index", "uuid", "name", "temperature.gpu", "memory.used", "utilization.gpu", "fan.speed"});
  CsvRow fan =
      read_csv_row("0, GPU-1, GeForce RTX 2080 Ti, 56, 210, 100, [Unknown Error]", layout, 0);
  CHECK_FALSE(fan.gpu.lost_reason);
  CHECK_FALSE(fan.gpu.fan_speed_percent);
  CHECK(fan.gpu.temperature_c == 56);
  CsvRow gone = read_csv_row("1, [Unknown Error], [Unknown Error], [Unknown Error], [Unknown "
                             "Error], [Unknown Error], [Unknown Error]",
                             layout, 1);
  CHECK(gone.gpu.lost_reason == std::string("Unknown Error"));
  CsvRow reset =
      read_csv_row("2, GPU-2, A100, [GPU requires reset], [GPU requires reset], 0, 0", layout, 2);
  CHECK(reset.gpu.lost_reason == std::string("GPU requires reset"));
  CHECK_FALSE(reset.gpu.temperature_c);
}

TEST_CASE("CSV stream: a device-handle line completes the sample and is no bad row") {
  std::string text = fixture("csv/h100-8gpu-lost-noheader-nounits.csv");
  CsvSampleAssembler assembler(CsvLayout::from_fields(query_fields()));
  std::vector<Snapshot> samples;
  for (int round = 0; round < 2; ++round)
    for (std::size_t start = 0; start < text.size();) {
      std::size_t end = text.find('\n', start);
      auto outcome = assembler.add_line(text.substr(start, end - start));
      CHECK_FALSE(outcome.error);
      if (outcome.sample)
        samples.push_back(std::move(*outcome.sample));
      start = end + 1;
    }
  REQUIRE(samples.size() == 2);
  for (const Snapshot &s : samples) {
    check_others_intact(s, 4);
    CHECK(s.gpus[4].lost_reason == std::string("GPU is lost"));
  }
}

TEST_CASE("CSV stream: rows short of the count by the GPUs named on stderr make a sample") {
  std::string text = fixture("csv/h100-8gpu-noheader-nounits.csv");
  std::vector<std::string> rows;
  for (std::size_t start = 0; start < text.size();) {
    std::size_t end = text.find('\n', start);
    rows.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  rows.erase(rows.begin() + 4);
  // Told before the rows: whole at the last row.
  CsvSampleAssembler told(CsvLayout::from_fields(query_fields()));
  told.set_unreadable_elsewhere(1);
  std::optional<Snapshot> sample;
  for (const std::string &row : rows) {
    auto outcome = told.add_line(row);
    CHECK_FALSE(outcome.error);
    if (outcome.sample)
      sample = std::move(outcome.sample);
  }
  REQUIRE(sample);
  CHECK(sample->gpus.size() == 7); // the decoder adds the GPU it was told of, with its bus id
  // Told late (stderr read after stdout): whole when the next sample begins, not dropped.
  CsvSampleAssembler late(CsvLayout::from_fields(query_fields()));
  for (const std::string &row : rows)
    CHECK_FALSE(late.add_line(row).sample);
  late.set_unreadable_elsewhere(1);
  auto next = late.add_line(rows[0]);
  CHECK_FALSE(next.error);
  REQUIRE(next.sample);
  CHECK(next.sample->gpus.size() == 7);
}

TEST_CASE("unreadable GPU lines before the rest of the output") {
  std::vector<UnreadableGpu> found;
  std::string_view text = "\n Unable to determine the device handle for GPU 0000:0B:00.0: Unknown "
                          "Error\n\nUnable to determine the device handle for GPU0000:07:00.0: GPU "
                          "is lost\n  <?xml version=\"1.0\" ?>\nUnable to determine";
  CHECK(after_unreadable_gpu_lines(text, &found) ==
        "<?xml version=\"1.0\" ?>\nUnable to determine");
  REQUIRE(found.size() == 2);
  CHECK(found[0].pci_bus_id == "0000:0B:00.0");
  CHECK(found[1].reason == "GPU is lost");
  CHECK(after_unreadable_gpu_lines(" \n\n").empty());
  CHECK(after_unreadable_gpu_lines("No devices were found\n") == "No devices were found");
}

TEST_CASE("XML output read in place: the same as read from a view, lines before it included") {
  std::string lines = "\n Unable to determine the device handle for GPU 0000:0B:00.0: Unknown "
                      "Error\n";
  for (const std::string &text :
       {lines + fixture("xml/h100-8gpu-lost-v12.xml") + "\n", fixture("xml/h100-8gpu-v12.xml"),
        lines + "No devices were found\n", std::string(" \n")}) {
    std::string expected, got;
    try {
      expected = format_json(read_xml_output(trim(text)));
    } catch (const ParseError &error) {
      expected = error.what();
    }
    std::string buffer = text;
    try {
      got = format_json(read_xml_output_in_place(buffer));
    } catch (const ParseError &error) {
      got = error.what();
    }
    CHECK(got == expected);
  }
}

} // namespace test_unreadable_gpu
