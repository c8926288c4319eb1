#include "nvsmi/csv_reader.hpp"
#include "nvsmi/quantity.hpp"
#include "nvsmi/timestamp.hpp"
#include "support.hpp"

#include <catch2/catch.hpp>

namespace test_csv_reader {

using namespace nvsmi;

namespace {

const char *units_header =
    "timestamp, driver_version, count, index, uuid, name, pci.bus_id, pstate, temperature.gpu, "
    "utilization.gpu [%], utilization.memory [%], memory.total [MiB], memory.used [MiB], "
    "memory.free [MiB], power.draw [W], power.limit [W], enforced.power.limit [W], fan.speed [%], "
    "clocks.current.graphics [MHz], clocks.current.sm [MHz], clocks.current.memory [MHz], "
    "clocks.current.video [MHz], ecc.mode.current, ecc.mode.pending, "
    "ecc.errors.corrected.volatile.total, ecc.errors.corrected.aggregate.total, "
    "ecc.errors.uncorrected.volatile.total, ecc.errors.uncorrected.aggregate.total, "
    "retired_pages.sbe, retired_pages.dbe, retired_pages.pending, remapped_rows.correctable, "
    "remapped_rows.uncorrectable, remapped_rows.pending, remapped_rows.failure, "
    "pcie.link.gen.current, pcie.link.gen.max, pcie.link.width.current, pcie.link.width.max, "
    "clocks_throttle_reasons.supported, clocks_throttle_reasons.active\n";

// The health columns of query_fields(), which carry no unit.
#define HEALTH_VALUES                                                                              \
  ", Enabled, Enabled, 3, 5, 0, 1, [N/A], [N/A], [N/A], 2, 1, Yes, No, 4, 5, 8, 16, "              \
  "0x00000000000001FF, 0x0000000000000044\n"

const char *row_with_units =
    "2024/03/12 14:03:27.512, 550.54.15, 1, 0, GPU-00000000-0000-0000-0000-000000000000, NVIDIA "
    "H100 80GB HBM3, 00000000:19:00.0, P0, 30, 45 %, 12 %, 81559 MiB, 8493 MiB, 72737 MiB, "
    "68.25 W, 700.00 W, 700.00 W, [N/A], 1980 MHz, 1980 MHz, 2619 MHz, 1545 MHz" HEALTH_VALUES;

const char *row_without_units =
    "2024/03/12 14:03:27.512, 550.54.15, 1, 0, GPU-00000000-0000-0000-0000-000000000000, NVIDIA "
    "H100 80GB HBM3, 00000000:19:00.0, P0, 30, 45, 12, 81559, 8493, 72737, 68.25, 700.00, 700.00, "
    "[N/A], 1980, 1980, 2619, 1545" HEALTH_VALUES;

void check_row(const Snapshot &snapshot) {
  REQUIRE(snapshot.gpus.size() == 1);
  const Gpu &gpu = snapshot.gpus[0];
  CHECK(snapshot.source == Source::csv);
  CHECK(snapshot.driver_version == std::string("550.54.15"));
  REQUIRE(snapshot.timestamp);
  CHECK(to_iso8601(*snapshot.timestamp) == "2024-03-12T14:03:27.512");
  CHECK(gpu.index == 0);
  CHECK(gpu.name == std::string("NVIDIA H100 80GB HBM3"));
  CHECK(gpu.pci_bus_id == std::string("00000000:19:00.0"));
  CHECK(gpu.temperature_c == 30);
  CHECK(gpu.utilization_gpu_percent == 45);
  CHECK(gpu.utilization_memory_percent == 12);
  CHECK(gpu.memory_total_mib == 81559);
  CHECK(gpu.memory_used_mib == 8493);
  CHECK(gpu.memory_free_mib == 72737);
  CHECK(gpu.power_draw_w == Approx(68.25));
  CHECK(gpu.power_limit_w == Approx(700.0));
  CHECK_FALSE(gpu.fan_speed_percent);
  CHECK(gpu.clocks.graphics_mhz == 1980);
  CHECK(gpu.clocks.memory_mhz == 2619);
  CHECK_FALSE(gpu.processes); // the query does not report them: unknown, not "none"
  const GpuHealth &health = gpu.health;
  CHECK(health.ecc_enabled == true);
  CHECK(health.ecc_volatile.corrected == 3);
  CHECK(health.ecc_aggregate.corrected == 5);
  CHECK(health.ecc_volatile.uncorrected == 0);
  CHECK(health.ecc_aggregate.uncorrected == 1);
  CHECK_FALSE(health.retired_pages_single_bit);
  CHECK_FALSE(health.retired_pages_pending);
  CHECK(health.remapped_rows_correctable == 2);
  CHECK(health.remapped_rows_uncorrectable == 1);
  CHECK(health.remapped_rows_pending == true);
  CHECK(health.remapped_rows_failure == false);
  CHECK(health.pcie_link_gen == 4);
  CHECK(health.pcie_link_gen_max == 5);
  CHECK(health.pcie_link_width == 8);
  CHECK(health.pcie_link_width_max == 16);
  CHECK_FALSE(gpu.pcie_tx_bytes_per_second); // the CSV query has no throughput
  CHECK_FALSE(health.recovery_action);       // not asked for
  REQUIRE(gpu.clock_event_reasons_active);
  CHECK(*gpu.clock_event_reasons_active ==
        std::vector<std::string>{"sw_power_cap", "hw_thermal_slowdown"});
  REQUIRE(gpu.clock_event_reasons_reported);
  CHECK(gpu.clock_event_reasons_reported->size() == 9);
}

} // namespace

TEST_CASE("CSV with units in header and values") {
  check_row(read_csv(std::string(units_header) + row_with_units));
}

TEST_CASE("CSV with nounits: header keeps units, values are bare") {
  check_row(read_csv(std::string(units_header) + row_without_units));
}

TEST_CASE("CSV without header takes its columns from the field list") {
  check_row(read_csv(row_without_units));
  check_row(read_csv(row_with_units, query_fields()));
}

TEST_CASE("CRLF line ends") {
  std::string text = std::string(units_header) + row_with_units;
  std::string crlf;
  for (char c : text)
    crlf += c == '\n' ? std::string("\r\n") : std::string(1, c);
  check_row(read_csv(crlf));
}

TEST_CASE("unknown columns are ignored wherever they stand") {
  std::string header = std::string("vbios_version, ") + units_header;
  header.insert(header.find("pstate"),
                "ecc.errors.corrected.volatile.total, brand.new.field [W], ");
  std::string row = std::string("96.00.74.00.01, ") + row_with_units;
  row.insert(row.find(" P0,") + 1, "[N/A], 12.5 W, ");
  check_row(read_csv(header + row));
}

TEST_CASE("newer power columns stand in when power.draw is unknown") {
  Snapshot s = read_csv("index, power.draw [W], power.draw.average [W], power.draw.instant [W], "
                        "power.limit [W], enforced.power.limit [W]\n"
                        "0, [N/A], 101.50 W, 99.00 W, [N/A], 300.00 W\n"
                        "1, [N/A], [N/A], 99.00 W, [N/A], [N/A]\n");
  CHECK(s.gpus[0].power_draw_w == Approx(101.5));
  CHECK(s.gpus[0].power_limit_w == Approx(300.0));
  CHECK(s.gpus[1].power_draw_w == Approx(99.0));
  CHECK_FALSE(s.gpus[1].power_limit_w);
}

TEST_CASE("module power columns are never taken for the GPU's") {
  Snapshot s =
      read_csv("index, module.power.draw.average [W], power.draw [W]\n0, 500.00 W, [N/A]\n");
  CHECK_FALSE(s.gpus[0].power_draw_w);
}

TEST_CASE("a header unit that is not the field's is an error naming the field") {
  CHECK_THROWS_WITH(read_csv("index, memory.used [KiB]\n0, 12\n"),
                    Catch::Contains("memory.used") && Catch::Contains("KiB"));
}

TEST_CASE("a value unit that is not the field's is an error naming row and field") {
  CHECK_THROWS_WITH(read_csv("index, memory.total [MiB]\n0, 81559 KiB\n"),
                    Catch::Contains("row 1") && Catch::Contains("memory.total"));
}

TEST_CASE("ragged rows, no rows, and wrong row counts are errors") {
  CHECK_THROWS_WITH(read_csv("index, name, memory.used [MiB]\n0, A100\n"),
                    Catch::Contains("2 values") && Catch::Contains("3 columns"));
  CHECK_THROWS_WITH(read_csv(units_header), Catch::Contains("no rows"));
  CHECK_THROWS_WITH(read_csv(""), Catch::Contains("empty"));
  CHECK_THROWS_WITH(read_csv("count, index\n2, 0\n"), Catch::Contains("count"));
}

TEST_CASE("every reading unknown") {
  Snapshot s = read_csv("index, name, temperature.gpu, memory.total [MiB], memory.used [MiB], "
                        "utilization.gpu [%], power.draw [W], fan.speed [%], pstate\n"
                        "0, NVIDIA GeForce RTX 4090, [GPU is lost], [Unknown Error], "
                        "[Insufficient Permissions], [Not Supported], [N/A], "
                        "[Requested functionality has been deprecated], [N/A]\n");
  const Gpu &gpu = s.gpus[0];
  CHECK_FALSE(gpu.temperature_c);
  CHECK_FALSE(gpu.memory_total_mib);
  CHECK_FALSE(gpu.memory_used_mib);
  CHECK_FALSE(gpu.memory_used_percent());
  CHECK_FALSE(gpu.utilization_gpu_percent);
  CHECK_FALSE(gpu.power_draw_w);
  CHECK_FALSE(gpu.fan_speed_percent);
  CHECK_FALSE(gpu.pstate);
}

TEST_CASE("rows are read one at a time for a stream") {
  CsvLayout layout = CsvLayout::from_fields(query_fields());
  CsvRow row = read_csv_row(row_without_units, layout, 0);
  CHECK(row.gpu_count == 1);
  CHECK(row.gpu.memory_used_mib == 8493);
  CHECK(CsvLayout::is_header(units_header));
  CHECK_FALSE(CsvLayout::is_header(row_with_units));
}

TEST_CASE("a 200+ column header of which we know a few (fixture)") {
  Snapshot s = read_csv(test::read_file(test::fixture_path("csv/wide-header-2gpu.csv")));
  REQUIRE(s.gpus.size() == 2);
  CHECK(s.driver_version == std::string("580.95.05"));
  const Gpu &busy = s.gpus[1];
  CHECK(busy.index == 1);
  CHECK(busy.name == std::string("NVIDIA L4"));
  CHECK(busy.pci_bus_id == std::string("00000000:3A:00.0"));
  CHECK(busy.temperature_c == 61);
  CHECK(busy.utilization_gpu_percent == 87);
  CHECK(busy.utilization_memory_percent == 45);
  CHECK(busy.memory_total_mib == 23034);
  CHECK(busy.memory_used_mib == 17001);
  CHECK(busy.memory_free_mib == 5562);
  CHECK(busy.power_draw_w == Approx(71.92));
  CHECK(busy.power_limit_w == Approx(72.0));
  CHECK_FALSE(busy.fan_speed_percent);
  CHECK(busy.pstate == std::string("P0"));
  CHECK(busy.clocks.graphics_mhz == 2040);
  CHECK(busy.clocks.video_mhz == 1770);
  CHECK(s.gpus[0].power_draw_w == Approx(16.30));
}

TEST_CASE("every reading unknown (fixture)") {
  Snapshot s = read_csv(test::read_file(test::fixture_path("csv/rtx4090-all-unknown.csv")));
  REQUIRE(s.gpus.size() == 1);
  const Gpu &gpu = s.gpus[0];
  CHECK(gpu.name == std::string("NVIDIA GeForce RTX 4090"));
  CHECK_FALSE(gpu.temperature_c);
  CHECK_FALSE(gpu.memory_total_mib);
  CHECK_FALSE(gpu.memory_used_mib);
  CHECK_FALSE(gpu.memory_free_mib);
  CHECK_FALSE(gpu.utilization_gpu_percent);
  CHECK_FALSE(gpu.utilization_memory_percent);
  CHECK_FALSE(gpu.power_draw_w);
  CHECK_FALSE(gpu.power_limit_w);
  CHECK_FALSE(gpu.fan_speed_percent);
  CHECK_FALSE(gpu.clocks.graphics_mhz);
  CHECK_FALSE(gpu.clocks.memory_mhz);
}

TEST_CASE("a row of the agent's own CSV: RFC 4180 quotes and an ISO 8601 timestamp") {
  CsvLayout layout = CsvLayout::from_header("timestamp,index,name,memory.used [MiB]");
  CsvRow row =
      read_csv_row(R"(2024-03-12T14:03:27.512+01:00,3,"Tesla ""T4"", rev 2",512)", layout, 0);
  REQUIRE(row.timestamp);
  CHECK(to_iso8601(*row.timestamp) == "2024-03-12T14:03:27.512+01:00");
  CHECK(row.gpu.index == 3);
  CHECK(row.gpu.name == std::string("Tesla \"T4\", rev 2"));
  CHECK(row.gpu.memory_used_mib == 512);
  // A quote that does not open a cell is text; one that is never closed leaves the cell as is.
  CHECK(read_csv_row(R"(,0,say "hi",1)", layout, 0).gpu.name == std::string("say \"hi\""));
  CHECK(read_csv_row(R"(,0,"open, 1)", layout, 0).gpu.name == std::string("\"open"));
}

