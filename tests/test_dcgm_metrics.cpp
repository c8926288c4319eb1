// /metrics under the DCGM exporter's names (serve --metric-names dcgm, docs/DCGM.md): its
// families, types, units and labels on the fixtures and on hand-made GPUs; an unknown reading an
// absent series; hostile label values escaped; the allow-list and the cap on users as for ours.
#include "formats/prometheus_metrics.hpp"
#include "snapshot_builders.hpp"
#include "support.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <sstream>

namespace test_dcgm_metrics {

using namespace nvsmi;

namespace {

MetricsSelection dcgm() {
  MetricsSelection selection;
  selection.names = MetricNames::dcgm;
  return selection;
}

bool has(const std::string &text, const std::string &part) {
  return text.find(part) != std::string::npos;
}

// The series lines (not HELP or TYPE) whose family is `family`.
std::vector<std::string> series(const std::string &metrics, const std::string &family) {
  std::vector<std::string> found;
  std::istringstream lines(metrics);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind(family + "{", 0) == 0 || line.rfind(family + " ", 0) == 0)
      found.push_back(line);
  return found;
}

// The exporter's labels of GPU `gpu` of the H100 fixture (no host: a recording).
std::string h100_labels(int gpu, const Snapshot &s) {
  const Gpu &g = s.gpus.at(static_cast<std::size_t>(gpu));
  return "{gpu=\"" + std::to_string(gpu) + "\",UUID=\"" + *g.uuid + "\",pci_bus_id=\"" +
         *g.pci_bus_id + "\",device=\"nvidia" + std::to_string(gpu) +
         "\",modelName=\"NVIDIA H100 80GB HBM3\",DCGM_FI_DRIVER_VERSION=\"550.54.15\"}";
}

} // namespace

TEST_CASE("dcgm names: every GPU of the H100 fixture in the exporter's families, units and "
          "labels",
          "[dcgm]") {
  Snapshot s = test::xml_fixture("xml/h100-8gpu-v12.xml");
  REQUIRE(s.gpus.size() == 8);
  std::string m = format_snapshot_metrics(s, dcgm());
  // The exporter's unit for each: MHz, C, W, MiB and percent 0-100 as nvidia-smi prints them.
  for (int i = 0; i < 8; ++i) {
    const Gpu &g = s.gpus[static_cast<std::size_t>(i)];
    std::string labels = h100_labels(i, s);
    INFO("GPU " << i);
    CHECK(has(m, "DCGM_FI_DEV_SM_CLOCK" + labels + " " + std::to_string(*g.clocks.sm_mhz) + "\n"));
    CHECK(has(m, "DCGM_FI_DEV_MEM_CLOCK" + labels + " " + std::to_string(*g.clocks.memory_mhz) +
                     "\n"));
    CHECK(has(m, "DCGM_FI_DEV_GPU_TEMP" + labels + " " + std::to_string(*g.temperature_c) + "\n"));
    CHECK(has(m, "DCGM_FI_DEV_FB_USED" + labels + " " + std::to_string(*g.memory_used_mib) + "\n"));
    CHECK(has(m, "DCGM_FI_DEV_FB_FREE" + labels + " " + std::to_string(*g.memory_free_mib) + "\n"));
    CHECK(has(m, "DCGM_FI_DEV_GPU_UTIL" + labels + " " +
                     std::to_string(*g.utilization_gpu_percent) + "\n"));
    CHECK(has(m, "DCGM_FI_DEV_MEM_COPY_UTIL" + labels + " " +
                     std::to_string(*g.utilization_memory_percent) + "\n"));
    CHECK(has(m, "DCGM_FI_DEV_PCIE_REPLAY_COUNTER" + labels + " " +
                     std::to_string(*g.health.pcie_replay_count) + "\n"));
  }
  CHECK(has(m, "DCGM_FI_DEV_SM_CLOCK" + h100_labels(0, s) + " 1980\n"));
  CHECK(has(m, "DCGM_FI_DEV_FB_FREE" + h100_labels(0, s) + " 81230\n"));
  CHECK(has(m, "DCGM_FI_DEV_POWER_USAGE" + h100_labels(0, s) + " 68.25\n"));
  // Types as the exporter's counter files say them.
  CHECK(has(m, "# TYPE DCGM_FI_DEV_GPU_TEMP gauge\n"));
  CHECK(has(m, "# TYPE DCGM_FI_DEV_FB_USED gauge\n"));
  CHECK(has(m, "# TYPE DCGM_FI_DEV_PCIE_REPLAY_COUNTER counter\n"));
  // None of our own GPU families beside them: a site pays for each series once.
  CHECK_FALSE(has(m, "nvsmi_gpu_"));
  CHECK_FALSE(has(m, "nvsmi_host_"));
}

