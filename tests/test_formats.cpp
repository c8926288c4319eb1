#include "formats/formats.hpp"
#include "formats/json_writer.hpp"
#include "formats/prometheus_metrics.hpp"
#include "nvsmi/xml_reader.hpp"
#include "snapshot_builders.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <nlohmann/json.hpp>

namespace test_formats {

using namespace nvsmi;
using test::observed_host;
using test::observed_process;

namespace {

// The keys of a JSON object, in their order.
std::vector<std::string> keys_of(const nlohmann::ordered_json &object) {
  std::vector<std::string> keys;
  for (auto &item : object.items())
    keys.push_back(item.key());
  return keys;
}

} // namespace

TEST_CASE("legacy: exactly the shape and key order the UI reads") {
  CHECK(format_legacy(test::t4_snapshot()) ==
        R"({"temp":[{"data":["72","72C"],"name":0}],)"
        R"("usage":[{"data":["8493","8493MiB/15079MiB"],"name":0}],)"
        R"("usedPercent":[{"data":["56.32","56.32%"],"name":0}]})");
}

TEST_CASE("legacy: the Go example's bugs are gone") {
  Snapshot s = test::t4_snapshot();
  s.gpus[0].memory_used_mib = 1128;
  s.gpus[0].memory_total_mib = 10240;
  std::string out = format_legacy(s);
  // Total comes from the total field, not from used: "1128MiB/1128MiB" was the Go bug.
  CHECK_THAT(out, Catch::Contains(R"("1128MiB/10240MiB")"));
  // 1128 / 10240 * 100 = 11.015625: integer division gave 0 (or 1), we give 11.02.
  CHECK_THAT(out, Catch::Contains(R"(["11.02","11.02%"])"));
  // "MiB", never "Mib".
  CHECK_THAT(out, !Catch::Contains("Mib/"));
}

TEST_CASE("legacy: unknown values are N/A, never made up") {
  Snapshot s = test::t4_snapshot();
  s.gpus[0].temperature_c.reset();
  s.gpus[0].memory_total_mib.reset();
  CHECK(format_legacy(s) == R"({"temp":[{"data":["N/A","N/A"],"name":0}],)"
                            R"("usage":[{"data":["N/A","N/A"],"name":0}],)"
                            R"("usedPercent":[{"data":["N/A","N/A"],"name":0}]})");
  s.gpus[0].memory_total_mib = 0; // a zero total is no basis for a percentage either
  CHECK_THAT(format_legacy(s), Catch::Contains(R"("usedPercent":[{"data":["N/A","N/A"])"));
}

TEST_CASE("legacy: one entry per GPU, named by index") {
  Snapshot s = test::t4_snapshot();
  s.gpus.push_back(test::t4_gpu(1));
  s.gpus[1].temperature_c = 41;
  auto document = nlohmann::json::parse(format_legacy(s));
  REQUIRE(document["temp"].size() == 2);
  CHECK(document["temp"][1]["name"] == 1);
  CHECK(document["temp"][1]["data"][1] == "41C");
}

TEST_CASE("json: typed values, null for unknown, keys in order") {
  Snapshot s = test::t4_snapshot();
  s.gpus[0].fan_speed_percent.reset();
  Process process;
  process.pid = 4242;
  process.type = "C";
  process.name = "python3";
  process.used_memory_mib = 40950;
  s.gpus[0].processes = std::vector<Process>{process};
  auto document = nlohmann::ordered_json::parse(format_json(s));
  CHECK(keys_of(document) == std::vector<std::string>{"schema", "source", "timestamp",
                                                      "driver_version", "cuda_version", "gpus",
                                                      "host", "kernel_log"});
  CHECK(document["schema"] == "nvsmi-agent.snapshot/1");
  CHECK(document["source"] == "xml");
  CHECK(document["timestamp"] == "2024-03-12T14:03:27+01:00");
  const auto &gpu = document["gpus"][0];
  std::vector<std::string> gpu_keys = keys_of(gpu);
  std::vector<std::string> required{"index",
                                    "uuid",
                                    "name",
                                    "pci_bus_id",
                                    "temperature_c",
                                    "memory_total_mib",
                                    "memory_used_mib",
                                    "memory_free_mib",
                                    "memory_used_percent",
                                    "utilization_gpu_percent",
                                    "utilization_memory_percent",
                                    "power_draw_w",
                                    "power_limit_w",
                                    "fan_speed_percent",
                                    "pstate"};
  CHECK(std::vector<std::string>(gpu_keys.begin(), gpu_keys.begin() + 15) == required);
  CHECK(gpu["memory_total_mib"].is_number_integer());
  CHECK(gpu["memory_used_percent"] == Approx(56.32));
  CHECK(gpu["power_draw_w"] == Approx(67.03));
  CHECK(gpu["fan_speed_percent"].is_null());
  CHECK(gpu["mig_devices"].is_null()); // not reported: unknown, not an empty list
  CHECK(gpu["processes"][0]["pid"] == 4242);
  CHECK(gpu["processes"][0]["used_memory_mib"] == 40950);
}

TEST_CASE("json: who runs each process, where, and the host; null where unknown") {
  Snapshot s = test::t4_snapshot();
  Process bare; // a recording's process: nothing from pmon or /proc
  bare.pid = 77;
  s.gpus[0].processes = std::vector<Process>{observed_process(4242, "alice", 40950), bare};
  s.host = observed_host();
  auto document = nlohmann::ordered_json::parse(format_json(s));
  std::vector<std::string> top = keys_of(document);
  CHECK(top[top.size() - 2] == "host"); // then kernel_log
  CHECK(top.back() == "kernel_log");
  const auto &process = document["gpus"][0]["processes"][0];
  CHECK(keys_of(process) == std::vector<std::string>{"pid",
                                                     "type",
                                                     "name",
                                                     "used_memory_mib",
                                                     "gpu_instance_id",
                                                     "compute_instance_id",
                                                     "sm_utilization_percent",
                                                     "memory_utilization_percent",
                                                     "utilization_age_seconds",
                                                     "user",
                                                     "uid",
                                                     "command",
                                                     "program",
                                                     "started",
                                                     "cpu_percent",
                                                     "host_memory_mib",
                                                     "container",
                                                     "pod_uid",
                                                     "slurm_job_id",
                                                     "systemd_unit"});
  CHECK(process["sm_utilization_percent"] == 87);
  CHECK(process["memory_utilization_percent"] == 35);
  CHECK(process["utilization_age_seconds"] == 6.2);
  CHECK(process["user"] == "alice");
  CHECK(process["uid"] == 1000 + 4242 % 7);
  CHECK(process["command"] == "python3 train.py");
  CHECK(process["program"] == "train.py"); // the name every screen gives it
  CHECK(process["started"] == "2026-11-23T09:14:02+01:00");
  CHECK(process["cpu_percent"] == Approx(101.25));
  CHECK(process["host_memory_mib"] == 5120);
  CHECK(process["container"] == std::string(64, 'a'));
  CHECK(process["pod_uid"] == "6f1c1c2e-4b1a-4a0e-9d57-3f7a8c2d1b00");
  CHECK(process["slurm_job_id"] == "81234");
  CHECK(process["systemd_unit"] == "docker-aaaa.scope");
  const auto &unknown = document["gpus"][0]["processes"][1];
  CHECK(unknown.size() == process.size());
  for (const char *key : {"sm_utilization_percent", "memory_utilization_percent", "user", "uid",
                          "command", "program", "started", "cpu_percent", "host_memory_mib",
                          "container", "pod_uid", "slurm_job_id", "systemd_unit"}) {
    INFO(key);
    CHECK(unknown[key].is_null());
  }
  CHECK(document["host"] == nlohmann::ordered_json::parse(
                                R"({"hostname":"gpu07","cpu_count":64,"cpu_percent":12.5,)"
                                R"("load1":3.25,"memory_total_mib":515000,)"
                                R"("memory_used_mib":123456,"disk_read_bytes_per_second":null,)"
                                R"("disk_write_bytes_per_second":null,)"
                                R"("network_receive_bytes_per_second":null,)"
                                R"("network_send_bytes_per_second":null})"));
  s.host->cpu_percent.reset(); // the first sample: no interval to measure over yet
  CHECK(nlohmann::json::parse(format_json(s))["host"]["cpu_percent"].is_null());
  s.host.reset();
  CHECK(nlohmann::json::parse(format_json(s))["host"].is_null());
}

TEST_CASE("json: a user, command or container of any bytes stays valid UTF-8") {
  Snapshot s = test::t4_snapshot();
  Process p = observed_process(1, "b\xff\"ob", 10);
  p.command = std::string("sh -c \"x\n\x01\xc3\x28\"");
  p.container = std::string("\xfe\xfe");
  s.gpus[0].processes = std::vector<Process>{p};
  std::string text = format_json(s);
  auto process = nlohmann::json::parse(text)["gpus"][0]["processes"][0];
  CHECK(process["user"] == "b\xef\xbf\xbd\"ob");
  CHECK(process["command"] == "sh -c \"x\n\x01\xef\xbf\xbd(\"");
  CHECK(process["container"] == "\xef\xbf\xbd\xef\xbf\xbd");
}

TEST_CASE("json: a snapshot without a timestamp says null") {
  Snapshot s = test::t4_snapshot();
  s.timestamp.reset();
  CHECK(nlohmann::json::parse(format_json(s))["timestamp"].is_null());
}

// The CSV's activity and traffic columns (dmon), after pcie.replay_counter: empty where unknown.
constexpr const char *activity_header =
    ",activity.sm [%],activity.sm_occupancy [%],activity.tensor [%],activity.dram "
    "[%],activity.fp16 [%],activity.fp32 [%],activity.fp64 [%],pcie.rx_bytes_per_second "
    "[B/s],pcie.tx_bytes_per_second [B/s],nvlink.rx_bytes_per_second "
    "[B/s],nvlink.tx_bytes_per_second [B/s],nvlink.bandwidth_bytes_per_second [B/s]";
constexpr const char *activity_cells = ",,,,,,,,,,,,";

TEST_CASE("csv: nvidia-smi's column names, plain numbers, empty for unknown") {
  Snapshot s = test::t4_snapshot();
  s.gpus[0].power_draw_w.reset();
  s.gpus[0].name = "Tesla \"T4\", rev 2"; // RFC 4180 quoting where a name needs it
  CHECK(format_csv(s) ==
        "timestamp,index,uuid,name,pstate,temperature.gpu,utilization.gpu [%],"
        "utilization.memory [%],memory.total [MiB],memory.free [MiB],memory.used [MiB],"
        "memory.used_percent [%],power.draw [W],power.limit [W],fan.speed [%],host.cpu [%],"
        "host.memory.used [MiB],host.disk.read [B/s],host.disk.write [B/s],"
        "host.network.receive [B/s],host.network.send [B/s],pcie.replay_counter" +
            std::string(activity_header) +
            "\n"
            "2024-03-12T14:03:27+01:00,0,GPU-00000000-0000-0000-0000-000000000000,"
            "\"Tesla \"\"T4\"\", rev 2\",P0,72,99,40,15079,6586,8493,56.32,,70.00,,,,,,,," +
            activity_cells + "\n");
}

TEST_CASE("csv: power limit, fan and the host's CPU, memory, disks and network, the same on each "
          "GPU's row") {
  Snapshot s = test::t4_snapshot();
  s.gpus.push_back(test::t4_gpu(1));
  s.gpus[0].fan_speed_percent = 35;
  s.host = observed_host();
  s.host->cpu_percent = 7.0 / 3;
  s.host->disk_read_bytes_per_second = 1048576.5;
  s.host->disk_write_bytes_per_second = 0; // a known idle disk is 0
  s.host->network_receive_bytes_per_second = 125000000;
  s.host->network_send_bytes_per_second = 2.25;
  std::string rows = format_csv(s, false);
  CHECK(rows == "2024-03-12T14:03:27+01:00,0,GPU-00000000-0000-0000-0000-000000000000,Tesla T4,"
                "P0,72,99,40,15079,6586,8493,56.32,67.03,70.00,35,2.33,123456,1048576.50,0.00,"
                "125000000.00,2.25," +
                    std::string(activity_cells) +
                    "\n"
                    "2024-03-12T14:03:27+01:00,1,GPU-00000000-0000-0000-0000-000000000001,"
                    "Tesla T4,P0,72,99,40,15079,6586,8493,56.32,67.03,70.00,,2.33,123456,"
                    "1048576.50,0.00,125000000.00,2.25," +
                    activity_cells + "\n");
  s.host->cpu_percent.reset(); // unknown is an empty cell, never 0
  s.host->disk_read_bytes_per_second.reset();
  s.host->network_send_bytes_per_second.reset();
  CHECK_THAT(format_csv(s, false), Catch::EndsWith(",67.03,70.00,,,123456,,0.00,125000000.00,," +
                                                   std::string(activity_cells) + "\n"));
}

TEST_CASE("csv: the header of earlier versions is known, extra fields and all") {
  std::vector<std::string> earlier = earlier_csv_headers({"serial"});
  // The oldest, then the host's two columns with the table's one at a time, then all the
  // host's columns with the table's one at a time: some never written, none the current one.
  REQUIRE(earlier.size() >= 3);
  CHECK(std::find(earlier.begin(), earlier.end(), csv_header({"serial"})) == earlier.end());
  CHECK(earlier[0] == "timestamp,index,uuid,name,pstate,temperature.gpu,utilization.gpu [%],"
                      "utilization.memory [%],memory.total [MiB],memory.free [MiB],"
                      "memory.used [MiB],memory.used_percent [%],power.draw [W],serial");
  // Before the field table's first column, pcie.replay_counter.
  CHECK(earlier[1] ==
        earlier[0].substr(0, earlier[0].size() - 7) +
            ",power.limit [W],fan.speed [%],host.cpu [%],host.memory.used [MiB],serial");
  CHECK(earlier[2] == earlier[1].substr(0, earlier[1].size() - 7) + ",pcie.replay_counter,serial");
  // The one before the activity and traffic columns: the host's disk and network, the replays.
  std::string before_activity = earlier[1].substr(0, earlier[1].size() - 7) +
                                ",host.disk.read [B/s],host.disk.write [B/s],"
                                "host.network.receive [B/s],host.network.send [B/s],"
                                "pcie.replay_counter,serial";
  CHECK(std::find(earlier.begin(), earlier.end(), before_activity) != earlier.end());
  CHECK(csv_header({"serial"}) ==
        before_activity.substr(0, before_activity.size() - 7) + activity_header + ",serial");
}

TEST_CASE("csv: an unknown timestamp leaves the first cell empty") {
  Snapshot s = test::t4_snapshot();
  s.timestamp.reset();
  std::string out = format_csv(s, false);
  CHECK(out.rfind(",0,GPU-", 0) == 0);
}

TEST_CASE("format names") {
  CHECK(format_from_name("legacy") == Format::legacy);
  CHECK(format_from_name("json") == Format::json);
  CHECK(format_from_name("csv") == Format::csv);
  CHECK_FALSE(format_from_name("yaml"));
}

TEST_CASE("extra query fields: last csv columns and json keys, text or null") {
  Snapshot s = test::t4_snapshot();
  s.gpus[0].extras = {{"driver_version", std::string("535.10")}, {"serial", std::nullopt}};
  std::string csv = format_csv(s);
  CHECK(csv.substr(0, csv.find('\n')) == csv_header({"driver_version", "serial"}));
  CHECK_THAT(csv,
             Catch::EndsWith(",67.03,70.00,,,,,,,," + std::string(activity_cells) + ",535.10,\n"));
  CHECK(extra_field_names(s) == std::vector<std::string>{"driver_version", "serial"});
  auto gpu = nlohmann::json::parse(format_json(s))["gpus"][0];
  CHECK(gpu["driver_version"] == "535.10"); // a string: "535.10" is a version, not a number
  CHECK(gpu["serial"].is_null());
}

TEST_CASE("json: quotes, control characters and invalid UTF-8 in a name stay valid JSON") {
  Snapshot s = test::t4_snapshot();
  s.gpus[0].name = std::string("a\"b\\c\n\x01 \xc3\xa9 \xff");
  s.gpus[0].power_limit_w = 700.0;
  s.gpus[0].power_draw_w = 1e-7;
  std::string text = format_json(s);
  auto gpu = nlohmann::json::parse(text)["gpus"][0];
  CHECK(gpu["name"] == "a\"b\\c\n\x01 \xc3\xa9 \xef\xbf\xbd"); // the bad byte becomes U+FFFD
  CHECK_THAT(text, Catch::Contains(R"("power_limit_w":700.0,)"));
  CHECK(gpu["power_draw_w"].get<double>() == 1e-7);
  CHECK(gpu["power_limit_w"].is_number_float());
}

namespace {

bool has(const std::string &text, const std::string &part) {
  return text.find(part) != std::string::npos;
}

const std::string gpu0 =
    R"(gpu="0",uuid="GPU-00000000-0000-0000-0000-000000000000",name="Tesla T4")";

// What serve writes with --metrics-processes.
MetricsSelection with_processes() {
  MetricsSelection selection;
  selection.processes = true;
  return selection;
}

// Two GPUs: alice on both (one process each), bob on GPU 1, and one process /proc could not see.
Snapshot shared_machine() {
  Snapshot s = test::t4_snapshot();
  s.gpus.push_back(test::t4_gpu(1));
  Process unseen;
  unseen.pid = 99;
  unseen.name = "hidden";
  unseen.used_memory_mib = 100;
  s.gpus[0].processes = std::vector<Process>{observed_process(10, "alice", 1000), unseen};
  s.gpus[1].processes =
      std::vector<Process>{observed_process(11, "alice", 3000), observed_process(12, "bob", 512)};
  s.host = observed_host();
  return s;
}

} // namespace

TEST_CASE("metrics: a process's series say who runs it and where, where known") {
  std::string m = format_snapshot_metrics(shared_machine(), with_processes());
  std::string known = gpu0 + R"(,pid="10",process_name="python3",user="alice",container=")" +
                      std::string(64, 'a') + R"(",pod_uid="6f1c1c2e-4b1a-4a0e-9d57-3f7a8c2d1b00"})";
  CHECK_THAT(m,
             Catch::Contains("\nnvsmi_gpu_process_memory_used_bytes{" + known + " 1048576000\n"));
  CHECK_THAT(m, Catch::Contains("# TYPE nvsmi_gpu_process_sm_utilization_ratio gauge\n"));
  CHECK_THAT(m, Catch::Contains("\nnvsmi_gpu_process_sm_utilization_ratio{" + known + " 0.87\n"));
  CHECK_THAT(m,
             Catch::Contains("\nnvsmi_gpu_process_memory_utilization_ratio{" + known + " 0.35\n"));
  // What is not known is no label, and no share is made up for it.
  std::string unseen = gpu0 + R"(,pid="99",process_name="hidden"})";
  CHECK_THAT(m,
             Catch::Contains("\nnvsmi_gpu_process_memory_used_bytes{" + unseen + " 104857600\n"));
  CHECK_FALSE(has(m, "nvsmi_gpu_process_sm_utilization_ratio{" + unseen));
  CHECK_FALSE(has(m, "user=\"\""));
}

