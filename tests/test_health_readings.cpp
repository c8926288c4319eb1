// The fleet-health readings (GpuHealth, the clock event reasons) of every corpus file and of the
// fixtures, each expected value read by hand from the file; and the input they must refuse.
#include "nvsmi/csv_reader.hpp"
#include "nvsmi/gpu_state.hpp"
#include "nvsmi/quantity.hpp"
#include "nvsmi/xml_reader.hpp"
#include "snapshot_builders.hpp"
#include "support.hpp"

#include <catch2/catch.hpp>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace test_health_readings {

using namespace nvsmi;

namespace {

using Reasons = std::vector<std::string>;

const Reasons all_nine{"gpu_idle",    "applications_clocks_setting", "sw_power_cap",
                       "hw_slowdown", "hw_thermal_slowdown",         "hw_power_brake_slowdown",
                       "sync_boost",  "sw_thermal_slowdown",         "display_clocks_setting"};
// The CSV bitmask 0x1FF, in NVML's bit order.
const Reasons all_nine_bits{"gpu_idle",
                            "applications_clocks_setting",
                            "sw_power_cap",
                            "hw_slowdown",
                            "sync_boost",
                            "sw_thermal_slowdown",
                            "hw_thermal_slowdown",
                            "hw_power_brake_slowdown",
                            "display_clocks_setting"};

// The corpus file's text, or nullopt (with a warning) where the corpus is not beside the project.
std::optional<std::string> corpus_file(const std::string &relative) {
  std::string path = std::string(CORPUS_DIR) + "/" + relative;
  if (!std::filesystem::exists(path)) {
    WARN("skipped: no " << path << " (the shared corpus is not beside the project)");
    return std::nullopt;
  }
  return test::read_file(path);
}

// The one GPU of a corpus XML file.
std::optional<Gpu> corpus_xml_gpu(const std::string &name) {
  std::optional<std::string> document = corpus_file("xml/" + name);
  if (!document)
    return std::nullopt;
  Snapshot snapshot = read_xml(*document);
  REQUIRE(snapshot.gpus.size() == 1);
  return snapshot.gpus[0];
}

std::optional<Gpu> corpus_csv_gpu(const std::string &name) {
  std::optional<std::string> document = corpus_file("csv/" + name);
  if (!document)
    return std::nullopt;
  Snapshot snapshot = read_csv(*document);
  REQUIRE(snapshot.gpus.size() == 1);
  return snapshot.gpus[0];
}

void check_health(const GpuHealth &actual, const GpuHealth &expected) {
  CHECK(actual.ecc_enabled == expected.ecc_enabled);
  CHECK(actual.ecc_pending_enabled == expected.ecc_pending_enabled);
  CHECK(actual.ecc_volatile.corrected == expected.ecc_volatile.corrected);
  CHECK(actual.ecc_volatile.uncorrected == expected.ecc_volatile.uncorrected);
  CHECK(actual.ecc_aggregate.corrected == expected.ecc_aggregate.corrected);
  CHECK(actual.ecc_aggregate.uncorrected == expected.ecc_aggregate.uncorrected);
  CHECK(actual.retired_pages_single_bit == expected.retired_pages_single_bit);
  CHECK(actual.retired_pages_double_bit == expected.retired_pages_double_bit);
  CHECK(actual.retired_pages_pending == expected.retired_pages_pending);
  CHECK(actual.remapped_rows_correctable == expected.remapped_rows_correctable);
  CHECK(actual.remapped_rows_uncorrectable == expected.remapped_rows_uncorrectable);
  CHECK(actual.remapped_rows_pending == expected.remapped_rows_pending);
  CHECK(actual.remapped_rows_failure == expected.remapped_rows_failure);
  CHECK(actual.pcie_link_gen == expected.pcie_link_gen);
  CHECK(actual.pcie_link_gen_max == expected.pcie_link_gen_max);
  CHECK(actual.pcie_link_width == expected.pcie_link_width);
  CHECK(actual.pcie_link_width_max == expected.pcie_link_width_max);
  CHECK(actual.temperature_slowdown_c == expected.temperature_slowdown_c);
  CHECK(actual.temperature_shutdown_c == expected.temperature_shutdown_c);
  CHECK(actual.recovery_action == expected.recovery_action);
}

EccErrorCounts zero_errors() {
  EccErrorCounts counts;
  counts.corrected = counts.uncorrected = 0;
  return counts;
}

void link(GpuHealth &health, int gen, int gen_max, int width, int width_max) {
  health.pcie_link_gen = gen;
  health.pcie_link_gen_max = gen_max;
  health.pcie_link_width = width;
  health.pcie_link_width_max = width_max;
}

// The XML's tx_util/rx_util in KB/s (nvidia-smi's KiB/s), kept as bytes per second.
void check_throughput(const Gpu &gpu, std::int64_t tx_kib, std::int64_t rx_kib) {
  CHECK(gpu.pcie_tx_bytes_per_second == tx_kib * 1024);
  CHECK(gpu.pcie_rx_bytes_per_second == rx_kib * 1024);
}

void thresholds(GpuHealth &health, int slowdown, int shutdown) {
  health.temperature_slowdown_c = slowdown;
  health.temperature_shutdown_c = shutdown;
}

void remapped(GpuHealth &health, int correctable, int uncorrectable, bool pending, bool failure) {
  health.remapped_rows_correctable = correctable;
  health.remapped_rows_uncorrectable = uncorrectable;
  health.remapped_rows_pending = pending;
  health.remapped_rows_failure = failure;
}

void ecc_on_no_errors(GpuHealth &health) {
  health.ecc_enabled = health.ecc_pending_enabled = true;
  health.ecc_volatile = health.ecc_aggregate = zero_errors();
}

std::string one_gpu(const std::string &inside) {
  return "<?xml version=\"1.0\" ?>\n<nvidia_smi_log><gpu id=\"00000000:01:00.0\">" + inside +
         "</gpu></nvidia_smi_log>";
}

} // namespace