TEST_CASE("dcgm names: values in the exporter's units, never ours", "[dcgm]") {
  Snapshot s = test::t4_snapshot();
  s.gpus[0].clocks.sm_mhz = 1590;
  s.gpus[0].health.pcie_replay_count = 7;
  std::string m = format_snapshot_metrics(s, dcgm());
  auto value = [&](const std::string &family) {
    std::vector<std::string> lines = series(m, family);
    REQUIRE(lines.size() == 1);
    return lines[0].substr(lines[0].rfind(' ') + 1);
  };
  CHECK(value("DCGM_FI_DEV_GPU_UTIL") == "99");      // percent, not the ratio 0.99
  CHECK(value("DCGM_FI_DEV_MEM_COPY_UTIL") == "40"); // percent
  CHECK(value("DCGM_FI_DEV_FB_USED") == "8493");     // MiB, not bytes
  CHECK(value("DCGM_FI_DEV_FB_FREE") == "6586");
  CHECK(value("DCGM_FI_DEV_SM_CLOCK") == "1590"); // MHz, not hertz
  CHECK(value("DCGM_FI_DEV_POWER_USAGE") == "67.03");
  CHECK(value("DCGM_FI_DEV_GPU_TEMP") == "72");
  CHECK(value("DCGM_FI_DEV_PCIE_REPLAY_COUNTER") == "7");
}

TEST_CASE("dcgm names: the health counts a site may have turned on", "[dcgm]") {
  Snapshot s = test::t4_snapshot();
  s.gpus = {test::fully_known_gpu(0, "00000000:19:00.0")};
  s.gpus[0].clocks.sm_mhz = 1980;
  s.gpus[0].clocks.memory_mhz = 2619;
  s.gpus[0].utilization_memory_percent = 0;
  s.gpus[0].health.pcie_replay_count = 0;
  std::string m = format_snapshot_metrics(s, dcgm());
  std::string labels = "{gpu=\"0\",UUID=\"GPU-0\",pci_bus_id=\"00000000:19:00.0\",device="
                       "\"nvidia0\",modelName=\"NVIDIA H100 80GB HBM3\","
                       "DCGM_FI_DRIVER_VERSION=\"550.54.15\"}";
  CHECK(has(m, "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL" + labels + " 3\n"));
  CHECK(has(m, "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL" + labels + " 0\n"));
  CHECK(has(m, "DCGM_FI_DEV_ECC_SBE_AGG_TOTAL" + labels + " 12\n"));
  CHECK(has(m, "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL" + labels + " 1\n"));
  CHECK(has(m, "DCGM_FI_DEV_RETIRED_SBE" + labels + " 2\n"));
  CHECK(has(m, "DCGM_FI_DEV_RETIRED_DBE" + labels + " 0\n"));
  CHECK(has(m, "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS" + labels + " 1\n"));
  CHECK(has(m, "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS" + labels + " 0\n"));
  CHECK(has(m, "DCGM_FI_DEV_ROW_REMAP_FAILURE" + labels + " 0\n"));
  CHECK(has(m, "# TYPE DCGM_FI_DEV_ECC_DBE_VOL_TOTAL counter\n"));
  CHECK(has(m, "# TYPE DCGM_FI_DEV_ROW_REMAP_FAILURE gauge\n"));
  // We know only whether a retirement is pending, not how many pages: no such family.
  CHECK_FALSE(has(m, "DCGM_FI_DEV_RETIRED_PENDING"));
  // The series a fully known GPU costs (docs/DCGM.md, "How many series"): one per family.
  std::size_t count = 0;
  std::istringstream lines(m);
  for (std::string line; std::getline(lines, line);)
    count += line.rfind("DCGM_", 0) == 0;
  CHECK(count == 20); // with its PCIe throughput: DCGM_FI_PROF_PCIE_{TX,RX}_BYTES
  s.gpus[0].health.remapped_rows_failure = true;
  CHECK(has(format_snapshot_metrics(s, dcgm()), "DCGM_FI_DEV_ROW_REMAP_FAILURE" + labels + " 1\n"));
}