TEST_CASE("metrics: per-user totals over the processes whose user is known") {
  Snapshot s = shared_machine();
  std::string m = format_snapshot_metrics(s);
  CHECK_THAT(m, Catch::Contains("# TYPE nvsmi_user_gpu_memory_used_bytes gauge\n"
                                "nvsmi_user_gpu_memory_used_bytes{user=\"alice\"} 4194304000\n"
                                "nvsmi_user_gpu_memory_used_bytes{user=\"bob\"} 536870912\n"));
  CHECK_THAT(m, Catch::Contains("# TYPE nvsmi_user_gpus gauge\n"
                                "nvsmi_user_gpus{user=\"alice\"} 2\n"
                                "nvsmi_user_gpus{user=\"bob\"} 1\n"));
  CHECK_FALSE(has(m, "nvsmi_user_gpus{}"));
  // A process of bob's whose memory is unknown: his total is unknown, not the part that is.
  Process more = observed_process(13, "bob", 0);
  more.used_memory_mib.reset();
  s.gpus[0].processes->push_back(more);
  m = format_snapshot_metrics(s);
  CHECK_FALSE(has(m, "nvsmi_user_gpu_memory_used_bytes{user=\"bob\"}"));
  CHECK_THAT(m, Catch::Contains("nvsmi_user_gpus{user=\"bob\"} 2\n"));
  CHECK_THAT(m, Catch::Contains("nvsmi_user_gpu_memory_used_bytes{user=\"alice\"} 4194304000\n"));
}

