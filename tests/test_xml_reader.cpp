#include "nvsmi/gpu_state.hpp"
#include "nvsmi/quantity.hpp"
#include "nvsmi/timestamp.hpp"
#include "nvsmi/xml_reader.hpp"
#include "snapshot_builders.hpp"
#include "support.hpp"

#include <catch2/catch.hpp>

namespace test_xml_reader {

using namespace nvsmi;

namespace {

// A minimal document around one <gpu> body, for the drift cases.
Snapshot read_gpu_body(const std::string &body) {
  return read_xml("<?xml version=\"1.0\" ?>\n<nvidia_smi_log>\n<gpu id=\"00000000:3B:00.0\">\n" +
                  body + "\n</gpu>\n</nvidia_smi_log>\n");
}

} // namespace

TEST_CASE("8 GPUs, v12, processes on some") {
  Snapshot s = test::xml_fixture("xml/h100-8gpu-v12.xml");
  CHECK(s.source == Source::xml);
  CHECK(s.driver_version == std::string("550.54.15"));
  CHECK(s.cuda_version == std::string("12.4"));
  REQUIRE(s.timestamp);
  CHECK(to_iso8601(*s.timestamp) == "2024-03-12T14:03:27");
  REQUIRE(s.gpus.size() == 8);
  const std::int64_t used[] = {0, 512, 40960, 81000, 12, 20480, 65536, 7};
  const std::int64_t util[] = {0, 10, 95, 100, 3, 50, 99, 0};
  const std::int64_t mem_util[] = {0, 5, 60, 80, 0, 25, 70, 0};
  for (int i = 0; i < 8; ++i) {
    INFO("GPU " << i);
    const Gpu &gpu = s.gpus[i];
    char bus[32];
    std::snprintf(bus, sizeof bus, "00000000:%02X:00.0", 0x19 + 0x10 * i);
    CHECK(gpu.index == i);
    CHECK(gpu.name == std::string("NVIDIA H100 80GB HBM3"));
    CHECK(gpu.uuid == "GPU-00000000-0000-0000-0000-00000000000" + std::to_string(i));
    CHECK(gpu.pci_bus_id == std::string(bus));
    CHECK(gpu.temperature_c == 30 + i);
    CHECK(gpu.memory_total_mib == 81559);
    CHECK(gpu.memory_used_mib == used[i]);
    CHECK(gpu.memory_free_mib == 81559 - 329 - used[i]);
    CHECK(gpu.utilization_gpu_percent == util[i]);
    CHECK(gpu.utilization_memory_percent == mem_util[i]);
    CHECK(gpu.power_draw_w == Approx(68.25 + 40 * i));
    CHECK(gpu.power_limit_w == Approx(700.0));
    CHECK_FALSE(gpu.fan_speed_percent);
    CHECK(gpu.pstate == std::string("P0"));
    CHECK(gpu.clocks.graphics_mhz == 1980);
    CHECK(gpu.clocks.sm_mhz == 1980);
    CHECK(gpu.clocks.memory_mhz == 2619);
    CHECK(gpu.clocks.video_mhz == 1545);
    CHECK(gpu.mig_enabled == false);
    REQUIRE(gpu.mig_devices);
    CHECK(gpu.mig_devices->empty());
    REQUIRE(gpu.processes);
  }
  CHECK(s.gpus[0].processes->empty());
  REQUIRE(s.gpus[3].processes->size() == 2);
  const Process &torchrun = (*s.gpus[3].processes)[1];
  CHECK(torchrun.pid == 5002);
  CHECK(torchrun.name == std::string("/usr/bin/torchrun"));
  CHECK(torchrun.type == std::string("C"));
  CHECK(torchrun.used_memory_mib == 40990);
  CHECK_FALSE(torchrun.gpu_instance_id);
  REQUIRE(s.gpus[6].processes->size() == 1);
  CHECK((*s.gpus[6].processes)[0].name == std::string("vllm serve"));
}

TEST_CASE("MIG: devices listed, GPU-level utilization unknown") {
  Snapshot s = test::xml_fixture("xml/a100-mig-v12.xml");
  REQUIRE(s.gpus.size() == 1);
  const Gpu &gpu = s.gpus[0];
  CHECK(gpu.mig_enabled == true);
  CHECK_FALSE(gpu.utilization_gpu_percent);
  CHECK_FALSE(gpu.utilization_memory_percent);
  CHECK(gpu.memory_used_mib == 4033);
  CHECK(gpu.power_draw_w == Approx(88.14));
  CHECK(gpu.power_limit_w == Approx(400.0));
  REQUIRE(gpu.mig_devices);
  REQUIRE(gpu.mig_devices->size() == 2);
  const MigDevice &second = (*gpu.mig_devices)[1];
  CHECK(second.index == 1);
  CHECK(second.gpu_instance_id == 2);
  CHECK(second.compute_instance_id == 0);
  CHECK(second.memory_total_mib == 19968);
  CHECK(second.memory_used_mib == 4020);
  CHECK(second.memory_free_mib == 15948);
  REQUIRE(gpu.processes->size() == 1);
  CHECK((*gpu.processes)[0].gpu_instance_id == 2);
  CHECK((*gpu.processes)[0].used_memory_mib == 4000);
}

TEST_CASE("every reading unknown, each marker nvidia-smi prints") {
  Snapshot s = test::xml_fixture("xml/rtx4090-all-unknown-v13.xml");
  REQUIRE(s.gpus.size() == 1);
  const Gpu &gpu = s.gpus[0];
  CHECK(gpu.name == std::string("NVIDIA GeForce RTX 4090"));
  CHECK(gpu.uuid == std::string("GPU-00000000-0000-0000-0000-000000004090"));
  CHECK_FALSE(gpu.temperature_c);
  CHECK_FALSE(gpu.memory_total_mib);
  CHECK_FALSE(gpu.memory_used_mib);
  CHECK_FALSE(gpu.memory_free_mib);
  CHECK_FALSE(gpu.memory_used_percent());
  CHECK_FALSE(gpu.utilization_gpu_percent);
  CHECK_FALSE(gpu.utilization_memory_percent);
  CHECK_FALSE(gpu.power_draw_w);
  CHECK_FALSE(gpu.power_limit_w);
  CHECK_FALSE(gpu.fan_speed_percent);
  CHECK_FALSE(gpu.pstate);
  CHECK_FALSE(gpu.clocks.graphics_mhz);
  CHECK_FALSE(gpu.clocks.sm_mhz);
  CHECK_FALSE(gpu.clocks.memory_mhz);
  CHECK_FALSE(gpu.clocks.video_mhz);
}

TEST_CASE("schema v10 without DOCTYPE: old power block, throttle reasons, two GPUs") {
  Snapshot s = test::xml_fixture("xml/gtx1080ti-2gpu-v10-nodoctype.xml");
  CHECK(s.driver_version == std::string("410.79"));
  CHECK(s.cuda_version == std::string("10.0"));
  REQUIRE(s.gpus.size() == 2);
  const Gpu &busy = s.gpus[0];
  CHECK(busy.temperature_c == 51);
  CHECK(busy.fan_speed_percent == 35);
  CHECK(busy.pstate == std::string("P2"));
  CHECK(busy.memory_total_mib == 11178);
  CHECK(busy.memory_used_mib == 10240);
  CHECK(busy.utilization_gpu_percent == 87);
  CHECK(busy.power_draw_w == Approx(201.37));
  CHECK(busy.power_limit_w == Approx(250.0));
  CHECK(busy.clocks.memory_mhz == 5505);
  REQUIRE(busy.processes->size() == 2);
  CHECK((*busy.processes)[0].type == std::string("G"));
  CHECK((*busy.processes)[1].used_memory_mib == 10210);
  CHECK(busy.clock_event_reasons_active.has_value());
  CHECK(s.gpus[1].pci_bus_id == std::string("00000000:81:00.0"));
  CHECK(s.gpus[1].power_draw_w == Approx(9.84));
}

TEST_CASE("Windows, CRLF: the GPU's power, never the module's") {
  Snapshot s = test::xml_fixture("xml/rtx4080-windows-v13.xml");
  REQUIRE(s.gpus.size() == 1);
  const Gpu &gpu = s.gpus[0];
  CHECK(gpu.name == std::string("NVIDIA GeForce RTX 4080 SUPER"));
  CHECK(gpu.power_draw_w == Approx(61.20));
  CHECK(gpu.power_limit_w == Approx(320.0));
  CHECK(gpu.memory_used_mib == 3391);
  REQUIRE(gpu.processes->size() == 2);
  CHECK_FALSE((*gpu.processes)[0].used_memory_mib); // WDDM does not say
  CHECK((*gpu.processes)[1].name ==
        std::string(R"(C:\Program Files\Blender Foundation\Blender 4.2\blender.exe)"));
}

TEST_CASE("power element drift: power_draw, then average, then instant") {
  auto draw = [](const std::string &readings) {
    return read_gpu_body("<gpu_power_readings>" + readings + "</gpu_power_readings>")
        .gpus[0]
        .power_draw_w;
  };
  CHECK(draw("<power_draw>10.00 W</power_draw><average_power_draw>20.00 W</average_power_draw>") ==
        Approx(10.0));
  CHECK(draw("<average_power_draw>20.00 W</average_power_draw>"
             "<instant_power_draw>30.00 W</instant_power_draw>") == Approx(20.0));
  CHECK(draw("<average_power_draw>N/A</average_power_draw>"
             "<instant_power_draw>30.00 W</instant_power_draw>") == Approx(30.0));
  // Old drivers: <power_readings>.
  Snapshot old = read_gpu_body("<power_readings><power_draw>5.50 W</power_draw>"
                               "<power_limit>75.00 W</power_limit></power_readings>");
  CHECK(old.gpus[0].power_draw_w == Approx(5.5));
  CHECK(old.gpus[0].power_limit_w == Approx(75.0));
}

TEST_CASE("power limit drift: current, then enforced, then power_limit") {
  Snapshot s = read_gpu_body("<power_readings><power_limit>250.00 W</power_limit>"
                             "<enforced_power_limit>200.00 W</enforced_power_limit>"
                             "</power_readings>");
  CHECK(s.gpus[0].power_limit_w == Approx(200.0));
  s = read_gpu_body("<gpu_power_readings><current_power_limit>150.00 W</current_power_limit>"
                    "<enforced_power_limit>200.00 W</enforced_power_limit></gpu_power_readings>");
  CHECK(s.gpus[0].power_limit_w == Approx(150.0));
}

TEST_CASE("module power alone is not the GPU's power") {
  Snapshot s = read_gpu_body("<module_power_readings><power_draw>900.00 W</power_draw>"
                             "<current_power_limit>1000.00 W</current_power_limit>"
                             "</module_power_readings>");
  CHECK_FALSE(s.gpus[0].power_draw_w);
  CHECK_FALSE(s.gpus[0].power_limit_w);
}

TEST_CASE("clock event reasons, under either name") {
  Snapshot event = read_gpu_body(
      "<clocks_event_reasons><clocks_event_reason_gpu_idle>Active</clocks_event_reason_gpu_idle>"
      "<clocks_event_reason_sw_power_cap>Not Active</clocks_event_reason_sw_power_cap>"
      "</clocks_event_reasons>");
  CHECK(event.gpus[0].clock_event_reasons_active == std::vector<std::string>{"gpu_idle"});
  Snapshot throttle =
      read_gpu_body("<clocks_throttle_reasons><clocks_throttle_reason_sw_power_cap>Active"
                    "</clocks_throttle_reason_sw_power_cap></clocks_throttle_reasons>");
  CHECK(throttle.gpus[0].clock_event_reasons_active == std::vector<std::string>{"sw_power_cap"});
  CHECK_FALSE(read_gpu_body("").gpus[0].clock_event_reasons_active);
}

// Each reason is read from its own element as the walk of the block meets it, not looked up again
// by its name (which found the first of a name): a reason named twice reads each its own value.
TEST_CASE("clock event reasons: a reason named twice reads each its own value") {
  Snapshot s = read_gpu_body(
      "<clocks_event_reasons>"
      "<clocks_event_reason_sw_power_cap>Not Active</clocks_event_reason_sw_power_cap>"
      "<clocks_event_reason_gpu_idle>N/A</clocks_event_reason_gpu_idle>"
      "<clocks_event_reason_sw_power_cap>Active</clocks_event_reason_sw_power_cap>"
      "</clocks_event_reasons>");
  CHECK(s.gpus[0].clock_event_reasons_reported ==
        std::vector<std::string>{"sw_power_cap", "sw_power_cap"});
  CHECK(s.gpus[0].clock_event_reasons_active == std::vector<std::string>{"sw_power_cap"});
}

TEST_CASE("missing elements are unknown; unknown elements are ignored") {
  Snapshot s =
      read_gpu_body("<product_name>X</product_name><future_thing><a>1 MiB</a></future_thing>");
  const Gpu &gpu = s.gpus[0];
  CHECK(gpu.name == std::string("X"));
  CHECK(gpu.pci_bus_id == std::string("00000000:3B:00.0")); // from <gpu id>, as v10 has it
  CHECK_FALSE(gpu.memory_total_mib);
  CHECK_FALSE(gpu.processes); // no <processes>: unknown, not "none"
  CHECK_FALSE(gpu.mig_devices);
  CHECK_FALSE(s.timestamp);
  CHECK_FALSE(s.driver_version);
}

// The reader lists a <gpu>'s children once and looks names up in that list (pugixml's own list
// past 48 children): it must find what pugi::xml_node::child finds, the first of a name, among
// names that begin alike (<processes>, <product_name>), with few children or many, in both modes.
TEST_CASE("a child named twice is read from its first, among few children or many") {
  for (int padding : {0, 60}) {
    std::string body = "<processes></processes><product_name>First</product_name>"
                       "<temperature><gpu_temp>41 C</gpu_temp></temperature>"
                       "<product_name>Second</product_name>";
    for (int i = 0; i < padding; ++i)
      body += "<temperature><gpu_temp>" + std::to_string(50 + i) + " C</gpu_temp></temperature>";
    std::string document = "<?xml version=\"1.0\" ?>\n<nvidia_smi_log>\n<gpu id=\"1\">\n" + body +
                           "\n</gpu>\n</nvidia_smi_log>\n";
    INFO(padding << " more children");
    Snapshot s = read_xml(document);
    REQUIRE(s.gpus.size() == 1);
    CHECK(s.gpus[0].name == std::string("First"));
    CHECK(s.gpus[0].temperature_c == 41);
    REQUIRE(s.gpus[0].processes);
    CHECK(s.gpus[0].processes->empty());
  }
}

TEST_CASE("a document with no GPUs is an empty snapshot") {
  Snapshot s = read_xml("<nvidia_smi_log><attached_gpus>0</attached_gpus></nvidia_smi_log>");
  CHECK(s.gpus.empty());
}

TEST_CASE("broken input is a ParseError with a reason") {
  CHECK_THROWS_WITH(read_xml(test::read_file(test::fixture_path("broken/truncated.xml"))),
                    Catch::Contains("not well-formed XML"));
  CHECK_THROWS_AS(read_xml(""), ParseError);
  CHECK_THROWS_WITH(read_xml(test::read_file(test::fixture_path("broken/wrong-root.xml"))),
                    Catch::Contains("<html>"));
  CHECK_THROWS_AS(read_xml(test::read_file(test::fixture_path("broken/garbage.bin"))), ParseError);
  CHECK_THROWS_WITH(read_xml(test::read_file(test::fixture_path("broken/bad-unit.xml"))),
                    Catch::Contains("fb_memory_usage/total") && Catch::Contains("KiB"));
}

TEST_CASE("entities in a DOCTYPE are not expanded") {
  Snapshot s = read_xml("<?xml version=\"1.0\"?><!DOCTYPE nvidia_smi_log [<!ENTITY big "
                        "\"AAAAAAAAAAAAAAAA\">]><nvidia_smi_log><gpu><product_name>&big;"
                        "</product_name></gpu></nvidia_smi_log>");
  CHECK(s.gpus[0].name == std::string("&big;"));
}

TEST_CASE("XML: [GPU is lost] in any reading the reader reads marks the GPU lost, as in CSV") {
  std::string xml = test::read_file(test::fixture_path("xml/h100-8gpu-v12.xml"));
  // None of these is a reading the reader looked at for a lost GPU before: the identity, core
  // readings, clocks and power were.
  for (const char *element :
       {"ecc_errors", "pci", "memory_temp", "clocks_event_reasons", "remapped_rows"}) {
    std::string lost = test::with_lost_readings(xml, 4, element);
    INFO(element);
    Snapshot s = read_xml(lost);
    REQUIRE(s.gpus.size() == 8);
    CHECK(s.gpus[4].lost_reason == std::string("GPU is lost"));
    CHECK(gpu_state(s.gpus[4]) == GpuState::lost);
    // Its own readings are still read: only the marked ones are unknown.
    CHECK(s.gpus[4].temperature_c == 34);
    for (int i : {0, 1, 2, 3, 5, 6, 7})
      CHECK_FALSE(s.gpus[i].lost_reason);
  }
}

// The reader looks at every reading for a marker only where the document could hold one: a
// space before an 'l' or 'r' in either case, or a character reference, which could write it.
TEST_CASE("XML: a marker in any case, or written with character references, marks the GPU lost") {
  // In <gpu_recovery_action>, a word the reader reads as it is, not a core reading.
  const std::string head = "<?xml version=\"1.0\" ?>\n<nvidia_smi_log>\n<gpu id=\"1\">\n"
                           "<product_name>X</product_name><gpu_recovery_action>";
  const std::string tail = "</gpu_recovery_action>\n</gpu>\n</nvidia_smi_log>\n";
  const std::vector<std::pair<std::string, std::string>> markers = {
      {"GPU is lost", "GPU is lost"},
      {"[gpu IS LOST]", "GPU is lost"},
      {"GPU Requires RESET", "GPU requires reset"},
      {"GPU&#32;is&#32;lost", "GPU is lost"},
      {"GPU&#x20;requires&#x20;reset", "GPU requires reset"},
      {"GPU is&#x20;Lost", "GPU is lost"},
  };
  for (const auto &[written, reason] : markers) {
    INFO(written);
    Snapshot s = read_xml(head + written + tail);
    REQUIRE(s.gpus.size() == 1);
    CHECK(s.gpus[0].lost_reason == reason);
  }
  // Without one, nothing is: "GPU-lost", "GPUis lost", "lost" alone.
  for (const char *written : {"GPU-lost", "GPUis lost", "lost"})
    CHECK_FALSE(read_xml(head + written + tail).gpus.at(0).lost_reason);
}

TEST_CASE("XML: a process named [GPU is lost] does not mark its GPU lost") {
  // A local user names a process as they like; nvidia-smi prints the name in the GPU's block.
  std::string xml = test::read_file(test::fixture_path("xml/h100-8gpu-v12.xml"));
  const std::string python = "<process_name>python3</process_name>";
  std::size_t at = xml.find(python);
  REQUIRE(at != std::string::npos);
  xml.replace(at, python.size(), "<process_name>[GPU is lost]</process_name>");
  for (const Gpu &gpu : read_xml(xml).gpus) {
    INFO("GPU " << gpu.index);
    CHECK_FALSE(gpu.lost_reason);
    CHECK(gpu_state(gpu) != GpuState::lost);
  }
}

TEST_CASE("XML: a lost marker 200000 levels deep in a read element is found without recursion") {
  const int depth = 200000;
  std::string open, close;
  for (int i = 0; i < depth; ++i) {
    open += "<a>";
    close += "</a>";
  }
  std::string document = "<nvidia_smi_log><gpu><product_name>X</product_name><ecc_errors>" + open +
                         "[GPU is lost]" + close + "</ecc_errors></gpu></nvidia_smi_log>";
  Snapshot s = read_xml(document);
  REQUIRE(s.gpus.size() == 1);
  CHECK(s.gpus[0].lost_reason == std::string("GPU is lost"));
}

TEST_CASE("the PCIe replay counter: the real H200 recording's XML") {
  const std::string folder = "recorded/nvidia-h200__580.159.04/";
  std::string xml = test::read_file(test::fixture_path(folder + "query.xml"));
  Snapshot read = read_xml(xml);
  REQUIRE(read.gpus.size() == 1);
  CHECK(read.gpus[0].health.pcie_replay_count == Reading(1));
  const std::string recorded = "<replay_counter>1</replay_counter>";
  REQUIRE(xml.find(recorded) != std::string::npos);
  auto with_counter = [&](const std::string &value) {
    std::string changed = xml;
    changed.replace(changed.find(recorded), recorded.size(),
                    "<replay_counter>" + value + "</replay_counter>");
    return changed;
  };
  CHECK_FALSE(read_xml(with_counter("N/A")).gpus[0].health.pcie_replay_count);
  CHECK_FALSE(read_xml(with_counter("")).gpus[0].health.pcie_replay_count);
  CHECK_THROWS_AS(read_xml(with_counter("12abc")), ParseError);
  CHECK_THROWS_AS(read_xml(with_counter("-1")), ParseError);
}

} // namespace test_xml_reader