// ---- XML, every corpus file ----

TEST_CASE("health: gtx-1070-ti (v10, trimmed by hand) has a link and nothing else") {
  std::optional<Gpu> gpu = corpus_xml_gpu("telegraf__gtx-1070-ti.xml");
  if (!gpu)
    return;
  GpuHealth expected;
  expected.pcie_link_gen = 1;
  expected.pcie_link_width = 16;
  check_health(gpu->health, expected);
  CHECK_FALSE(gpu->clock_event_reasons_reported);
  CHECK_FALSE(gpu->clock_event_reasons_active);
  CHECK(gpu->pstate == std::string("P8"));
}

TEST_CASE("health: gtx-1660-ti (418, no DOCTYPE, layout B all N/A)") {
  std::optional<Gpu> gpu = corpus_xml_gpu("telegraf__gtx-1660-ti.xml");
  if (!gpu)
    return;
  GpuHealth expected; // ECC, retired pages N/A; no remapped_rows element
  link(expected, 1, 3, 16, 16);
  thresholds(expected, 93, 96);
  check_health(gpu->health, expected);
  check_throughput(*gpu, 0, 0);
  CHECK(gpu->clock_event_reasons_reported == all_nine);
  CHECK(gpu->clock_event_reasons_active == Reasons{"gpu_idle"});
}

TEST_CASE("health: quadro-p400 (418, no DOCTYPE, layout A all N/A)") {
  std::optional<Gpu> gpu = corpus_xml_gpu("telegraf__quadro-p400.xml");
  if (!gpu)
    return;
  GpuHealth expected;
  link(expected, 1, 3, 16, 16);
  thresholds(expected, 100, 103);
  check_health(gpu->health, expected);
  check_throughput(*gpu, 0, 0);
  CHECK(gpu->clock_event_reasons_active == Reasons{"gpu_idle"});
}

TEST_CASE("health: a10g (v11, 515): remapped rows as a container, an x8 link") {
  std::optional<Gpu> gpu = corpus_xml_gpu("telegraf__a10g.xml");
  if (!gpu)
    return;
  GpuHealth expected;
  ecc_on_no_errors(expected);
  remapped(expected, 0, 0, false, false);
  link(expected, 1, 4, 8, 16);
  thresholds(expected, 95, 98);
  check_health(gpu->health, expected);
  check_throughput(*gpu, 0, 0);
  CHECK(gpu->clock_event_reasons_reported == all_nine);
  CHECK(gpu->clock_event_reasons_active == Reasons{"gpu_idle"});
  CHECK(gpu->pstate == std::string("P8"));
}