TEST_CASE("metrics: the host's CPU and memory, absent where there is no host") {
  Snapshot s = shared_machine();
  std::string m = format_snapshot_metrics(s);
  CHECK_THAT(m, Catch::Contains("# TYPE nvsmi_host_cpu_utilization_ratio gauge\n"
                                "nvsmi_host_cpu_utilization_ratio 0.125\n"));
  CHECK_THAT(m, Catch::Contains("\nnvsmi_host_memory_used_bytes 129452998656\n"));
  CHECK_THAT(m, Catch::Contains("\nnvsmi_host_memory_total_bytes 540016640000\n"));
  s.host->cpu_percent.reset();
  m = format_snapshot_metrics(s);
  CHECK_FALSE(has(m, "nvsmi_host_cpu_utilization_ratio"));
  CHECK(has(m, "nvsmi_host_memory_total_bytes"));
  // The disk and network rates: gauges in bytes a second where known, absent where not (the
  // first sample, a counter that went back), never 0.
  CHECK_FALSE(has(m, "nvsmi_host_disk_read_bytes_per_second"));
  CHECK_FALSE(has(m, "nvsmi_host_network_send_bytes_per_second"));
  s.host->disk_read_bytes_per_second = 250e6;
  s.host->disk_write_bytes_per_second = 0;
  s.host->network_receive_bytes_per_second = 1.5e9;
  m = format_snapshot_metrics(s);
  CHECK_THAT(m, Catch::Contains("# TYPE nvsmi_host_disk_read_bytes_per_second gauge\n"
                                "nvsmi_host_disk_read_bytes_per_second 250000000\n"));
  CHECK_THAT(m, Catch::Contains("\nnvsmi_host_disk_write_bytes_per_second 0\n"));
  CHECK_THAT(m, Catch::Contains("\nnvsmi_host_network_receive_bytes_per_second 1500000000\n"));
  CHECK_FALSE(has(m, "nvsmi_host_network_send_bytes_per_second"));
  s.host.reset(); // a recording: never 0
  s.gpus[0].processes.reset();
  s.gpus[1].processes = std::vector<Process>{Process{}}; // no pid: no series to hang it on
  m = format_snapshot_metrics(s, with_processes());
  CHECK_FALSE(has(m, "nvsmi_host_"));
  CHECK_FALSE(has(m, "nvsmi_user_"));
  CHECK_FALSE(has(m, "nvsmi_gpu_process_"));
}