TEST_CASE("dcgm names: an unknown reading is an absent series, an unknown label an absent label",
          "[dcgm]") {
  Snapshot s = test::quiet_machine(2); // no power, clocks, UUID, name or driver version
  s.gpus[1].temperature_c.reset();
  std::string m = format_snapshot_metrics(s, dcgm());
  CHECK_FALSE(has(m, "DCGM_FI_DEV_POWER_USAGE"));
  CHECK_FALSE(has(m, "DCGM_FI_DEV_SM_CLOCK"));
  CHECK(series(m, "DCGM_FI_DEV_GPU_TEMP") ==
        std::vector<std::string>{"DCGM_FI_DEV_GPU_TEMP{gpu=\"0\",pci_bus_id=\"00000000:19:00.0\","
                                 "device=\"nvidia0\"} 40"});
  CHECK_FALSE(has(m, "UUID="));
  CHECK_FALSE(has(m, "modelName="));
  CHECK_FALSE(has(m, "DCGM_FI_DRIVER_VERSION="));
  CHECK_FALSE(has(m, "hostname="));
  // A GPU nvidia-smi lost keeps its labels and loses its readings.
  Snapshot lost = test::t4_snapshot();
  lost.gpus[0] = Gpu{};
  lost.gpus[0].pci_bus_id = "00000000:3B:00.0";
  lost.gpus[0].lost_reason = "GPU is lost";
  CHECK(series(format_snapshot_metrics(lost, dcgm()), "DCGM_FI_DEV_GPU_TEMP").empty());
}

TEST_CASE("dcgm names: the host's name as the exporter's hostname label", "[dcgm]") {
  Snapshot s = test::t4_snapshot();
  s.host = test::observed_host();
  std::string m = format_snapshot_metrics(s, dcgm());
  CHECK(has(m, "DCGM_FI_DEV_GPU_TEMP{gpu=\"0\",UUID=\"GPU-00000000-0000-0000-0000-000000000000\","
               "pci_bus_id=\"00000000:00:1E.0\",device=\"nvidia0\",modelName=\"Tesla T4\","
               "hostname=\"gpu07\",DCGM_FI_DRIVER_VERSION=\"550.54.15\"} 72\n"));
  CHECK_FALSE(has(m, "Hostname="));
}

TEST_CASE("dcgm names: label values from nvidia-smi are escaped and made valid UTF-8",
          "[dcgm][hostile]") {
  Snapshot s = test::t4_snapshot();
  s.gpus[0].name = "T4\"} 1\nDCGM_FI_DEV_GPU_TEMP{gpu=\"9\\\xff";
  s.driver_version = "550\n\"\\\xc3";
  s.host = test::observed_host();
  s.host->hostname = "node\"x\n";
  std::string m = format_snapshot_metrics(s, dcgm());
  CHECK(has(m, "modelName=\"T4\\\"} 1\\nDCGM_FI_DEV_GPU_TEMP{gpu=\\\"9\\\\\xef\xbf\xbd\","));
  CHECK(has(m, "DCGM_FI_DRIVER_VERSION=\"550\\n\\\"\\\\\xef\xbf\xbd\"}"));
  CHECK(has(m, "hostname=\"node\\\"x\\n\","));
  // One series per family and GPU: nothing the values hold started a line of its own.
  CHECK(series(m, "DCGM_FI_DEV_GPU_TEMP").size() == 1);
  std::istringstream lines(m);
  for (std::string line; std::getline(lines, line);)
    CHECK((line.rfind("# ", 0) == 0 || line.rfind("DCGM_FI_", 0) == 0));
}