TEST_CASE("health: tesla-t4 (v11, 515): retired pages 0/0, none pending") {
  std::optional<Gpu> gpu = corpus_xml_gpu("telegraf__tesla-t4.xml");
  if (!gpu)
    return;
  GpuHealth expected;
  ecc_on_no_errors(expected);
  expected.retired_pages_single_bit = 0;
  expected.retired_pages_double_bit = 0;
  expected.retired_pages_pending = false;
  link(expected, 3, 3, 8, 16);
  thresholds(expected, 93, 96);
  check_health(gpu->health, expected);
  check_throughput(*gpu, 0, 0);
  CHECK(gpu->clock_event_reasons_reported == all_nine);
  CHECK(gpu->clock_event_reasons_active == Reasons{});
  CHECK(gpu->pstate == std::string("P0"));
}

TEST_CASE("health: quadro-p2000-v12 (525, layout A all N/A, remapped rows N/A)") {
  std::optional<Gpu> gpu = corpus_xml_gpu("telegraf__quadro-p2000-v12.xml");
  if (!gpu)
    return;
  GpuHealth expected;
  link(expected, 1, 3, 8, 16);
  thresholds(expected, 101, 104);
  check_health(gpu->health, expected);
  check_throughput(*gpu, 0, 0);
  CHECK(gpu->clock_event_reasons_active == Reasons{"gpu_idle"});
}

TEST_CASE("health: rtx-3090-v12 (525, the last clocks_throttle_reasons)") {
  std::optional<Gpu> gpu = corpus_xml_gpu("telegraf__rtx-3090-v12.xml");
  if (!gpu)
    return;
  GpuHealth expected;
  link(expected, 1, 4, 16, 16);
  thresholds(expected, 95, 98);
  check_health(gpu->health, expected);
  check_throughput(*gpu, 0, 0);
  CHECK(gpu->clock_event_reasons_reported == all_nine);
  CHECK(gpu->clock_event_reasons_active == Reasons{"gpu_idle"});
}

TEST_CASE("health: a100-sxm4-v12 (535, MIG): remapped rows N/A, gpu_reset_status No/No") {
  std::optional<Gpu> gpu = corpus_xml_gpu("telegraf__a100-sxm4-v12.xml");
  if (!gpu)
    return;
  GpuHealth expected;
  ecc_on_no_errors(expected);
  link(expected, 4, 4, 16, 16);
  thresholds(expected, 89, 92);
  expected.recovery_action = "None";
  check_health(gpu->health, expected);
  check_throughput(*gpu, 4000, 0);
  CHECK(gpu->clock_event_reasons_reported == all_nine);
  CHECK(gpu->clock_event_reasons_active == Reasons{});
  CHECK(gpu->pstate == std::string("P0"));
}

TEST_CASE("health: a MIG device's ECC counts are not the GPU's") {
  std::optional<std::string> document = corpus_file("xml/telegraf__a100-sxm4-v12.xml");
  if (!document)
    return;
  // Every sram_uncorrectable under mig_devices (4 slices) set to 7: the GPU's own stay 0.
  std::size_t mig = document->find("<mig_devices>");
  std::size_t mig_end = document->find("</mig_devices>");
  REQUIRE(mig != std::string::npos);
  REQUIRE(mig_end != std::string::npos);
  const std::string zero = "<sram_uncorrectable>0</sram_uncorrectable>";
  int replaced = 0;
  for (std::size_t at = document->find(zero, mig); at < mig_end; at = document->find(zero, at)) {
    document->replace(at, zero.size(), "<sram_uncorrectable>7</sram_uncorrectable>");
    ++replaced;
  }
  CHECK(replaced == 4);
  const GpuHealth health = read_xml(*document).gpus.at(0).health;
  CHECK(health.ecc_volatile.uncorrected == 0);
  CHECK(health.ecc_aggregate.uncorrected == 0);
}