TEST_CASE("metrics: users, commands and containers of any bytes pass promtool") {
  Snapshot s = shared_machine();
  Process &evil = (*s.gpus[1].processes)[1];
  evil.user = std::string("b\xff\"o\\b\n");
  evil.name = std::string("\xc3\x28py");
  evil.command = std::string("\xfe\xff rm -rf /");
  evil.container = std::string("c\xfe\"}");
  evil.pod_uid = std::string("\xf0\x9f\x98\x80 pod");
  Process twin = evil; // a second user name that differs only in a byte that is not UTF-8
  twin.pid = 14;
  twin.user = std::string("b\xfe\"o\\b\n");
  s.gpus[1].processes->push_back(twin);
  std::string m = format_snapshot_metrics(s, with_processes());
  CHECK_THAT(m, Catch::Contains("user=\"b\xef\xbf\xbd\\\"o\\\\b\\n\""));
  CHECK_THAT(m, Catch::Contains("container=\"c\xef\xbf\xbd\\\"}\""));
  // One series for the two names that read the same once made UTF-8.
  CHECK_THAT(m, Catch::Contains("nvsmi_user_gpus{user=\"b\xef\xbf\xbd\\\"o\\\\b\\n\"} 1\n"));
  CHECK_THAT(
      m, Catch::Contains("nvsmi_user_gpu_memory_used_bytes{user=\"b\xef\xbf\xbd\\\"o\\\\b\\n\"} "
                         "1073741824\n"));
  if (!test::installed("promtool")) {
    WARN("promtool is not installed (scripts/install-deps installs it): not checked");
    return;
  }
  test::Run check = test::promtool_check_metrics(m);
  INFO(m << check.out << check.err);
  CHECK(check.exit_code == 0);
}