TEST_CASE("extra query fields are kept per GPU as text, unknown markers as null") {
  CsvLayout layout = CsvLayout::from_fields({"index", "memory.used"}, {"vbios_version", "serial"});
  CsvRow row = read_csv_row("2, 512, 96.00.74.00.0D, [N/A]", layout, 0);
  CHECK(row.gpu.memory_used_mib == 512);
  REQUIRE(row.gpu.extras.size() == 2);
  CHECK(row.gpu.extras[0].name == "vbios_version");
  CHECK(row.gpu.extras[0].value == std::string("96.00.74.00.0D"));
  CHECK(row.gpu.extras[1].name == "serial");
  CHECK_FALSE(row.gpu.extras[1].value);
  // Columns the reader does not know, from a header, are still ignored rather than kept.
  CHECK(read_csv_row("2, x", CsvLayout::from_header("index, brand.new"), 0).gpu.extras.empty());
  // ...unless the caller names them: the report reads the agent's own `host.cpu [%]` this way.
  CsvRow named = read_csv_row(
      "2, x, 96.5", CsvLayout::from_header("index, brand.new, host.cpu [%]", {"host.cpu"}), 0);
  REQUIRE(named.gpu.extras.size() == 1);
  CHECK(named.gpu.extras[0].name == "host.cpu");
  CHECK(named.gpu.extras[0].value == std::string("96.5"));
}