TEST_CASE("health: rtx-3080-v12 (536 Windows): gpu_reset_status half N/A is no action") {
  std::optional<Gpu> gpu = corpus_xml_gpu("telegraf__rtx-3080-v12.xml");
  if (!gpu)
    return;
  GpuHealth expected; // reset_required No, drain_and_reset_recommended N/A
  link(expected, 4, 4, 16, 16);
  thresholds(expected, 95, 98);
  check_health(gpu->health, expected);
  check_throughput(*gpu, 1000, 6000);
  CHECK(gpu->clock_event_reasons_active == Reasons{"gpu_idle"});
}

TEST_CASE("health: rtx-3060-v12 (570, layout C): gpu_recovery_action over a deprecated status") {
  std::optional<Gpu> gpu = corpus_xml_gpu("telegraf__rtx-3060-v12.xml");
  if (!gpu)
    return;
  GpuHealth expected;
  link(expected, 1, 4, 16, 16);
  thresholds(expected, 95, 98);
  expected.recovery_action = "None";
  check_health(gpu->health, expected);
  check_throughput(*gpu, 550, 500);
  CHECK(gpu->clock_event_reasons_reported == all_nine);
  CHECK(gpu->clock_event_reasons_active == Reasons{"gpu_idle"});
}

TEST_CASE("health: rtx-3080-v13 (595.58)") {
  std::optional<Gpu> gpu = corpus_xml_gpu("telegraf__rtx-3080-v13.xml");
  if (!gpu)
    return;
  GpuHealth expected;
  link(expected, 4, 4, 16, 16);
  thresholds(expected, 95, 98);
  expected.recovery_action = "None";
  check_health(gpu->health, expected);
  check_throughput(*gpu, 1066699, 14742333);
  CHECK(gpu->clock_event_reasons_reported == all_nine);
  CHECK(gpu->clock_event_reasons_active == Reasons{});
  CHECK(gpu->pstate == std::string("P2"));
}

TEST_CASE("health: rtx-4000-sff-ada-v13 (595.84): T.Limit thresholds are no absolute ones") {
  std::optional<Gpu> gpu = corpus_xml_gpu("telegraf__rtx-4000-sff-ada-v13.xml");
  if (!gpu)
    return;
  GpuHealth expected;
  expected.ecc_enabled = expected.ecc_pending_enabled = false;
  remapped(expected, 0, 0, false, false);
  link(expected, 1, 4, 16, 16);
  expected.recovery_action = "None";
  check_health(gpu->health, expected);
  check_throughput(*gpu, 830, 439);
  CHECK(gpu->clock_event_reasons_active == Reasons{"gpu_idle"});
}

// ---- CSV, every corpus file ----

TEST_CASE("health: corpus CSV, RTX 2080 SUPER Linux 595.71: bitmask 0x4 is sw_power_cap") {
  for (const char *state : {"idle", "load"}) {
    std::optional<Gpu> gpu = corpus_csv_gpu(
        std::string("exporter__linux-x86_64__nvidia-geforce-rtx-2080-super__595.71.05__") + state +
        ".csv");
    if (!gpu)
      return;
    INFO(state);
    bool idle = std::string(state) == "idle";
    GpuHealth expected; // ECC, retired pages, remapped rows [N/A]
    link(expected, idle ? 1 : 3, 3, 16, 16);
    expected.recovery_action = "None";
    check_health(gpu->health, expected);
    CHECK(gpu->clock_event_reasons_reported == all_nine_bits);
    CHECK(gpu->clock_event_reasons_active == (idle ? Reasons{"sw_power_cap"} : Reasons{}));
  }
}

TEST_CASE("health: corpus CSV, L40S 595.80: ECC on, remapped rows 0/0/No/No") {
  for (const char *state : {"idle", "load"}) {
    std::optional<Gpu> gpu = corpus_csv_gpu(
        std::string("exporter__linux-x86_64__nvidia-l40s__595.80__") + state + ".csv");
    if (!gpu)
      return;
    INFO(state);
    GpuHealth expected;
    ecc_on_no_errors(expected);
    remapped(expected, 0, 0, false, false);
    link(expected, 4, 4, 16, 16);
    expected.recovery_action = "None";
    check_health(gpu->health, expected);
    CHECK(gpu->clock_event_reasons_reported == all_nine_bits);
    CHECK(gpu->clock_event_reasons_active == Reasons{});
  }
}

