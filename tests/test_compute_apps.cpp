#include "nvsmi/compute_apps.hpp"
#include "nvsmi/csv_reader.hpp"
#include "nvsmi/quantity.hpp"
#include "nvsmi/utf8.hpp"
#include "nvsmi/xml_reader.hpp"
#include "snapshot_builders.hpp"
#include "support.hpp"

#include <catch2/catch.hpp>

namespace test_compute_apps {

using namespace nvsmi;

namespace {

std::vector<ComputeApp> read_fixture(const std::string &name) {
  return read_compute_apps(test::read_file(test::fixture_path("processes/" + name)));
}

// The four processes of xml/h100-8gpu-v12.xml, as the query prints them.
void check_8gpu(const std::vector<ComputeApp> &apps) {
  REQUIRE(apps.size() == 4);
  CHECK(apps[0].gpu_uuid == std::string("GPU-00000000-0000-0000-0000-000000000002"));
  CHECK(apps[0].pid == 4242);
  CHECK(apps[0].process_name == std::string("python3"));
  CHECK(apps[0].used_memory_mib == 40950);
  CHECK(apps[2].gpu_uuid == std::string("GPU-00000000-0000-0000-0000-000000000003"));
  CHECK(apps[2].pid == 5002);
  CHECK(apps[2].process_name == std::string("/usr/bin/torchrun"));
  CHECK(apps[2].used_memory_mib == 40990);
  CHECK(apps[3].process_name == std::string("vllm serve"));
  CHECK(apps[3].used_memory_mib == 65000);
}

std::string message_of(const std::string &text) {
  try {
    read_compute_apps(text);
  } catch (const ParseError &error) {
    return error.what();
  }
  FAIL("no ParseError for: " << text);
  return {};
}

const char *header = "gpu_uuid, pid, used_gpu_memory [MiB], process_name\n";

} // namespace

TEST_CASE("compute-apps: the fields asked for, process_name last") {
  CHECK(compute_apps_fields() ==
        std::vector<std::string>{"gpu_uuid", "pid", "used_gpu_memory", "process_name"});
}

TEST_CASE("compute-apps: header with units, values with units") {
  check_8gpu(read_fixture("compute-apps-8gpu.csv"));
}

TEST_CASE("compute-apps: csv,nounits keeps the header's unit, values are bare") {
  check_8gpu(read_fixture("compute-apps-8gpu-nounits.csv"));
}

TEST_CASE("compute-apps: without a header the columns are compute_apps_fields()") {
  std::string text = test::read_file(test::fixture_path("processes/compute-apps-8gpu.csv"));
  check_8gpu(read_compute_apps(text.substr(text.find('\n') + 1)));
  std::string bare = test::read_file(test::fixture_path("processes/compute-apps-8gpu-nounits.csv"));
  check_8gpu(read_compute_apps(bare.substr(bare.find('\n') + 1)));
}

TEST_CASE("compute-apps: empty output and a header alone are no process") {
  CHECK(read_compute_apps("").empty());
  CHECK(read_compute_apps("\n\r\n  \n").empty());
  CHECK(read_fixture("compute-apps-none.csv").empty());
}

TEST_CASE("compute-apps: Windows paths, [N/A] memory, extra columns, name before memory, CRLF") {
  std::vector<ComputeApp> apps = read_fixture("compute-apps-windows-crlf.csv");
  REQUIRE(apps.size() == 4);
  for (const ComputeApp &app : apps) {
    CHECK(app.gpu_uuid == std::string("GPU-00000000-0000-0000-0000-000000000040"));
    CHECK_FALSE(app.used_memory_mib); // [N/A]: unknown, never 0
  }
  CHECK(apps[0].pid == 1184);
  CHECK(apps[0].process_name == std::string("C:\\Windows\\System32\\dwm.exe"));
  CHECK(apps[1].process_name ==
        std::string("C:\\Program Files\\NVIDIA Corporation\\NVIDIA App\\CEF\\NVIDIA Overlay.exe"));
  // The name holds ", " and is not the last column: it takes the cell to spare, as printed.
  CHECK(apps[2].pid == 9920);
  CHECK(apps[2].process_name ==
        std::string("C:\\Users\\dana\\AppData\\Local\\Programs\\Blender Foundation, "
                    "Inc\\Blender 4.2\\blender.exe"));
  CHECK(apps[3].pid == 12044);
  CHECK(apps[3].process_name == std::string("C:\\Windows\\explorer.exe"));
}

TEST_CASE("compute-apps: a last process_name is the rest of the line, commas and spaces kept") {
  std::vector<ComputeApp> apps = read_compute_apps(
      std::string(header) +
      "GPU-00000000-0000-0000-0000-000000000001, 77, 12 MiB, python3 train.py --tags a,b, c\n"
      "GPU-00000000-0000-0000-0000-000000000001, 78, 13 MiB, , odd,\n");
  REQUIRE(apps.size() == 2);
  CHECK(apps[0].process_name == std::string("python3 train.py --tags a,b, c"));
  CHECK(apps[0].used_memory_mib == 12);
  CHECK(apps[1].process_name == std::string(", odd,"));
}

TEST_CASE("compute-apps: columns in any order, aliases, and unknown columns ignored") {
  std::vector<ComputeApp> apps =
      read_compute_apps("used_memory [MiB], brand_new_field, name, pid, gpu_uuid\n"
                        "512 MiB, 7, trainer, 31337, GPU-00000000-0000-0000-0000-000000000005\n");
  REQUIRE(apps.size() == 1);
  CHECK(apps[0].used_memory_mib == 512);
  CHECK(apps[0].process_name == std::string("trainer"));
  CHECK(apps[0].pid == 31337);
  CHECK(apps[0].gpu_uuid == std::string("GPU-00000000-0000-0000-0000-000000000005"));
}

TEST_CASE("compute-apps: unknown markers are nullopt, never 0") {
  std::vector<ComputeApp> apps = read_compute_apps(
      std::string(header) + "[N/A], [N/A], [Not Supported], [Insufficient Permissions]\n");
  REQUIRE(apps.size() == 1);
  CHECK_FALSE(apps[0].gpu_uuid);
  CHECK_FALSE(apps[0].pid);
  CHECK_FALSE(apps[0].used_memory_mib);
  CHECK_FALSE(apps[0].process_name);
}

TEST_CASE("compute-apps: a header printed again is not a row") {
  std::vector<ComputeApp> apps = read_compute_apps(
      std::string(header) + "GPU-00000000-0000-0000-0000-000000000001, 1, 1 MiB, a\n" + header +
      "GPU-00000000-0000-0000-0000-000000000001, 2, 2 MiB, b\n");
  REQUIRE(apps.size() == 2);
  CHECK(apps[1].pid == 2);
}

TEST_CASE("compute-apps: errors name the field or show the line") {
  SECTION("a wrong unit in a value names used_gpu_memory") {
    std::string message =
        message_of(std::string(header) + "GPU-00000000-0000-0000-0000-000000000001, 1, 5 KiB, a\n");
    CHECK_THAT(message, Catch::Contains("used_gpu_memory"));
    CHECK_THAT(message, Catch::Contains("KiB"));
  }
  SECTION("a wrong unit in the header names used_gpu_memory") {
    CHECK_THAT(message_of("gpu_uuid, pid, used_gpu_memory [KiB], process_name\n"),
               Catch::Contains("used_gpu_memory"));
  }
  SECTION("a pid that is not a whole number names pid") {
    CHECK_THAT(message_of(std::string(header) +
                          "GPU-00000000-0000-0000-0000-000000000001, 12x, 5 MiB, a\n"),
               Catch::Contains("pid"));
    CHECK_THAT(message_of(std::string(header) +
                          "GPU-00000000-0000-0000-0000-000000000001, -4, 5 MiB, a\n"),
               Catch::Contains("pid"));
    CHECK_THAT(message_of(std::string(header) +
                          "GPU-00000000-0000-0000-0000-000000000001, 4.5, 5 MiB, a\n"),
               Catch::Contains("pid"));
  }
  SECTION("nvidia-smi's message instead of rows") {
    std::string message = message_of(std::string(header) + "No running processes found\n");
    CHECK_THAT(message, Catch::Contains("not a row"));
    CHECK_THAT(message, Catch::Contains("No running processes found"));
    CHECK_THAT(message_of("Failed to initialize NVML: Driver/library version mismatch\n"),
               Catch::Contains("Failed to initialize NVML"));
  }
  SECTION("a short row when the name is not last (nothing can take the place of a cell)") {
    CHECK_THAT(message_of("gpu_uuid, pid, process_name, used_gpu_memory [MiB]\nGPU-1, 5, x\n"),
               Catch::Contains("not a row"));
  }
  SECTION("a message quotes at most a bounded excerpt of a hostile line") {
    std::string message = message_of(std::string(header) + std::string(100000, 'x') + "\n");
    CHECK(message.size() < 300);
  }
  SECTION("a message quotes valid UTF-8 and no control character, whatever bytes the line has") {
    // A byte that begins no character, an escape sequence, CSI as its C1 character (U+009B), a
    // character past the excerpt's 80 bytes cut in two.
    std::string line = "\xff\xfe \x1b[31m red \xc2\x9b"
                       "31m " +
                       std::string(60, 'a') + "\xc3\xa9\xc3\xa9";
    std::string message = message_of(std::string(header) + line + "\n");
    INFO(message);
    CHECK(nvsmi::is_valid_utf8(message));
    for (char c : message)
      CHECK((static_cast<unsigned char>(c) >= 0x20 && c != 0x7f));
    CHECK(message.find("\xc2\x9b") == std::string::npos);
    CHECK_THAT(message, Catch::Contains("?[31m red ?31m aaa"));
  }
}

TEST_CASE("attach_compute_apps: each GPU gets its apps by uuid, type C, in output order") {
  Snapshot snapshot = read_csv(test::read_file(test::fixture_path("csv/h100-8gpu.csv")));
  REQUIRE(snapshot.gpus.size() == 8);
  std::vector<ComputeApp> apps = read_fixture("compute-apps-8gpu.csv");
  ComputeApp stranger;
  stranger.gpu_uuid = "GPU-00000000-0000-0000-0000-0000000000ff";
  stranger.pid = 999;
  apps.push_back(stranger);
  attach_compute_apps(snapshot, apps);
  for (int i : {0, 1, 4, 5, 7}) {
    INFO("GPU " << i);
    REQUIRE(snapshot.gpus[i].processes);
    CHECK(snapshot.gpus[i].processes->empty()); // known to have none
  }
  REQUIRE(snapshot.gpus[3].processes);
  const std::vector<Process> &three = *snapshot.gpus[3].processes;
  REQUIRE(three.size() == 2);
  CHECK(three[0].pid == 5001);
  CHECK(three[1].pid == 5002);
  CHECK(three[1].type == std::string("C"));
  CHECK(three[1].name == std::string("/usr/bin/torchrun"));
  CHECK(three[1].used_memory_mib == 40990);
  CHECK_FALSE(three[1].sm_utilization_percent); // compute-apps does not say
  REQUIRE(snapshot.gpus[6].processes);
  CHECK(snapshot.gpus[6].processes->at(0).name == std::string("vllm serve"));
  std::size_t total = 0;
  for (const Gpu &gpu : snapshot.gpus)
    total += gpu.processes->size();
  CHECK(total == 4); // the app on a GPU not in the sample is dropped
}

TEST_CASE("attach_compute_apps: matches the XML's own process lists") {
  Snapshot from_xml = test::xml_fixture("xml/h100-8gpu-v12.xml");
  Snapshot from_csv = read_csv(test::read_file(test::fixture_path("csv/h100-8gpu.csv")));
  attach_compute_apps(from_csv, read_fixture("compute-apps-8gpu.csv"));
  REQUIRE(from_xml.gpus.size() == from_csv.gpus.size());
  for (std::size_t i = 0; i < from_xml.gpus.size(); ++i) {
    INFO("GPU " << i);
    REQUIRE(from_xml.gpus[i].processes);
    REQUIRE(from_csv.gpus[i].processes);
    REQUIRE(from_xml.gpus[i].processes->size() == from_csv.gpus[i].processes->size());
    for (std::size_t j = 0; j < from_xml.gpus[i].processes->size(); ++j) {
      const Process &want = from_xml.gpus[i].processes->at(j);
      const Process &got = from_csv.gpus[i].processes->at(j);
      CHECK(got.pid == want.pid);
      CHECK(got.type == want.type);
      CHECK(got.name == want.name);
      CHECK(got.used_memory_mib == want.used_memory_mib);
    }
  }
}

TEST_CASE("attach_compute_apps: a GPU without a uuid keeps nullopt; MIG apps match the GPU") {
  Snapshot snapshot;
  snapshot.gpus.resize(2);
  snapshot.gpus[0].uuid = "GPU-00000000-0000-0000-0000-000000000000";
  snapshot.gpus[1].index = 1; // no uuid: nothing can be matched to it
  std::vector<ComputeApp> apps = read_compute_apps(
      std::string(header) + "GPU-00000000-0000-0000-0000-000000000000, 10, 100 MiB, a\n"
                            "MIG-00000000-0000-0000-0000-000000000000, 11, 100 MiB, b\n"
                            "GPU-00000000-0000-0000-0000-000000000000, 12, 200 MiB, c\n");
  attach_compute_apps(snapshot, apps);
  REQUIRE(snapshot.gpus[0].processes);
  REQUIRE(snapshot.gpus[0].processes->size() == 2);
  CHECK(snapshot.gpus[0].processes->at(0).pid == 10);
  CHECK(snapshot.gpus[0].processes->at(1).pid == 12);
  CHECK_FALSE(snapshot.gpus[1].processes);
}

TEST_CASE("compute-apps loop: rows grouped by their timestamp, the last one taken by flush") {
  ComputeAppsLoopReader reader;
  std::vector<ComputeAppsLoopReader::Sample> samples;
  auto add = [&](const std::string &line) {
    ComputeAppsLoopReader::Outcome outcome = reader.add_line(line);
    INFO(line);
    CHECK_FALSE(outcome.error.has_value());
    if (outcome.sample)
      samples.push_back(*outcome.sample);
  };
  // As `--format=csv,nounits -lms 500` prints it, with timestamp first: a header once, then two
  // processes in one iteration, one in the next, and a name holding ", ".
  add("timestamp, gpu_uuid, pid, used_gpu_memory [MiB], process_name");
  add("2026/11/26 02:31:30.012, GPU-00000000-0000-0000-0000-000000000000, 473, 1578, python3");
  add("2026/11/26 02:31:30.012, GPU-00000000-0000-0000-0000-000000000001, 474, 20, a, b");
  CHECK(samples.empty()); // the iteration may have more rows to come
  add("2026/11/26 02:31:30.512, GPU-00000000-0000-0000-0000-000000000000, 473, 1580, python3");
  REQUIRE(samples.size() == 1);
  CHECK(samples[0].timestamp == "2026/11/26 02:31:30.012");
  REQUIRE(samples[0].apps.size() == 2);
  CHECK(samples[0].apps[1].pid == 474);
  CHECK(samples[0].apps[1].process_name == std::string("a, b"));
  CHECK(samples[0].apps[1].used_memory_mib == 20);

  std::optional<ComputeAppsLoopReader::Sample> last = reader.flush();
  REQUIRE(last.has_value());
  CHECK(last->timestamp == "2026/11/26 02:31:30.512");
  REQUIRE(last->apps.size() == 1);
  CHECK(last->apps[0].used_memory_mib == 1580);
  CHECK_FALSE(reader.flush().has_value()); // taken once

  // A row of the iteration already taken comes late: skipped, not a second sample of that moment.
  ComputeAppsLoopReader::Outcome late = reader.add_line(
      "2026/11/26 02:31:30.512, GPU-00000000-0000-0000-0000-000000000001, 474, 20, x");
  CHECK(late.error.has_value());
  CHECK_FALSE(reader.flush().has_value());
}

TEST_CASE("compute-apps loop: the real H200 loop, re-asked with timestamps, and bad lines") {
  // The recorded loop has no timestamp column: without one a row cannot be placed, so it is an
  // error, never a guess.
  ComputeAppsLoopReader plain;
  CHECK(plain.add_line("GPU-00000000-0000-0000-0000-000000000000, 473, 1578 MiB, python3")
            .error.has_value());

  ComputeAppsLoopReader reader;
  for (const char *bad :
       {"[N/A], GPU-00000000-0000-0000-0000-000000000000, 473, 1578, python3",
        "2026/11/26 02:31:30.012, GPU-00000000-0000-0000-0000-000000000000, x, 1578, python3",
        "2026/11/26 02:31:30.012, GPU-00000000-0000-0000-0000-000000000000, 473, 1578 W, p",
        "No devices were found"}) {
    INFO(bad);
    ComputeAppsLoopReader::Outcome outcome = reader.add_line(bad);
    CHECK(outcome.error.has_value());
    CHECK_FALSE(outcome.sample.has_value());
  }
  CHECK(reader.add_line(std::string(5000, 'a')).error.has_value());
  CHECK_FALSE(reader.flush().has_value());

  // Past 4096 rows one iteration is dropped whole, the rest of its rows with it.
  std::string row = "2026/11/26 02:31:30.012, GPU-00000000-0000-0000-0000-000000000000, ";
  int errors = 0;
  for (int pid = 1; pid <= 4100; ++pid)
    errors += reader.add_line(row + std::to_string(pid) + ", 1, p").error.has_value();
  CHECK(errors == 4);
  CHECK_FALSE(reader.flush().has_value());
  ComputeAppsLoopReader::Outcome next =
      reader.add_line("2026/11/26 02:31:30.512, GPU-00000000-0000-0000-0000-000000000000, 7, 1, p");
  CHECK_FALSE(next.error.has_value());
  CHECK_FALSE(next.sample.has_value()); // the dropped iteration gives no sample
  REQUIRE(reader.flush().has_value());
}

TEST_CASE("compute-apps loop: a header alone is told from a header and any other line") {
  ComputeAppsLoopReader reader;
  CHECK_FALSE(reader.header_alone()); // nothing yet: not even the header
  reader.add_line("");
  CHECK_FALSE(reader.header_alone());
  reader.add_line("timestamp, gpu_uuid, pid, used_gpu_memory [MiB], process_name");
  reader.add_line("");
  CHECK(reader.header_alone()); // the first iteration listed no process, once quiet

  // A row, a line that is not one, or an overlong line: no longer the header alone.
  for (const std::string &line :
       {std::string("2026/11/26 02:31:30.012, GPU-00000000-0000-0000-0000-000000000000, 4, 1, p"),
        std::string("No devices were found"), std::string(5000, 'a')}) {
    INFO(line.substr(0, 40));
    ComputeAppsLoopReader other;
    other.add_line("timestamp, gpu_uuid, pid, used_gpu_memory [MiB], process_name");
    other.add_line(line);
    CHECK_FALSE(other.header_alone());
    other.flush();
    CHECK_FALSE(other.header_alone());
  }
}

} // namespace test_compute_apps
