#include "formats/formats.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

using namespace nvsmi;

namespace {

Gpu sample_gpu(int index) {
  Gpu gpu;
  gpu.index = index;
  gpu.uuid = "GPU-00000000-0000-0000-0000-00000000000" + std::to_string(index);
  gpu.name = "Tesla T4";
  gpu.pci_bus_id = "00000000:00:1E.0";
  gpu.pstate = "P0";
  gpu.temperature_c = 72;
  gpu.memory_total_mib = 15079;
  gpu.memory_used_mib = 8493;
  gpu.memory_free_mib = 6586;
  gpu.utilization_gpu_percent = 99;
  gpu.utilization_memory_percent = 40;
  gpu.power_draw_w = 67.03;
  gpu.power_limit_w = 70.0;
  return gpu;
}

Snapshot sample_snapshot() {
  Snapshot s;
  s.source = Source::xml;
  s.timestamp = Timestamp{2024, 3, 12, 14, 3, 27, std::nullopt, 60};
  s.driver_version = "550.54.15";
  s.cuda_version = "12.4";
  s.gpus = {sample_gpu(0)};
  return s;
}

} // namespace

TEST_CASE("legacy: exactly the shape and key order the UI reads") {
  CHECK(format_legacy(sample_snapshot()) ==
        R"({"temp":[{"data":["72","72C"],"name":0}],)"
        R"("usage":[{"data":["8493","8493MiB/15079MiB"],"name":0}],)"
        R"("usedPercent":[{"data":["56.32","56.32%"],"name":0}]})");
}

TEST_CASE("legacy: the Go example's bugs are gone") {
  Snapshot s = sample_snapshot();
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
  Snapshot s = sample_snapshot();
  s.gpus[0].temperature_c.reset();
  s.gpus[0].memory_total_mib.reset();
  CHECK(format_legacy(s) == R"({"temp":[{"data":["N/A","N/A"],"name":0}],)"
                            R"("usage":[{"data":["N/A","N/A"],"name":0}],)"
                            R"("usedPercent":[{"data":["N/A","N/A"],"name":0}]})");
  s.gpus[0].memory_total_mib = 0; // a zero total is no basis for a percentage either
  CHECK_THAT(format_legacy(s), Catch::Contains(R"("usedPercent":[{"data":["N/A","N/A"])"));
}

TEST_CASE("legacy: one entry per GPU, named by index") {
  Snapshot s = sample_snapshot();
  s.gpus.push_back(sample_gpu(1));
  s.gpus[1].temperature_c = 41;
  auto document = nlohmann::json::parse(format_legacy(s));
  REQUIRE(document["temp"].size() == 2);
  CHECK(document["temp"][1]["name"] == 1);
  CHECK(document["temp"][1]["data"][1] == "41C");
}

TEST_CASE("json: typed values, null for unknown, keys in order") {
  Snapshot s = sample_snapshot();
  s.gpus[0].fan_speed_percent.reset();
  // By member: Process grows (pmon's shares, /proc's figures), and an aggregate would not say
  // which.
  Process python;
  python.pid = 4242;
  python.type = "C";
  python.name = "python3";
  python.used_memory_mib = 40950;
  s.gpus[0].processes = std::vector<Process>{python};
  auto document = nlohmann::ordered_json::parse(format_json(s));
  std::vector<std::string> keys;
  for (auto &item : document.items())
    keys.push_back(item.key());
  CHECK(keys == std::vector<std::string>{"schema", "source", "timestamp", "driver_version",
                                         "cuda_version", "gpus"});
  CHECK(document["schema"] == "nvsmi-agent.snapshot/1");
  CHECK(document["source"] == "xml");
  CHECK(document["timestamp"] == "2024-03-12T14:03:27+01:00");
  const auto &gpu = document["gpus"][0];
  std::vector<std::string> gpu_keys;
  for (auto &item : gpu.items())
    gpu_keys.push_back(item.key());
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

TEST_CASE("json: a snapshot without a timestamp says null") {
  Snapshot s = sample_snapshot();
  s.timestamp.reset();
  CHECK(nlohmann::json::parse(format_json(s))["timestamp"].is_null());
}

TEST_CASE("csv: nvidia-smi's column names, plain numbers, empty for unknown") {
  Snapshot s = sample_snapshot();
  s.gpus[0].power_draw_w.reset();
  s.gpus[0].name = "Tesla \"T4\", rev 2"; // RFC 4180 quoting where a name needs it
  CHECK(format_csv(s) ==
        "timestamp,index,uuid,name,pstate,temperature.gpu,utilization.gpu [%],"
        "utilization.memory [%],memory.total [MiB],memory.free [MiB],memory.used [MiB],"
        "memory.used_percent [%],power.draw [W]\n"
        "2024-03-12T14:03:27+01:00,0,GPU-00000000-0000-0000-0000-000000000000,"
        "\"Tesla \"\"T4\"\", rev 2\",P0,72,99,40,15079,6586,8493,56.32,\n");
}

TEST_CASE("csv: an unknown timestamp leaves the first cell empty") {
  Snapshot s = sample_snapshot();
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
  Snapshot s = sample_snapshot();
  s.gpus[0].extras = {{"driver_version", std::string("535.10")}, {"serial", std::nullopt}};
  std::string csv = format_csv(s);
  CHECK(csv.substr(0, csv.find('\n')) == csv_header({"driver_version", "serial"}));
  CHECK_THAT(csv, Catch::EndsWith(",67.03,535.10,\n"));
  CHECK(extra_field_names(s) == std::vector<std::string>{"driver_version", "serial"});
  auto gpu = nlohmann::json::parse(format_json(s))["gpus"][0];
  CHECK(gpu["driver_version"] == "535.10"); // a string: "535.10" is a version, not a number
  CHECK(gpu["serial"].is_null());
}

TEST_CASE("json: quotes, control characters and invalid UTF-8 in a name stay valid JSON") {
  Snapshot s = sample_snapshot();
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