TEST_CASE("health: corpus CSV, RTX 2080 SUPER Windows 591.86: bitmask 0x1 is gpu_idle") {
  for (const char *state : {"idle", "load"}) {
    std::optional<Gpu> gpu = corpus_csv_gpu(
        std::string("exporter__windows-x86_64__nvidia-geforce-rtx-2080-super__591.86__") + state +
        ".csv");
    if (!gpu)
      return;
    INFO(state);
    GpuHealth expected;
    link(expected, 3, 3, 16, 16);
    expected.recovery_action = "None";
    check_health(gpu->health, expected);
    CHECK(gpu->clock_event_reasons_active == Reasons{"gpu_idle"});
  }
}

// ---- fixtures ----

TEST_CASE("health: h100-8gpu-failing, XML and CSV") {
  Snapshot xml = test::xml_fixture("xml/h100-8gpu-failing-v12.xml");
  Snapshot csv = read_csv(test::read_file(test::fixture_path("csv/h100-8gpu-failing.csv")));
  REQUIRE(xml.gpus.size() == 8);
  REQUIRE(csv.gpus.size() == 8);
  for (const Snapshot *snapshot : {&xml, &csv}) {
    INFO((snapshot->source == Source::xml ? "xml" : "csv"));
    const std::vector<Gpu> &gpus = snapshot->gpus;
    const GpuHealth &ecc = gpus[3].health;
    CHECK(gpus[3].pci_bus_id == std::string("00000000:49:00.0"));
    CHECK(ecc.ecc_volatile.uncorrected == 2);
    CHECK(ecc.ecc_aggregate.uncorrected == 2);
    CHECK(ecc.ecc_volatile.corrected == 0);
    CHECK(ecc.remapped_rows_uncorrectable == 1);
    CHECK(ecc.remapped_rows_pending == true);
    CHECK(ecc.remapped_rows_failure == false);
    CHECK(gpu_state(gpus[3]) == GpuState::failing);

    CHECK(gpus[5].health.pcie_link_width == 8);
    CHECK(gpus[5].health.pcie_link_width_max == 16);
    CHECK(gpus[5].health.pcie_link_gen == 5);
    CHECK(gpus[5].utilization_gpu_percent == 80);

    REQUIRE(gpus[6].clock_event_reasons_active);
    CHECK(*gpus[6].clock_event_reasons_active == Reasons{"hw_thermal_slowdown"});

    for (int i : {0, 1, 2, 4, 7}) {
      INFO("GPU " << i);
      CHECK(gpus[i].health.ecc_volatile.uncorrected == 0);
      CHECK(gpus[i].health.remapped_rows_pending == false);
      CHECK(gpus[i].health.pcie_link_width == 16);
      CHECK_FALSE(gpu_failure(gpus[i]));
    }
  }
}

// A CSV fixture says what its XML twin says, but for what only the XML has (throughput, the
// thresholds, the recovery action the agent does not ask for).
TEST_CASE("health: the CSV fixtures agree with their XML twins") {
  struct Twin {
    const char *xml, *csv;
  };
  for (Twin twin : {Twin{"xml/h100-8gpu-v12.xml", "csv/h100-8gpu.csv"},
                    Twin{"xml/h100-8gpu-v12.xml", "csv/h100-8gpu-nounits.csv"},
                    Twin{"xml/h100-8gpu-failing-v12.xml", "csv/h100-8gpu-failing.csv"},
                    Twin{"xml/rtx4080-windows-v13.xml", "csv/rtx4080-windows-crlf.csv"}}) {
    INFO(twin.csv);
    Snapshot xml = test::xml_fixture(twin.xml);
    Snapshot csv = read_csv(test::read_file(test::fixture_path(twin.csv)));
    REQUIRE(xml.gpus.size() == csv.gpus.size());
    for (std::size_t i = 0; i < xml.gpus.size(); ++i) {
      INFO("GPU " << i);
      GpuHealth expected = xml.gpus[i].health;
      expected.temperature_slowdown_c = expected.temperature_shutdown_c = std::nullopt;
      expected.recovery_action = std::nullopt;
      check_health(csv.gpus[i].health, expected);
      CHECK(csv.gpus[i].clock_event_reasons_active == xml.gpus[i].clock_event_reasons_active);
      REQUIRE(csv.gpus[i].clock_event_reasons_reported);
      CHECK(csv.gpus[i].clock_event_reasons_reported->size() == 9);
    }
  }
  // The headerless one is read with query_fields() as its columns.
  Snapshot noheader =
      read_csv(test::read_file(test::fixture_path("csv/h100-8gpu-noheader-nounits.csv")));
  CHECK(noheader.gpus.at(0).health.pcie_link_gen_max == 5);
  CHECK(noheader.gpus.at(0).clock_event_reasons_active == Reasons{"gpu_idle"});
}