TEST_CASE("json: each GPU says its state in one word, the views' definition") {
  Snapshot s = test::xml_fixture("xml/h100-8gpu-states-v12.xml");
  auto gpus = nlohmann::json::parse(format_json(s))["gpus"];
  std::vector<std::string> states;
  for (const auto &gpu : gpus)
    states.push_back(gpu["state"]);
  CHECK(states == std::vector<std::string>{"free", "in_use", "hot", "idle_but_held", "free",
                                           "at_power_limit", "in_use", "free"});
}

TEST_CASE("table: SM activity beside utilization where dmon gives it, nothing where not") {
  Snapshot s = test::t4_snapshot();
  std::string without = format_table(s, {false, 120});
  CHECK(without.find("SM ") == std::string::npos);
  s.gpus[0].sm_active_percent = 12;
  std::string with = format_table(s, {false, 120});
  CHECK(with.find("99% (SM 12%)") != std::string::npos);
}

// JsonWriter copies a string that needs no escaping as it is and looks at it four bytes a step:
// a byte that is not plain printable ASCII, at every place of the steps and of the bytes left
// after them, sends the string through the escaping, and it reads back as the text given (made
// valid UTF-8).
TEST_CASE("JsonWriter: a byte to escape anywhere in a string is escaped, others are copied") {
  for (int odd : {0x00, 0x0a, 0x1f, 0x22, 0x5c, 0x7f, 0x80, 0xc3, 0xff}) {
    for (std::size_t length = 1; length <= 11; ++length) {
      for (std::size_t place = 0; place < length; ++place) {
        std::string text(length, 'a');
        text[place] = static_cast<char>(odd);
        INFO("byte " << odd << " at " << place << " of " << length);
        std::string out;
        JsonWriter json(out);
        json.value(text);
        CHECK(is_valid_utf8(out));
        CHECK(nlohmann::json::parse(out).get<std::string>() == valid_utf8(text));
      }
    }
  }
  for (std::string plain :
       {"", "a", "ab~ ", "clocks_event_reasons", " !#$%&'()*+,-./09:;<=>?@AZ[]^_`az{|}~"}) {
    std::string out;
    JsonWriter json(out);
    json.value(plain);
    CHECK(out == "\"" + plain + "\"");
  }
}

} // namespace test_formats

TEST_CASE("JSON strings are printable: C0 and C1 controls escaped, bad bytes replaced") {
  std::string out;
  nvsmi::JsonWriter json(out);
  json.value(std::string("a\x1b[2J\xc2\x9b"
                         "31m\xff\xc2\x85z\xc2\xa0"));
  CHECK(out == "\"a\\u001b[2J\\u009b31m\xef\xbf\xbd\\u0085z\xc2\xa0\"");
  CHECK(nlohmann::json::parse(out).get<std::string>() == "a\x1b[2J\xc2\x9b"
                                                         "31m\xef\xbf\xbd\xc2\x85z\xc2\xa0");
}