TEST_CASE("dcgm names: a MIG GPU's memory per GPU instance, as GPU_I_ID", "[dcgm][mig]") {
  Snapshot s = test::xml_fixture("xml/a100-mig-v12.xml");
  REQUIRE(s.gpus.at(0).mig_devices);
  REQUIRE(s.gpus[0].mig_devices->size() == 2);
  // A second compute instance of GPU instance 1: the same memory, one series.
  MigDevice second_ci = s.gpus[0].mig_devices->at(0);
  second_ci.compute_instance_id = 1;
  s.gpus[0].mig_devices->push_back(second_ci);
  std::string m = format_snapshot_metrics(s, dcgm());
  std::vector<std::string> used = series(m, "DCGM_FI_DEV_FB_USED");
  REQUIRE(used.size() == 2);
  CHECK(has(used[0], ",GPU_I_ID=\"1\"}"));
  CHECK(used[0].substr(used[0].rfind(' ')) == " 13");
  CHECK(has(used[1], ",GPU_I_ID=\"2\"}"));
  CHECK(used[1].substr(used[1].rfind(' ')) == " 4020");
  CHECK(has(used[0], "{gpu=\"0\",UUID=\"" + *s.gpus[0].uuid + "\""));
  // The profile is only in nvidia-smi -L, not read here: no label rather than a guess.
  CHECK_FALSE(has(m, "GPU_I_PROFILE"));
  // Where -L named it: the GPU instance's profile, a compute instance's "1c." left off.
  s.gpus[0].mig_devices->at(0).profile = "1c.3g.40gb";
  s.gpus[0].mig_devices->at(1).profile = "2g.20gb";
  m = format_snapshot_metrics(s, dcgm());
  used = series(m, "DCGM_FI_DEV_FB_USED");
  REQUIRE(used.size() == 2);
  CHECK(has(used[0], ",GPU_I_ID=\"1\",GPU_I_PROFILE=\"3g.40gb\"}"));
  CHECK(has(used[1], ",GPU_I_ID=\"2\",GPU_I_PROFILE=\"2g.20gb\"}"));
  // The GPU's own readings stay the GPU's.
  CHECK(series(m, "DCGM_FI_DEV_GPU_TEMP").size() == 1);
  CHECK_FALSE(has(series(m, "DCGM_FI_DEV_GPU_TEMP")[0], "GPU_I_ID"));
}

TEST_CASE("dcgm names: the allow-list and the cap on users apply to them", "[dcgm]") {
  std::vector<std::string> known = metric_family_names();
  CHECK(std::count(known.begin(), known.end(), "DCGM_FI_DEV_GPU_TEMP") == 1);
  CHECK(std::count(known.begin(), known.end(), "DCGM_FI_DEV_ROW_REMAP_FAILURE") == 1);
  CHECK(metrics_include_problem("DCGM_FI_DEV_FB_USED").empty());
  CHECK(metrics_include_problem("DCGM_FI_DEV_*").empty());
  CHECK_FALSE(metrics_include_problem("DCGM_FI_DEV_NOTHING").empty());

  Snapshot s = test::t4_snapshot();
  s.host = test::observed_host();
  s.gpus[0].processes = std::vector<Process>{test::observed_process(10, "ada", 100),
                                             test::observed_process(11, "bob", 50)};
  MetricsSelection selection = dcgm();
  selection.include = {"DCGM_FI_DEV_FB_*", "nvsmi_user_gpus"};
  std::string m = format_snapshot_metrics(s, selection);
  CHECK(has(m, "# TYPE DCGM_FI_DEV_FB_USED gauge\n"));
  CHECK(has(m, "# TYPE DCGM_FI_DEV_FB_FREE gauge\n"));
  CHECK_FALSE(has(m, "DCGM_FI_DEV_GPU_TEMP"));
  CHECK_FALSE(has(m, "nvsmi_user_gpu_memory_used_bytes"));
  CHECK(has(m, "nvsmi_user_gpus{user=\"ada\"} 1\n"));

  // Our extras beside them: who holds the GPUs, under the same cap; per-process only when asked.
  selection = dcgm();
  selection.users = 1;
  m = format_snapshot_metrics(s, selection);
  CHECK(has(m, "nvsmi_user_gpu_memory_used_bytes{user=\"ada\"}"));
  CHECK(has(m, "nvsmi_user_gpu_memory_used_bytes{user=\"(other users)\"}"));
  CHECK_FALSE(has(m, "nvsmi_gpu_process_"));
  selection.processes = true;
  CHECK(has(format_snapshot_metrics(s, selection), "nvsmi_gpu_process_memory_used_bytes{"));
}

} // namespace test_dcgm_metrics