TEST_CASE("health: every marker of no reading is nullopt, in both sources") {
  Snapshot csv = read_csv(test::read_file(test::fixture_path("csv/rtx4090-all-unknown.csv")));
  check_health(csv.gpus.at(0).health, GpuHealth{});
  CHECK_FALSE(csv.gpus.at(0).clock_event_reasons_reported);
  CHECK_FALSE(csv.gpus.at(0).clock_event_reasons_active);
  Snapshot xml = test::xml_fixture("xml/rtx4090-all-unknown-v13.xml");
  const GpuHealth &health = xml.gpus.at(0).health;
  CHECK_FALSE(health.ecc_enabled);
  CHECK_FALSE(health.ecc_volatile.uncorrected);
  CHECK_FALSE(health.remapped_rows_pending);
  CHECK_FALSE(xml.gpus.at(0).pcie_tx_bytes_per_second);
}

// ---- forms the corpus has no example of ----

TEST_CASE("health: layout A reads nvidia-smi's totals, not a sum of its units") {
  std::string scope = "<single_bit><device_memory>1</device_memory><register_file>1"
                      "</register_file><total>3</total></single_bit><double_bit><device_memory>"
                      "N/A</device_memory><total>1</total></double_bit>";
  GpuHealth health = read_xml(one_gpu("<ecc_errors><volatile>" + scope + "</volatile><aggregate>" +
                                      scope + "</aggregate></ecc_errors>"))
                         .gpus.at(0)
                         .health;
  CHECK(health.ecc_volatile.corrected == 3);
  CHECK(health.ecc_volatile.uncorrected == 1);
  CHECK(health.ecc_aggregate.corrected == 3);
}

TEST_CASE("health: layout C sums parity, SEC-DED and DRAM, never the threshold or sources") {
  GpuHealth health =
      read_xml(one_gpu("<ecc_errors><aggregate><sram_correctable>4</sram_correctable>"
                       "<sram_uncorrectable_parity>1</sram_uncorrectable_parity>"
                       "<sram_uncorrectable_secded>2</sram_uncorrectable_secded>"
                       "<dram_correctable>N/A</dram_correctable>"
                       "<dram_uncorrectable>3</dram_uncorrectable>"
                       "<sram_threshold_exceeded>Yes</sram_threshold_exceeded></aggregate>"
                       "<aggregate_uncorrectable_sram_sources><sram_l2>3</sram_l2>"
                       "</aggregate_uncorrectable_sram_sources></ecc_errors>"))
          .gpus.at(0)
          .health;
  // DRAM N/A: the count is unknown, never the known part (4) as if DRAM had none.
  CHECK_FALSE(health.ecc_aggregate.corrected);
  CHECK(health.ecc_aggregate.uncorrected == 6);
  CHECK_FALSE(health.ecc_volatile.corrected); // no volatile element at all
}

TEST_CASE("health: an uncorrectable count with one part N/A is unknown, whatever the others say; "
          "a part this driver does not print is no part") {
  auto uncorrected = [](const std::string &parts) {
    return read_xml(one_gpu("<ecc_errors><volatile>" + parts + "</volatile></ecc_errors>"))
        .gpus.at(0)
        .health.ecc_volatile.uncorrected;
  };
  CHECK_FALSE(uncorrected("<sram_uncorrectable>0</sram_uncorrectable>"
                          "<dram_uncorrectable>N/A</dram_uncorrectable>"));
  CHECK_FALSE(uncorrected("<sram_uncorrectable_parity>[Unknown Error]</sram_uncorrectable_parity>"
                          "<sram_uncorrectable_secded>0</sram_uncorrectable_secded>"
                          "<dram_uncorrectable>5</dram_uncorrectable>"));
  // Before 570 there is no parity or SEC-DED element: SRAM and DRAM are the whole.
  CHECK(uncorrected("<sram_uncorrectable>1</sram_uncorrectable>"
                    "<dram_uncorrectable>2</dram_uncorrectable>") == 3);
  CHECK_FALSE(uncorrected("<sram_uncorrectable>N/A</sram_uncorrectable>"
                          "<dram_uncorrectable>N/A</dram_uncorrectable>"));
  // A sum past the range is no count either.
  CHECK_FALSE(uncorrected("<sram_uncorrectable>9223372036854775807</sram_uncorrectable>"
                          "<dram_uncorrectable>1</dram_uncorrectable>"));
}

