// Fleet health in the outputs (docs/METRICS.md): /metrics families, the JSON's health, xid and
// kernel_log, and the table's lost and failing rows, from hand-made snapshots whose every reading
// is known, so that each series and key can be checked exactly.
#include "core/screen_text.hpp"
#include "formats/formats.hpp"
#include "formats/prometheus_metrics.hpp"
#include "nvsmi/utf8.hpp"
#include "nvsmi/xml_reader.hpp"
#include "report/report_json_log.hpp"
#include "snapshot_builders.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <sstream>

namespace test_fleet_health_formats {

using namespace nvsmi;
using test::observed_process;

namespace {

const std::string gpu0 = R"(gpu="0",uuid="GPU-0",name="NVIDIA H100 80GB HBM3")";
const std::string gpu1 = R"(gpu="1",uuid="GPU-1",name="NVIDIA H100 80GB HBM3")";
const std::string gpu2 = R"(gpu="2")";

XidTally tally(const char *device, int xid, std::int64_t count, const char *message, Text seen) {
  return {device, xid, count, message, std::move(seen)};
}

// GPU 0 healthy and free; GPU 1 failing (a row remap pending) with alice's job and a desktop's
// Xorg; GPU 2 lost, known only by its index and bus id; Xids of GPUs 0 and 2 and of an NVSwitch.
Snapshot fleet() {
  Snapshot s;
  s.timestamp = Timestamp{2026, 11, 23, 9, 14, 2, std::nullopt, 60};
  s.driver_version = "570.124.04";
  s.gpus = {test::fully_known_gpu(0, "00000000:3B:00.0"),
            test::fully_known_gpu(1, "00000000:3C:00.0")};
  Gpu &failing = s.gpus[1];
  failing.health.remapped_rows_pending = true;
  failing.health.recovery_action = "GPU Reset Required";
  failing.utilization_gpu_percent = 97;
  Process xorg = observed_process(7, "root", 40, "/usr/lib/xorg/Xorg");
  xorg.type = "G";
  failing.processes = std::vector<Process>{observed_process(10, "alice", 40000),
                                           observed_process(11, "alice", 1000), xorg};
  Gpu lost;
  lost.index = 2;
  lost.pci_bus_id = "00000000:5E:00.0";
  lost.lost_reason = "GPU is lost";
  s.gpus.push_back(lost);
  s.kernel_log = KernelLog{"/dev/kmsg", true, std::nullopt, {}};
  s.kernel_log->xids = {
      tally("0000:3b:00", 13, 2, "pid=1797, name=python3, Graphics Exception",
            std::string("2026-11-23T08:00:00+01:00")),
      tally("0000:3b:00", 31, 1, "pid=1797, name=python3, MMU Fault",
            std::string("2026-11-23T07:30:00+01:00")),
      tally("0000:5e:00", 79, 1, "GPU has fallen off the bus.",
            std::string("2026-11-23T09:10:00+01:00")),
      tally("0000:86:00", 94, 4, "Contained error", std::nullopt),
  };
  return s;
}

bool has(const std::string &text, const std::string &part) {
  return text.find(part) != std::string::npos;
}

// The HELP and TYPE of a family, and that HELP says something.
void check_family(const std::string &metrics, const std::string &name, const char *type) {
  INFO(name);
  CHECK(has("\n" + metrics, "\n# HELP " + name + " "));
  CHECK(has(metrics, "# TYPE " + name + " " + type + "\n"));
}

using test::lines_of;

// Every health family that is a gauge, and those that are counters.
const std::vector<std::string> health_gauges = {"nvsmi_gpu_state",
                                                "nvsmi_gpu_lost",
                                                "nvsmi_gpu_user_processes",
                                                "nvsmi_gpu_ecc_enabled",
                                                "nvsmi_gpu_ecc_pending_enabled",
                                                "nvsmi_gpu_retired_pages",
                                                "nvsmi_gpu_retired_pages_pending",
                                                "nvsmi_gpu_remapped_rows",
                                                "nvsmi_gpu_remapped_rows_pending",
                                                "nvsmi_gpu_remapped_rows_failure",
                                                "nvsmi_gpu_clock_event_reason_active",
                                                "nvsmi_gpu_performance_state",
                                                "nvsmi_gpu_pcie_link_generation",
                                                "nvsmi_gpu_pcie_link_generation_max",
                                                "nvsmi_gpu_pcie_link_width",
                                                "nvsmi_gpu_pcie_link_width_max",
                                                "nvsmi_gpu_pcie_tx_bytes_per_second",
                                                "nvsmi_gpu_pcie_rx_bytes_per_second",
                                                "nvsmi_gpu_temperature_slowdown_celsius",
                                                "nvsmi_gpu_temperature_shutdown_celsius",
                                                "nvsmi_gpu_recovery_action",
                                                "nvsmi_xid_readable"};
const std::vector<std::string> health_counters = {"nvsmi_gpu_ecc_errors_total",
                                                  "nvsmi_gpu_xid_errors_total"};

} // namespace

TEST_CASE("health metrics: every reading of a healthy GPU, exactly", "[health]") {
  std::string m = format_snapshot_metrics(fleet());
  for (const std::string &name : health_gauges)
    check_family(m, name, "gauge");
  for (const std::string &name : health_counters)
    check_family(m, name, "counter");

  const std::string expected[] = {
      "nvsmi_gpu_ecc_enabled{" + gpu0 + "} 1",
      "nvsmi_gpu_ecc_pending_enabled{" + gpu0 + "} 0",
      "nvsmi_gpu_ecc_errors_total{" + gpu0 + R"(,error_type="corrected",scope="volatile"} 3)",
      "nvsmi_gpu_ecc_errors_total{" + gpu0 + R"(,error_type="uncorrected",scope="volatile"} 0)",
      "nvsmi_gpu_ecc_errors_total{" + gpu0 + R"(,error_type="corrected",scope="aggregate"} 12)",
      "nvsmi_gpu_ecc_errors_total{" + gpu0 + R"(,error_type="uncorrected",scope="aggregate"} 1)",
      "nvsmi_gpu_retired_pages{" + gpu0 + R"(,cause="single_bit_ecc"} 2)",
      "nvsmi_gpu_retired_pages{" + gpu0 + R"(,cause="double_bit_ecc"} 0)",
      "nvsmi_gpu_retired_pages_pending{" + gpu0 + "} 0",
      "nvsmi_gpu_remapped_rows{" + gpu0 + R"(,error_type="correctable"} 1)",
      "nvsmi_gpu_remapped_rows{" + gpu0 + R"(,error_type="uncorrectable"} 0)",
      "nvsmi_gpu_remapped_rows_pending{" + gpu0 + "} 0",
      "nvsmi_gpu_remapped_rows_pending{" + gpu1 + "} 1",
      "nvsmi_gpu_remapped_rows_failure{" + gpu0 + "} 0",
      "nvsmi_gpu_clock_event_reason_active{" + gpu0 + R"(,reason="gpu_idle"} 1)",
      "nvsmi_gpu_clock_event_reason_active{" + gpu0 + R"(,reason="sw_power_cap"} 0)",
      "nvsmi_gpu_clock_event_reason_active{" + gpu0 + R"(,reason="hw_thermal_slowdown"} 0)",
      "nvsmi_gpu_performance_state{" + gpu0 + "} 0",
      "nvsmi_gpu_pcie_link_generation{" + gpu0 + "} 5",
      "nvsmi_gpu_pcie_link_generation_max{" + gpu0 + "} 5",
      "nvsmi_gpu_pcie_link_width{" + gpu0 + "} 8",
      "nvsmi_gpu_pcie_link_width_max{" + gpu0 + "} 16",
      "nvsmi_gpu_pcie_tx_bytes_per_second{" + gpu0 + "} 599040",
      "nvsmi_gpu_pcie_rx_bytes_per_second{" + gpu0 + "} 249856",
      "nvsmi_gpu_temperature_slowdown_celsius{" + gpu0 + "} 90",
      "nvsmi_gpu_temperature_shutdown_celsius{" + gpu0 + "} 95",
      "nvsmi_gpu_recovery_action{" + gpu0 + R"(,action="none"} 1)",
      "nvsmi_gpu_recovery_action{" + gpu1 + R"(,action="gpu_reset"} 1)",
      "nvsmi_xid_readable 1",
  };
  std::vector<std::string> lines = lines_of(m);
  for (const std::string &line : expected) {
    INFO(line);
    CHECK(std::count(lines.begin(), lines.end(), line) == 1);
  }
  // The existing families keep their place: the health ones come after the host's and users'.
  CHECK(m.find("# HELP nvsmi_gpu_temperature_celsius ") == 0);
  CHECK(m.find("nvsmi_user_gpus") < m.find("nvsmi_gpu_state"));
}

TEST_CASE("health metrics: the state one-hot over every word, lost GPUs marked", "[health]") {
  std::string m = format_snapshot_metrics(fleet());
  std::vector<std::string> lines = lines_of(m);
  const char *words[] = {"lost",          "failing", "hot",  "at_power_limit", "allocated_idle",
                         "idle_but_held", "in_use",  "idle", "free",           "unknown"};
  const std::pair<std::string, std::string> gpus[] = {
      {gpu0, "free"}, {gpu1, "failing"}, {gpu2, "lost"}};
  for (const auto &[labels, now] : gpus)
    for (const char *word : words) {
      std::string line =
          "nvsmi_gpu_state{" + labels + ",state=\"" + word + "\"} " + (now == word ? "1" : "0");
      INFO(line);
      CHECK(std::count(lines.begin(), lines.end(), line) == 1);
    }
  CHECK(std::count_if(lines.begin(), lines.end(), [](const std::string &line) {
          return line.rfind("nvsmi_gpu_state{", 0) == 0;
        }) == 30);

  // gpu and pci_bus_id only, for every GPU read or not.
  CHECK_THAT(m, Catch::Contains("# TYPE nvsmi_gpu_lost gauge\n"
                                "nvsmi_gpu_lost{gpu=\"0\",pci_bus_id=\"00000000:3B:00.0\"} 0\n"
                                "nvsmi_gpu_lost{gpu=\"1\",pci_bus_id=\"00000000:3C:00.0\"} 0\n"
                                "nvsmi_gpu_lost{gpu=\"2\",pci_bus_id=\"00000000:5E:00.0\"} 1\n"));
  // A lost GPU's readings are unknown: no series of them, never a 0.
  for (const std::string &line : lines)
    if (line.find("{gpu=\"2\"") != std::string::npos) {
      INFO(line);
      CHECK((line.rfind("nvsmi_gpu_state{", 0) == 0 || line.rfind("nvsmi_gpu_lost{", 0) == 0 ||
             line.rfind("nvsmi_gpu_info{", 0) == 0 ||
             line.rfind("nvsmi_gpu_xid_errors_total{", 0) == 0));
    }
}

TEST_CASE("health metrics: a user's compute processes per GPU, graphics not counted", "[health]") {
  Snapshot s = fleet();
  s.gpus[0].processes = std::vector<Process>{observed_process(20, "bob", 100)};
  Process anonymous = observed_process(21, "x", 100);
  anonymous.user.reset(); // another PID namespace: no user to count it under
  s.gpus[0].processes->push_back(anonymous);
  std::string m = format_snapshot_metrics(s);
  CHECK_THAT(m, Catch::Contains("# TYPE nvsmi_gpu_user_processes gauge\n"
                                "nvsmi_gpu_user_processes{" +
                                gpu0 + ",user=\"bob\"} 1\n" + "nvsmi_gpu_user_processes{" + gpu1 +
                                ",user=\"alice\"} 2\n# HELP"));
  CHECK_FALSE(has(m, "nvsmi_gpu_user_processes{" + gpu1 + ",user=\"root\""));
}

TEST_CASE("health metrics: unknown readings are absent, never 0", "[health]") {
  Snapshot s = fleet();
  s.kernel_log.reset();
  for (Gpu &gpu : s.gpus) {
    gpu.health = GpuHealth{};
    gpu.clock_event_reasons_reported.reset();
    gpu.clock_event_reasons_active.reset();
    gpu.pstate.reset();
    gpu.pcie_rx_bytes_per_second.reset(); // the GPU's own traffic, beside its health
    gpu.pcie_tx_bytes_per_second.reset();
  }
  std::string m = format_snapshot_metrics(s);
  for (const char *gone :
       {"nvsmi_gpu_ecc", "nvsmi_gpu_retired", "nvsmi_gpu_remapped", "nvsmi_gpu_clock_event",
        "nvsmi_gpu_performance_state", "nvsmi_gpu_pcie", "nvsmi_gpu_temperature_s",
        "nvsmi_gpu_recovery_action", "nvsmi_gpu_xid", "nvsmi_xid_readable"}) {
    INFO(gone);
    CHECK_FALSE(has(m, gone));
  }
  CHECK(has(m, "nvsmi_gpu_state{"));
  CHECK(has(m, "nvsmi_gpu_lost{"));

  // One count known and the other not: only the known one.
  s.gpus[0].health.ecc_volatile.corrected = 5;
  s.gpus[0].health.remapped_rows_uncorrectable = 0;
  m = format_snapshot_metrics(s);
  CHECK(has(m, "\nnvsmi_gpu_ecc_errors_total{" + gpu0 +
                   ",error_type=\"corrected\",scope=\"volatile\"} 5\n"));
  CHECK_FALSE(has(m, "error_type=\"uncorrected\""));
  CHECK(has(m, "\nnvsmi_gpu_remapped_rows{" + gpu0 + ",error_type=\"uncorrectable\"} 0\n"));
  CHECK_FALSE(has(m, "error_type=\"correctable\""));

  // Active reasons known, which others the driver knows not: only the active ones, as 1.
  s.gpus[0].clock_event_reasons_active = std::vector<std::string>{"sw_power_cap"};
  m = format_snapshot_metrics(s);
  CHECK(has(m, "\nnvsmi_gpu_clock_event_reason_active{" + gpu0 + ",reason=\"sw_power_cap\"} 1\n"));
  CHECK_FALSE(has(m, "reason=\"gpu_idle\""));
  // Reported, whether active not known: nothing made up.
  s.gpus[0].clock_event_reasons_active.reset();
  s.gpus[0].clock_event_reasons_reported = std::vector<std::string>{"gpu_idle"};
  CHECK_FALSE(has(format_snapshot_metrics(s), "nvsmi_gpu_clock_event_reason_active"));
}

TEST_CASE("health metrics: P-states P0 to P15, anything else absent", "[health]") {
  Snapshot s = fleet();
  s.gpus.resize(1);
  s.kernel_log.reset();
  const std::pair<const char *, const char *> cases[] = {
      {"P0", "0"},      {"P8", "8"},    {"P12", "12"},        {"P15", "15"},    {"P16", nullptr},
      {"P01", nullptr}, {"P", nullptr}, {"Unknown", nullptr}, {"P-1", nullptr}, {"p2", nullptr}};
  for (const auto &[pstate, number] : cases) {
    INFO(pstate);
    s.gpus[0].pstate = pstate;
    std::string m = format_snapshot_metrics(s);
    if (number)
      CHECK(has(m, "\nnvsmi_gpu_performance_state{" + gpu0 + "} " + number + "\n"));
    else
      CHECK_FALSE(has(m, "nvsmi_gpu_performance_state"));
  }
}

TEST_CASE("health metrics: recovery actions by name, any other words in lower_snake_case",
          "[health]") {
  Snapshot s = fleet();
  s.gpus.resize(1);
  const std::pair<const char *, const char *> cases[] = {
      {"None", "none"},
      {"GPU Reset Required", "gpu_reset"},
      {"Node Reboot Required", "node_reboot"},
      {"Drain P2P", "drain_p2p"},
      {"Drain and Reset", "drain_and_reset"},
      {"Recover IMEX Domain", "recover_imex_domain"},
      {"  Bus-Reset (now!) ", "bus_reset_now"},
      {"r\xc3\xa9initialiser \"x\"\\\n", "r\xc3\xa9initialiser_x"},
      {"bad\xff\xfe byte", "bad\xef\xbf\xbd\xef\xbf\xbd_byte"}};
  for (const auto &[action, key] : cases) {
    INFO(action);
    s.gpus[0].health.recovery_action = action;
    std::string m = format_snapshot_metrics(s);
    CHECK(is_valid_utf8(m));
    CHECK(has(m, "\nnvsmi_gpu_recovery_action{" + gpu0 + ",action=\"" + key + "\"} 1\n"));
  }
  s.gpus[0].health.recovery_action = " -- ";
  CHECK_FALSE(has(format_snapshot_metrics(s), "nvsmi_gpu_recovery_action"));
}

TEST_CASE("health metrics: Xid counts per GPU and code, other devices by the kernel's bus id",
          "[health]") {
  Snapshot s = fleet();
  std::string m = format_snapshot_metrics(s);
  CHECK_THAT(m,
             Catch::Contains("# TYPE nvsmi_gpu_xid_errors_total counter\n"
                             "nvsmi_gpu_xid_errors_total{gpu=\"0\",pci_bus_id=\"00000000:3B:00.0\","
                             "xid=\"13\"} 2\n"
                             "nvsmi_gpu_xid_errors_total{gpu=\"0\",pci_bus_id=\"00000000:3B:00.0\","
                             "xid=\"31\"} 1\n"
                             "nvsmi_gpu_xid_errors_total{gpu=\"2\",pci_bus_id=\"00000000:5E:00.0\","
                             "xid=\"79\"} 1\n"
                             "nvsmi_gpu_xid_errors_total{pci_bus_id=\"0000:86:00\",xid=\"94\"} 4\n"
                             "# HELP nvsmi_xid_readable "));
  CHECK(has(m, "\nnvsmi_xid_readable 1\n"));

  // Two spellings of one device in the log: one series, their sum.
  s.kernel_log->xids.push_back(tally("0000:3B:00", 13, 5, "again", std::nullopt));
  m = format_snapshot_metrics(s);
  CHECK(has(m, "pci_bus_id=\"00000000:3B:00.0\",xid=\"13\"} 7\n"));

  // Not allowed to read the log: counts unknown, said once, no zero made up.
  s.kernel_log = KernelLog{"/dev/kmsg", false, std::string("Permission denied"), {}};
  m = format_snapshot_metrics(s);
  CHECK_FALSE(has(m, "nvsmi_gpu_xid_errors_total{"));
  CHECK_THAT(m, Catch::Contains("# TYPE nvsmi_xid_readable gauge\nnvsmi_xid_readable 0\n"));
  // Readable and no Xid: no series, readable 1.
  s.kernel_log = KernelLog{"/dev/kmsg", true, std::nullopt, {}};
  m = format_snapshot_metrics(s);
  CHECK_FALSE(has(m, "nvsmi_gpu_xid_errors_total{"));
  CHECK(has(m, "\nnvsmi_xid_readable 1\n"));
}

TEST_CASE("health metrics: hostile bytes in reasons and labels stay valid and escaped",
          "[health]") {
  Snapshot s = fleet();
  s.gpus[0].clock_event_reasons_reported = std::vector<std::string>{"a\"b\\c\nd\xff"};
  s.gpus[0].clock_event_reasons_active = std::vector<std::string>{};
  s.gpus[2].pci_bus_id = std::string("00000000:5E:00.0\xff\"");
  std::string m = format_snapshot_metrics(s);
  CHECK(is_valid_utf8(m));
  CHECK(has(m, "reason=\"a\\\"b\\\\c\\nd\xef\xbf\xbd\"} 0\n"));
  CHECK(has(m, "nvsmi_gpu_lost{gpu=\"2\",pci_bus_id=\"00000000:5E:00.0\xef\xbf\xbd\\\"\"} 1\n"));
}

TEST_CASE("health metrics: a snapshot that fills every family passes promtool", "[health]") {
  Snapshot s = fleet();
  s.host = test::observed_host();
  s.gpus[0].health.recovery_action = std::string("Odd \xff \"words\"");
  std::string m = format_snapshot_metrics(s);
  std::vector<std::string> families = health_gauges;
  families.insert(families.end(), health_counters.begin(), health_counters.end());
  for (const std::string &family : families) {
    INFO(family);
    CHECK((has(m, "\n" + family + "{") || has(m, "\n" + family + " ")));
  }
  if (!test::installed("promtool")) {
    WARN("promtool is not installed (scripts/install-deps installs it): not checked");
    return;
  }
  test::Run check = test::promtool_check_metrics(m);
  INFO(m << check.out << check.err);
  CHECK(check.exit_code == 0);
  CHECK(check.out.empty()); // no lint warning either
  CHECK(check.err.empty());
}

TEST_CASE("health json: each GPU's health, xid, lost_reason, failure and failure_as_of after its "
          "state",
          "[health]") {
  Snapshot s = fleet();
  s.gpus[0].extras = {{"serial", std::string("1650")}};
  auto document = nlohmann::ordered_json::parse(format_json(s));
  std::vector<std::string> top;
  for (auto &item : document.items())
    top.push_back(item.key());
  CHECK(top == std::vector<std::string>{"schema", "source", "timestamp", "driver_version",
                                        "cuda_version", "gpus", "host", "kernel_log"});
  const auto &g0 = document["gpus"][0];
  std::vector<std::string> keys;
  for (auto &item : g0.items())
    keys.push_back(item.key());
  auto state = std::find(keys.begin(), keys.end(), "state");
  REQUIRE(state != keys.end());
  CHECK(std::vector<std::string>(state, keys.end()) ==
        std::vector<std::string>{"state", "lost_reason", "failure", "failure_as_of", "health",
                                 "xid", "serial"});

  CHECK(g0["lost_reason"].is_null());
  CHECK(g0["failure"].is_null());
  const auto &h = g0["health"];
  CHECK(h == nlohmann::ordered_json::parse(R"({
    "ecc_enabled": true, "ecc_pending_enabled": false,
    "ecc_errors": {"volatile": {"corrected": 3, "uncorrected": 0},
                   "aggregate": {"corrected": 12, "uncorrected": 1}},
    "retired_pages": {"single_bit": 2, "double_bit": 0, "pending": false},
    "remapped_rows": {"correctable": 1, "uncorrectable": 0, "pending": false, "failure": false},
    "clock_event_reasons": {"gpu_idle": true, "sw_power_cap": false, "hw_thermal_slowdown": false},
    "pcie": {"link_gen": 5, "link_gen_max": 5, "link_width": 8, "link_width_max": 16},
    "temperature_slowdown_c": 90, "temperature_shutdown_c": 95, "recovery_action": "None",
    "pcie_replay_count": null})"));
  // The latest of GPU 0's Xids by time, not by its place in the list.
  CHECK(g0["xid"] == nlohmann::ordered_json::parse(R"({"total": 3, "counts": {"13": 2, "31": 1},
    "last": {"xid": 13, "message": "pid=1797, name=python3, Graphics Exception",
             "seen": "2026-11-23T08:00:00+01:00"}})"));

  const auto &g1 = document["gpus"][1];
  CHECK(g1["state"] == "failing");
  CHECK(g1["failure"] == "row remap pending");
  CHECK(g1["xid"] == nlohmann::ordered_json::parse(R"({"total": 0, "counts": {}, "last": null})"));

  const auto &g2 = document["gpus"][2];
  CHECK(g2["state"] == "lost");
  CHECK(g2["lost_reason"] == "GPU is lost");
  CHECK(g2["failure"].is_null());
  CHECK(g2["temperature_c"].is_null());
  for (const char *key : {"ecc_enabled", "clock_event_reasons", "recovery_action"})
    CHECK(g2["health"][key].is_null());
  CHECK(g2["health"]["pcie"]["link_width"].is_null());
  CHECK(g2["xid"]["counts"] == nlohmann::ordered_json::parse(R"({"79": 1})"));
  CHECK(g2["xid"]["last"]["message"] == "GPU has fallen off the bus.");

  CHECK(document["kernel_log"] == nlohmann::ordered_json::parse(R"({
    "source": "/dev/kmsg", "readable": true, "error": null,
    "unmatched": [{"pci_device": "0000:86:00", "xid": 94, "count": 4,
                   "last_message": "Contained error", "last_seen": null}]})"));
}

TEST_CASE("health json: no kernel log, or one it may not read: xid null, never zero", "[health]") {
  Snapshot s = fleet();
  s.kernel_log.reset();
  auto document = nlohmann::json::parse(format_json(s));
  CHECK(document["kernel_log"].is_null());
  for (const auto &gpu : document["gpus"])
    CHECK(gpu["xid"].is_null());

  s.kernel_log = KernelLog{"/dev/kmsg", false, std::string("Permission denied"), {}};
  document = nlohmann::json::parse(format_json(s));
  CHECK(document["kernel_log"] == nlohmann::json::parse(R"({"source": "/dev/kmsg",
    "readable": false, "error": "Permission denied", "unmatched": []})"));
  for (const auto &gpu : document["gpus"])
    CHECK(gpu["xid"].is_null());

  // Reasons unknown altogether: null, not an empty object.
  s = fleet();
  s.gpus[0].clock_event_reasons_reported.reset();
  s.gpus[0].clock_event_reasons_active.reset();
  CHECK(
      nlohmann::json::parse(format_json(s))["gpus"][0]["health"]["clock_event_reasons"].is_null());
}

TEST_CASE("health json: the latest Xid by time across offsets, else the one listed last",
          "[health]") {
  Snapshot s = fleet();
  s.gpus.resize(1);
  s.kernel_log->xids = {
      tally("0000:3b:00", 13, 1, "summer", std::string("2026-10-25T02:30:00+02:00")),
      tally("0000:3b:00", 31, 1, "winter", std::string("2026-10-25T02:10:00+01:00")),
      tally("0000:3b:00", 43, 1, "no time", std::nullopt)};
  auto last = nlohmann::json::parse(format_json(s))["gpus"][0]["xid"]["last"];
  CHECK(last["message"] == "winter"); // 01:10 UTC is after 00:30 UTC
  for (XidTally &t : s.kernel_log->xids)
    t.last_seen.reset();
  last = nlohmann::json::parse(format_json(s))["gpus"][0]["xid"]["last"];
  CHECK(last["xid"] == 43);
  CHECK(last["seen"].is_null());
}

TEST_CASE("health json: hostile bytes in an Xid message or action stay valid JSON", "[health]") {
  Snapshot s = fleet();
  s.gpus[0].health.recovery_action = std::string("Reset \xff\"now\"\n");
  s.gpus[2].lost_reason = std::string("lost \xc0\x80");
  s.kernel_log->xids[0].last_message = std::string("\x01\xfe \"quoted\" \\");
  s.kernel_log->xids[3].pci_device = std::string("0000:86:00\xff");
  std::string text = format_json(s);
  CHECK(is_valid_utf8(text));
  auto document = nlohmann::json::parse(text);
  CHECK(document["gpus"][0]["health"]["recovery_action"] == "Reset \xef\xbf\xbd\"now\"\n");
  CHECK(document["gpus"][0]["xid"]["last"]["xid"] == 13);
  CHECK(document["gpus"][0]["xid"]["last"]["message"] == "\x01\xef\xbf\xbd \"quoted\" \\");
  CHECK(document["gpus"][2]["lost_reason"] == "lost \xef\xbf\xbd\xef\xbf\xbd");
  CHECK(document["kernel_log"]["unmatched"][0]["pci_device"] == "0000:86:00\xef\xbf\xbd");
}

TEST_CASE("health json: the report's JSON log reader still reads a line with them", "[health]") {
  Snapshot s = fleet();
  s.host = test::observed_host();
  Snapshot read = read_json_log_line(format_json(s));
  REQUIRE(read.gpus.size() == 3);
  CHECK(read.gpus[1].processes->size() == 3);
  CHECK(read.gpus[2].pci_bus_id == Text("00000000:5E:00.0"));
  CHECK(read.host->hostname == Text("gpu07"));
}

TEST_CASE("health table: a lost GPU says why, a failing one what, before its processes",
          "[health][table]") {
  Snapshot s = fleet();
  std::string table = format_table(s, {false, 120});
  std::vector<std::string> lines = lines_of(table);
  REQUIRE(lines.size() == 5); // the fleet's summary, the header, a line per GPU
  INFO(table);
  CHECK(lines[0] == "3 GPUs: 1 free \u00b7 1 failing \u00b7 1 lost");
  CHECK(has(lines[2], "  free"));
  CHECK(has(lines[3], "  failing  row remap pending  alice:train.py\u00d72(41000MiB)"));
  CHECK(lines[4].rfind("[2] -", 0) == 0);
  CHECK(has(lines[4], "  lost  GPU is lost"));
  CHECK_FALSE(has(lines[4], "0%"));
  // Colour: the state and its reason red.
  std::string coloured = format_table(s, {true, 120});
  CHECK(has(coloured, "\x1b[31mlost\x1b[0m  \x1b[31mGPU is lost\x1b[0m"));
  CHECK(has(coloured, "\x1b[31mfailing\x1b[0m  \x1b[31mrow remap pending\x1b[0m"));
  // Narrow: the reason is cut, the line never longer than the screen.
  for (std::size_t width : {40, 50, 60, 70}) {
    for (const std::string &line : lines_of(format_table(s, {false, width}))) {
      INFO(width << ": " << line);
      CHECK(text_columns(line) <= width);
    }
  }
  // A hostile reason is screen text.
  s.gpus[2].lost_reason = std::string("Unknown\x1b[2J Error\xff");
  std::string hostile = format_table(s, {false, 120});
  CHECK_FALSE(has(hostile, "\x1b"));
  CHECK(has(hostile, "lost  Unknown[2J Error\xef\xbf\xbd"));
}

} // namespace test_fleet_health_formats