// The CSV reader reads plain cells itself, for speed, and leaves the rest to parse_integer,
// parse_real and parse_flag: whichever way a cell goes, the reading or the message must be theirs.
TEST_CASE("plain cells read as the general parsers read them") {
  CsvLayout layout = CsvLayout::from_fields({"memory.used", "power.draw", "retired_pages.pending"});
  auto row = [&](const std::string &used, const std::string &draw, const std::string &pending) {
    return read_csv_row(used + ", " + draw + ", " + pending, layout, 0).gpu;
  };
  auto message = [](auto parse) {
    try {
      parse();
    } catch (const ParseError &error) {
      return "row 1 " + std::string(error.what());
    }
    return std::string();
  };
  auto check_power_like_parse_real = [&](const std::string &cell) {
    INFO(cell);
    std::string expected =
        message([&] { return parse_real(cell, Unit::watt, UnitPolicy::optional, "power.draw"); });
    if (expected.empty())
      CHECK(row("1", cell, "No").power_draw_w ==
            parse_real(cell, Unit::watt, UnitPolicy::optional, "power.draw"));
    else
      CHECK_THROWS_WITH(row("1", cell, "No"), expected);
  };
  for (std::string cell : {"0",
                           "007",
                           "81559",
                           "123456789012345678",
                           "9223372036854775807",
                           "9223372036854775808",
                           "99999999999999999999",
                           "-0",
                           "-1",
                           "1.5",
                           "5.",
                           ".5",
                           "1e3",
                           "inf",
                           "0x10",
                           "[N/A]",
                           "[]",
                           "[",
                           "]",
                           "[Not Supported]",
                           "N/A",
                           "Unknown Error",
                           "81559 MiB",
                           "81559 MB",
                           "81559MiB"}) {
    INFO(cell);
    std::string expected = message(
        [&] { return parse_integer(cell, Unit::mib, UnitPolicy::optional, "memory.used"); });
    if (expected.empty())
      CHECK(row(cell, "1", "No").memory_used_mib ==
            parse_integer(cell, Unit::mib, UnitPolicy::optional, "memory.used"));
    else
      CHECK_THROWS_WITH(row(cell, "1", "No"), expected);
  }
  for (std::string cell : {"0",
                           "0.0",
                           "-0.0",
                           "68.25",
                           "700.00",
                           "5.",
                           ".5",
                           "1.2.3",
                           "1e3",
                           "nan",
                           "0.1",
                           "0.3",
                           "123456789012345",
                           "1234567890123456",
                           "12345678901234.5",
                           "1234567890123456.7",
                           "9007199254740993",
                           "[N/A]",
                           "N/A",
                           "68.25 W",
                           "68.25 MiB"}) {
    check_power_like_parse_real(cell);
  }
  // Every decimal of up to 16 characters: the reader's own division rounds as from_chars does.
  std::uint64_t seed = 1;
  for (int i = 0; i < 20000; ++i) {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    std::string digits = std::to_string(seed >> 11).substr(0, 1 + (seed >> 3) % 15);
    std::size_t point = (seed >> 7) % (digits.size() + 1);
    std::string cell = digits.substr(0, point) + "." + digits.substr(point);
    check_power_like_parse_real(cell);
  }
  for (std::string cell :
       {"Yes", "No", "yes", "Maybe", "[N/A]", "N/A", "[GPU is lost]", "Yes No"}) {
    INFO(cell);
    std::string expected =
        message([&] { return parse_flag(cell, "Yes", "No", "retired_pages.pending"); });
    if (expected.empty())
      CHECK(row("1", "1", cell).health.retired_pages_pending ==
            parse_flag(cell, "Yes", "No", "retired_pages.pending"));
    else
      CHECK_THROWS_WITH(row("1", "1", cell), expected);
  }
}

TEST_CASE(
    "the PCIe replay counter: not in the real H200 recording's CSV, read from the log's column") {
  const std::string folder = "recorded/nvidia-h200__580.159.04/";
  // Driver 580 has no --query-gpu field for it: unknown from its CSV, never 0.
  Snapshot csv = read_csv(test::read_file(test::fixture_path(folder + "query-gpu-all.csv")));
  REQUIRE(csv.gpus.size() == 1);
  CHECK_FALSE(csv.gpus[0].health.pcie_replay_count);
  CHECK(read_csv("index, pcie.replay_counter\n0, 7\n").gpus[0].health.pcie_replay_count ==
        Reading(7));
  CHECK_THROWS_AS(read_csv("index, pcie.replay_counter [KB/s]\n0, 7\n"), ParseError);
}

} // namespace test_csv_reader