TEST_CASE("health: gpu_reset_status Yes, and a recovery action other than None") {
  auto action = [](const std::string &inside) {
    return read_xml(one_gpu(inside)).gpus.at(0).health.recovery_action;
  };
  CHECK(action("<gpu_reset_status><reset_required>Yes</reset_required>"
               "<drain_and_reset_recommended>N/A</drain_and_reset_recommended>"
               "</gpu_reset_status>") == std::string("GPU Reset Required"));
  CHECK(action("<gpu_reset_status><reset_required>No</reset_required>"
               "<drain_and_reset_recommended>Yes</drain_and_reset_recommended>"
               "</gpu_reset_status>") == std::string("Drain and Reset"));
  CHECK(action("<gpu_recovery_action>Node Reboot Required</gpu_recovery_action>") ==
        std::string("Node Reboot Required"));
  CHECK_FALSE(action("<gpu_recovery_action>Requested functionality has been deprecated"
                     "</gpu_recovery_action>"));
  std::string csv = "index, gpu_recovery_action\n0, GPU Reset Required\n";
  CHECK(read_csv(csv).gpus.at(0).health.recovery_action == std::string("GPU Reset Required"));
}

TEST_CASE("health: a pending retirement in either of its XML names, and in the CSV") {
  auto pending = [](const std::string &inside) {
    return read_xml(one_gpu("<retired_pages>" + inside + "</retired_pages>"))
        .gpus.at(0)
        .health.retired_pages_pending;
  };
  CHECK(pending("<pending_retirement>Yes</pending_retirement>") == true);
  CHECK(pending("<pending_blacklist>Yes</pending_blacklist>"
                "<pending_retirement>No</pending_retirement>") == true);
  CHECK(pending("<pending_blacklist>No</pending_blacklist>"
                "<pending_retirement>No</pending_retirement>") == false);
  // One of the two N/A: "not pending" is not known (it may be the one that says yes).
  CHECK_FALSE(pending("<pending_blacklist>N/A</pending_blacklist>"
                      "<pending_retirement>No</pending_retirement>"));
  CHECK(pending("<pending_blacklist>N/A</pending_blacklist>"
                "<pending_retirement>Yes</pending_retirement>") == true);
  CHECK(pending("<pending_retirement>No</pending_retirement>") == false); // 418: the one name
  CHECK_FALSE(pending("<pending_retirement>N/A</pending_retirement>"));
  Snapshot csv = read_csv("index, retired_pages.single_bit_ecc.count, retired_pages.dbe, "
                          "retired_pages.pending\n0, 2, 1, Yes\n");
  CHECK(csv.gpus.at(0).health.retired_pages_single_bit == 2);
  CHECK(csv.gpus.at(0).health.retired_pages_double_bit == 1);
  CHECK(csv.gpus.at(0).health.retired_pages_pending == true);
}

TEST_CASE("health: CSV per-reason columns without the bitmasks, and the older names") {
  Snapshot flags = read_csv("index, clocks_event_reasons.gpu_idle, "
                            "clocks_throttle_reasons.hw_slowdown, clocks_event_reasons.sync_boost\n"
                            "0, Not Active, Active, [N/A]\n");
  CHECK(flags.gpus.at(0).clock_event_reasons_reported == Reasons{"gpu_idle", "hw_slowdown"});
  CHECK(flags.gpus.at(0).clock_event_reasons_active == Reasons{"hw_slowdown"});
  Snapshot aliases = read_csv("index, pcie.link.gen.gpucurrent, pcie.link.gen.gpumax, "
                              "remapped_rows.sbe, remapped_rows.dbe\n0, 3, 4, 5, 6\n");
  const GpuHealth &health = aliases.gpus.at(0).health;
  CHECK(health.pcie_link_gen == 3);
  CHECK(health.pcie_link_gen_max == 4);
  CHECK(health.remapped_rows_correctable == 5);
  CHECK(health.remapped_rows_uncorrectable == 6);
}

TEST_CASE("health: the agent asks for the health fields, but not gpu_recovery_action") {
  const std::vector<std::string> &fields = query_fields();
  for (const char *name :
       {"ecc.mode.current", "ecc.errors.uncorrected.volatile.total", "retired_pages.pending",
        "remapped_rows.pending", "pcie.link.width.current", "clocks_throttle_reasons.active"})
    CHECK(std::find(fields.begin(), fields.end(), name) != fields.end());
  CHECK(std::find(fields.begin(), fields.end(), "gpu_recovery_action") == fields.end());
}

// ---- refused ----

TEST_CASE("health: a word, unit or bitmask out of place is refused, naming the field") {
  CHECK_THROWS_WITH(
      read_xml(one_gpu("<remapped_rows><remapped_row_pending>Maybe</remapped_row_pending>"
                       "</remapped_rows>")),
      Catch::Contains("gpu[0]/remapped_rows/remapped_row_pending: expected \"Yes\" or \"No\", got "
                      "\"Maybe\""));
  CHECK_THROWS_WITH(read_xml(one_gpu("<ecc_mode><current_ecc>On</current_ecc></ecc_mode>")),
                    Catch::Contains("ecc_mode/current_ecc: expected \"Enabled\" or \"Disabled\""));
  CHECK_THROWS_WITH(
      read_xml(one_gpu("<clocks_event_reasons><clocks_event_reason_gpu_idle>Idle"
                       "</clocks_event_reason_gpu_idle></clocks_event_reasons>")),
      Catch::Contains("clocks_event_reasons/clocks_event_reason_gpu_idle: expected \"Active\""));
  CHECK_THROWS_WITH(read_xml(one_gpu("<pci><pci_gpu_link_info><link_widths><current_link_width>"
                                     "16 lanes</current_link_width></link_widths>"
                                     "</pci_gpu_link_info></pci>")),
                    Catch::Contains("link_widths/current_link_width: expected unit \"x\", got "
                                    "\"lanes\""));
  CHECK_THROWS_WITH(read_xml(one_gpu("<pci><tx_util>5 MB/s</tx_util></pci>")),
                    Catch::Contains("pci/tx_util: expected unit \"KB/s\", got \"MB/s\""));
  CHECK_THROWS_WITH(read_xml(one_gpu("<ecc_errors><volatile><dram_uncorrectable>-1"
                                     "</dram_uncorrectable></volatile></ecc_errors>")),
                    Catch::Contains("volatile/dram_uncorrectable: negative value"));

  CHECK_THROWS_WITH(read_csv("index, retired_pages.pending\n0, Maybe\n"),
                    Catch::Contains("row 1 retired_pages.pending: expected \"Yes\" or \"No\""));
  CHECK_THROWS_WITH(read_csv("index, pcie.link.width.current\n0, 16 lanes\n"),
                    Catch::Contains("pcie.link.width.current: expected unit \"x\""));
  CHECK_THROWS_WITH(read_csv("index, clocks_event_reasons.active\n0, 0xZZ\n"),
                    Catch::Contains("clocks_event_reasons.active: not a hexadecimal bitmask"));
  CHECK_THROWS_WITH(read_csv("index, clocks_event_reasons.active\n0, 17\n"),
                    Catch::Contains("clocks_event_reasons.active: not a hexadecimal bitmask"));
  CHECK_THROWS_WITH(read_csv("index, clocks_event_reasons.sw_power_cap\n0, On\n"),
                    Catch::Contains("clocks_event_reasons.sw_power_cap: expected \"Active\""));
  CHECK_THROWS_WITH(read_csv("index, ecc.mode.current\n0, On\n"),
                    Catch::Contains("ecc.mode.current: expected \"Enabled\" or \"Disabled\""));
}

} // namespace test_health_readings
