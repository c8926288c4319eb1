// docs/BAD-INPUT.md, "Readers" and "Numbers": what the readers and the agent do with hostile or
// broken input. Each TEST_CASE is named after an input (in bold) of those tables.
#include "formats/formats.hpp"
#include "kernel_log/kmsg_record.hpp"
#include "report/report.hpp"
#include "snapshot_builders.hpp"
#include "support.hpp"

#include "nvsmi/csv_reader.hpp"
#include "nvsmi/quantity.hpp"
#include "nvsmi/timestamp.hpp"
#include "nvsmi/xml_reader.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>

namespace test_bad_input {

using namespace nvsmi;
using test::quote;
using test::Run;

namespace {

std::string fixture(const std::string &name) { return quote(test::fixture_path(name)); }

// Writes `content` to a fresh file and runs `snapshot --fixture` on it.
Run snapshot_of(const std::string &content, const std::string &arguments = "") {
  std::string path = test::temporary_folder() + "/input";
  test::write_file(path, content);
  return test::run_agent("snapshot --fixture " + quote(path) + " " + arguments);
}

void check_refused(const Run &run, const std::string &message) {
  INFO("stderr: " << run.err);
  CHECK(run.exit_code == 6);
  CHECK(run.out.empty());
  CHECK_THAT(run.err, Catch::StartsWith("nvsmi-agent: ") && Catch::Contains(message));
  CHECK(std::count(run.err.begin(), run.err.end(), '\n') == 1);
}

// A document with one GPU around `body`.
std::string one_gpu(const std::string &body) {
  return "<?xml version=\"1.0\" ?>\n<nvidia_smi_log>\n<gpu id=\"00000000:3B:00.0\">\n" + body +
         "\n</gpu>\n</nvidia_smi_log>\n";
}

const std::string small_csv_header =
    "index, name, temperature.gpu, memory.total [MiB], memory.used [MiB]";

} // namespace

TEST_CASE("bad input: truncated XML") {
  std::string whole = test::read_file(test::fixture_path("xml/h100-8gpu-v12.xml"));
  // Cut anywhere: inside a tag, inside a value, between GPUs, before the root closes.
  for (std::size_t length : {std::size_t{1}, std::size_t{100}, whole.size() / 3, whole.size() / 2,
                             whole.size() - 20, whole.size() - 2}) {
    INFO("first " << length << " bytes");
    CHECK_THROWS_WITH(read_xml(whole.substr(0, length)), Catch::Contains("not well-formed XML"));
  }
  check_refused(test::run_agent("snapshot --fixture " + fixture("broken/truncated.xml")),
                "not well-formed XML");
}

TEST_CASE("bad input: binary") {
  check_refused(test::run_agent("snapshot --fixture " + fixture("broken/garbage.bin")),
                "garbage.bin");
  // Starting with '<' it goes to the XML reader, and NUL bytes do not end the input early.
  const char bytes[] = "<nvidia_smi_log>\0\xff\xfe<gpu>\x01</gpu></nvidia_smi_log>";
  std::string binary(bytes, sizeof bytes - 1);
  CHECK_THROWS_AS(read_xml(binary), ParseError);
  check_refused(snapshot_of(binary), "not well-formed XML");
}

TEST_CASE("bad input: 100 MB of output") {
  std::string path = test::temporary_folder() + "/huge.xml";
  test::write_file(path, "<");
  std::filesystem::resize_file(path, 100'000'000); // "<" and then NUL bytes, sparse on disk
  check_refused(test::run_agent("snapshot --fixture " + quote(path)), "larger than 67108864 bytes");
  // The same through a pipe, where the size is not known in advance.
  check_refused(test::run_shell("head -c 100000000 /dev/zero | " + quote(AGENT_BIN) +
                                " snapshot --fixture -"),
                "standard input is larger than 67108864 bytes");
}

TEST_CASE("bad input: deeply nested XML") {
  const int depth = 200000;
  std::string open, close;
  for (int i = 0; i < depth; ++i) {
    open += "<a>";
    close += "</a>";
  }
  // Around the GPUs: ignored as any unknown element, with no recursion to run out of stack.
  Snapshot s = read_xml("<nvidia_smi_log>" + open + close +
                        "<gpu><temperature><gpu_temp>40 C</gpu_temp></temperature></gpu>"
                        "</nvidia_smi_log>");
  REQUIRE(s.gpus.size() == 1);
  CHECK(s.gpus[0].temperature_c == 40);
  // Inside a reading: an element that holds elements instead of text is an unknown reading.
  CHECK_FALSE(
      read_xml(one_gpu("<fan_speed>" + open + close + "</fan_speed>")).gpus[0].fan_speed_percent);
  // Never closed: not well-formed.
  CHECK_THROWS_WITH(read_xml("<nvidia_smi_log>" + open), Catch::Contains("not well-formed"));
  Run run = snapshot_of("<nvidia_smi_log>" + open + close + "</nvidia_smi_log>");
  CHECK(run.exit_code == 0);
  CHECK(run.out == "{\"temp\":[],\"usage\":[],\"usedPercent\":[]}\n");
}

TEST_CASE("bad input: a DOCTYPE with entities") {
  // A billion laughs: nine levels of ten references each. Nothing is expanded.
  std::string doctype = "<?xml version=\"1.0\"?>\n<!DOCTYPE nvidia_smi_log [\n"
                        "<!ENTITY lol0 \"lol\">\n";
  for (int level = 1; level <= 9; ++level) {
    doctype += "<!ENTITY lol" + std::to_string(level) + " \"";
    for (int i = 0; i < 10; ++i)
      doctype += "&lol" + std::to_string(level - 1) + ";";
    doctype += "\">\n";
  }
  // And an external entity that would read a local file.
  doctype += "<!ENTITY secret SYSTEM \"file:///etc/passwd\">\n]>\n";
  std::string document = doctype + "<nvidia_smi_log><gpu><product_name>&lol9;</product_name>"
                                   "<uuid>&secret;</uuid></gpu></nvidia_smi_log>";
  Snapshot s = read_xml(document);
  REQUIRE(s.gpus.size() == 1);
  CHECK(s.gpus[0].name == std::string("&lol9;"));
  CHECK(s.gpus[0].uuid == std::string("&secret;"));

  Run run = snapshot_of(document, "--format json");
  CHECK(run.exit_code == 0);
  CHECK_THAT(run.out, Catch::Contains("\"name\":\"&lol9;\"") && !Catch::Contains("root:"));
  CHECK(run.out.size() < 2000);
  // An entity where a number belongs is no number.
  check_refused(snapshot_of(doctype + "<nvidia_smi_log><gpu><temperature><gpu_temp>&lol9;"
                                      "</gpu_temp></temperature></gpu></nvidia_smi_log>"),
                "nvidia_smi_log/gpu[0]/temperature/gpu_temp: missing unit");
}

TEST_CASE("bad input: an enormous number") {
  CHECK_THROWS_WITH(read_xml(one_gpu("<fb_memory_usage><total>99999999999999999999999 MiB</total>"
                                     "</fb_memory_usage>")),
                    Catch::Contains("fb_memory_usage/total: number out of range"));
  // Finite as a double, but past any reading: refused, never printed rounded or cut short.
  std::string digits(300, '9');
  CHECK_THROWS_WITH(read_xml(one_gpu("<power_readings><power_draw>" + digits +
                                     ".5 W</power_draw>"
                                     "</power_readings>")),
                    Catch::Contains("power_readings/power_draw: number out of range"));
  CHECK_THROWS_WITH(parse_real("1e300 W", Unit::watt, UnitPolicy::required, "power.draw"),
                    Catch::Contains("out of range"));
  CHECK(parse_real("9007199254740991 W", Unit::watt, UnitPolicy::required, "p") ==
        9007199254740991.0);
  // The largest whole number is kept exactly.
  CHECK(read_xml(one_gpu("<fb_memory_usage><total>9223372036854775807 MiB</total>"
                         "</fb_memory_usage>"))
            .gpus[0]
            .memory_total_mib == INT64_MAX);
  check_refused(snapshot_of(small_csv_header + "\n0, GPU, 40, 81559, 1" + digits + "\n"),
                "row 1 memory.used: number out of range");
}

TEST_CASE("bad input: a negative temperature") {
  Snapshot s = read_xml(one_gpu("<temperature><gpu_temp>-5 C</gpu_temp></temperature>"
                                "<fb_memory_usage><total>100 MiB</total><used>1 MiB</used>"
                                "</fb_memory_usage>"));
  CHECK(s.gpus[0].temperature_c == -5);
  CHECK_THAT(format_legacy(s), Catch::Contains(R"({"data":["-5","-5C"],"name":0})"));
  // Any other reading below zero is refused.
  CHECK_THROWS_WITH(read_xml(one_gpu("<fb_memory_usage><used>-1 MiB</used></fb_memory_usage>")),
                    Catch::Contains("fb_memory_usage/used: negative value"));
  check_refused(snapshot_of(small_csv_header + "\n0, GPU, 40, 81559, -1\n"),
                "row 1 memory.used: negative value");
}

TEST_CASE("bad input: a unit we do not know") {
  check_refused(test::run_agent("snapshot --fixture " + fixture("broken/bad-unit.xml")),
                "nvidia_smi_log/gpu[0]/fb_memory_usage/total: expected unit \"MiB\", got \"KiB\"");
  check_refused(test::run_agent("snapshot --fixture " + fixture("broken/bad-unit.csv")),
                "memory.total");
  check_refused(snapshot_of("index, memory.used [KiB]\n0, 1\n"),
                "memory.used: header unit [KiB], expected [MiB]");
  CHECK_THROWS_WITH(read_xml(one_gpu("<temperature><gpu_temp>40 F</gpu_temp></temperature>")),
                    Catch::Contains("expected unit \"C\", got \"F\""));
}

TEST_CASE("bad input: mismatched CSV columns") {
  check_refused(test::run_agent("snapshot --fixture " + fixture("broken/ragged.csv")),
                "has 14 values, but there are 22 columns");
  check_refused(snapshot_of(small_csv_header + "\n0, GPU, 40, 81559, 1, 7\n"),
                "row 1 has 6 values, but there are 5 columns");
  check_refused(snapshot_of(small_csv_header + "\n0, GPU, 40, 81559, 1\n1, GPU, 40\n"),
                "row 2 has 3 values");
}

TEST_CASE("bad input: CRLF line ends") {
  Snapshot xml = test::xml_fixture("xml/rtx4080-windows-v13.xml");
  Snapshot csv = read_csv(test::read_file(test::fixture_path("csv/rtx4080-windows-crlf.csv")));
  REQUIRE(xml.gpus.size() == 1);
  REQUIRE(csv.gpus.size() == 1);
  // No "\r" left on any text, and the readings agree.
  for (const Snapshot *s : {&xml, &csv}) {
    const Gpu &gpu = s->gpus[0];
    CHECK(gpu.name == std::string("NVIDIA GeForce RTX 4080 SUPER"));
    REQUIRE(gpu.pstate);
    CHECK(gpu.pstate->find('\r') == std::string::npos);
    CHECK(gpu.memory_total_mib == xml.gpus[0].memory_total_mib);
    CHECK(gpu.temperature_c == xml.gpus[0].temperature_c);
  }
  Run run =
      test::run_agent("snapshot --format csv --fixture " + fixture("csv/rtx4080-windows-crlf.csv"));
  CHECK(run.exit_code == 0);
  CHECK(run.out.find('\r') == std::string::npos);
}

TEST_CASE("bad input: a header-only CSV") {
  CHECK_THROWS_WITH(read_csv(small_csv_header + "\r\n"), Catch::Contains("header but no rows"));
  check_refused(snapshot_of(small_csv_header + "\n"), "CSV has a header but no rows");
}

TEST_CASE("bad input: a GPU with no readings") {
  Snapshot s = read_xml("<nvidia_smi_log><gpu/><gpu></gpu></nvidia_smi_log>");
  REQUIRE(s.gpus.size() == 2);
  const Gpu &gpu = s.gpus[1];
  CHECK(gpu.index == 1);
  CHECK_FALSE(gpu.uuid);
  CHECK_FALSE(gpu.name);
  CHECK_FALSE(gpu.temperature_c);
  CHECK_FALSE(gpu.memory_total_mib);
  CHECK_FALSE(gpu.power_draw_w);
  CHECK_FALSE(gpu.processes); // not reported is unknown, not "none"
  CHECK_FALSE(gpu.mig_devices);
  CHECK(format_legacy(s) ==
        R"({"temp":[{"data":["N/A","N/A"],"name":0},{"data":["N/A","N/A"],"name":1}],)"
        R"("usage":[{"data":["N/A","N/A"],"name":0},{"data":["N/A","N/A"],"name":1}],)"
        R"("usedPercent":[{"data":["N/A","N/A"],"name":0},{"data":["N/A","N/A"],"name":1}]})");
  nlohmann::json json = nlohmann::json::parse(format_json(s));
  CHECK(json["gpus"][1]["temperature_c"].is_null());
  CHECK(json["gpus"][1]["memory_used_percent"].is_null());

  Run run =
      test::run_agent("snapshot --format csv --fixture " + fixture("csv/rtx4090-all-unknown.csv"));
  CHECK(run.exit_code == 0);
  CHECK_THAT(run.out, Catch::EndsWith(",NVIDIA GeForce RTX 4090,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,\n"));
}

TEST_CASE("bad input: invalid UTF-8 in a name") {
  Snapshot s = read_xml(one_gpu("<product_name>GPU \xff\xfe</product_name>"));
  std::string json = format_json(s);
  CHECK(nlohmann::json::accept(json));
  CHECK_THAT(json, Catch::Contains("GPU \xEF\xBF\xBD\xEF\xBF\xBD")); // U+FFFD twice
}

TEST_CASE("bad input: an empty or whitespace-only output") {
  check_refused(test::run_agent("snapshot --fixture " + fixture("broken/empty.xml")),
                "empty output");
  check_refused(snapshot_of(" \r\n\t\n"), "empty output");
}

// docs/BAD-INPUT.md, "Numbers".

TEST_CASE("bad input: a GPU index out of range") {
  // Cast to int, 2147483648 became -2147483648 and 4294967296 became 0: another GPU's index.
  for (std::string index : {"2147483648", "4294967296", "9223372036854775807"}) {
    INFO(index);
    CHECK_THROWS_WITH(read_csv(small_csv_header + "\n" + index + ", GPU, 40, 81559, 1\n"),
                      Catch::Contains("row 1 index: number out of range in \"" + index + "\""));
  }
  CHECK(read_csv(small_csv_header + "\n2147483647, GPU, 40, 81559, 1\n").gpus[0].index ==
        2147483647);
  check_refused(
      snapshot_of(small_csv_header + "\n0, GPU, 40, 81559, 1\n4294967296, GPU, 41, 81559, 1\n"),
      "row 2 index: number out of range in \"4294967296\"");
}

TEST_CASE("bad input: negative zero") {
  std::optional<double> zero = parse_real("-0 W", Unit::watt, UnitPolicy::required, "power.draw");
  REQUIRE(zero);
  CHECK(*zero == 0);
  CHECK_FALSE(std::signbit(*zero));
  std::optional<double> bare = parse_real("-0.00", Unit::watt, UnitPolicy::optional, "power.draw");
  REQUIRE(bare);
  CHECK_FALSE(std::signbit(*bare));
  // The JSON writer writes a zero without its sign whatever gave it one.
  Snapshot signed_zero;
  signed_zero.gpus.emplace_back();
  signed_zero.gpus[0].power_draw_w = -0.0;
  CHECK_THAT(format_json(signed_zero), Catch::Contains(R"("power_draw_w":0.0,)"));

  std::string xml = one_gpu("<power_readings><power_draw>-0 W</power_draw>"
                            "<power_limit>-0.0 W</power_limit></power_readings>");
  Run json = snapshot_of(xml, "--format json");
  CHECK(json.exit_code == 0);
  CHECK_THAT(json.out, Catch::Contains(R"("power_draw_w":0.0,"power_limit_w":0.0,)"));
  Run csv = snapshot_of("index, power.draw [W]\n0, -0\n", "--format csv");
  CHECK(csv.exit_code == 0);
  CHECK_THAT(csv.out, Catch::EndsWith(",0.00,,,,,,,,,,,,,,,,,,,,,\n"));
  for (const Run *run : {&json, &csv})
    CHECK_THAT(run->out, !Catch::Contains("-0"));
}

TEST_CASE("bad input: a decimal from 2^53 up") {
  // Below 2^53 a double holds every whole number; from there on, 9007199254740993 would read as
  // 9007199254740992 and be printed so.
  CHECK(parse_real("9007199254740991 W", Unit::watt, UnitPolicy::required, "p") ==
        9007199254740991.0);
  for (std::string text : {"9007199254740992 W", "9007199254740993 W", "9007199254740991.9 W",
                           "-9007199254740993 W"}) {
    INFO(text);
    CHECK_THROWS_WITH(parse_real(text, Unit::watt, UnitPolicy::required, "power.draw"),
                      Catch::Contains("power.draw: number out of range in \"" + text + "\""));
  }
  check_refused(snapshot_of(one_gpu("<power_readings><power_draw>9007199254740993 W</power_draw>"
                                    "</power_readings>")),
                "nvidia_smi_log/gpu[0]/power_readings/power_draw: number out of range in "
                "\"9007199254740993 W\"");
  check_refused(snapshot_of("index, power.draw [W]\n0, 9007199254740993\n"),
                "row 1 power.draw: number out of range in \"9007199254740993\"");
}

TEST_CASE("bad input: a character reference to no character") {
  // pugixml turns each of these into a NUL byte, where the name would have ended.
  for (std::string reference :
       {"&#0;", "&#x0;", "&#0000;", "&#x00;", "&#4294967296;", "&#x100000000;", "&#1114112;"}) {
    INFO(reference);
    std::string document = one_gpu("<product_name>GPU" + reference + "X</product_name>");
    CHECK_THROWS_WITH(read_xml(document),
                      Catch::StartsWith("not well-formed XML: character reference \"" + reference +
                                        "\" at byte ") &&
                          Catch::EndsWith(" is not an XML character"));
  }
  // In an attribute, or inside an element the reader does not read, alike.
  CHECK_THROWS_AS(read_xml("<nvidia_smi_log><gpu id=\"00&#0;:3B\"/></nvidia_smi_log>"), ParseError);
  CHECK_THROWS_AS(read_xml(one_gpu("<ecc_errors>&#x0;</ecc_errors>")), ParseError);
  // Any other reference is a character as before, and what pugixml does not decode stays text.
  Snapshot s = read_xml(one_gpu("<product_name>A&#66;&#x43;&#1;&#X0;&#0 &#;</product_name>"));
  CHECK(s.gpus[0].name == std::string("ABC\x01&#X0;&#0 &#;"));
  check_refused(snapshot_of(one_gpu("<product_name>GPU&#0;X</product_name>"), "--format json"),
                "not well-formed XML: character reference \"&#0;\" at byte ");
}

TEST_CASE("bad input: GPU indexes that wrap in a report") {
  // Without uuid or bus id a report tells GPUs apart by index: wrapped, 4294967296 was GPU 0
  // and its rows were mixed into GPU 0's.
  std::string path = test::temporary_folder() + "/gpu-log.csv";
  test::write_file(path, "timestamp, index, utilization.gpu [%]\n"
                         "2024/03/14 10:00:00.000, 0, 10\n"
                         "2024/03/14 10:00:00.000, 4294967296, 90\n"
                         "2024/03/14 10:00:01.000, 0, 10\n"
                         "2024/03/14 10:00:01.000, 2147483648, 90\n");
  ReportOptions options;
  options.files = {path};
  Report report = make_report(options);
  REQUIRE(report.gpus.size() == 1);
  CHECK(report.gpus[0].index == 0);
  CHECK(report.rows_used == 2);
  CHECK(report.bad.counts[BadRows::unparsable] == 2);
  CHECK(report.bad.counts[BadRows::out_of_order] == 0);
  REQUIRE(report.bad.examples.size() == 2);
  CHECK_THAT(report.bad.examples[0],
             Catch::EndsWith("gpu-log.csv:3: row 3 index: number out of range in \"4294967296\""));

  Run run = test::run_agent("report --format json " + quote(path));
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  nlohmann::json json = nlohmann::json::parse(run.out);
  CHECK(json["gpus"].size() == 1);
  CHECK(json["gpus"][0]["index"] == 0);
  CHECK(json["rows"]["bad"]["unparsable"] == 2);
}

TEST_CASE("fuzz regressions: each input the fuzzers found") {
  // fixtures/fuzz/quantity/csv-timestamp-negative-millisecond: "2024/03/12 14:03:27.-2"
  CHECK_FALSE(parse_csv_timestamp("2024/03/12 14:03:27.-2"));
  CHECK_FALSE(parse_iso8601_timestamp("2024-03-12T14:03:27.-12"));
  CHECK_FALSE(parse_xml_timestamp("Fri Aug  -4 11:44:30 2023"));
  // A short fraction is a fraction of a second: ".5" is 500 ms, as ".500".
  REQUIRE(parse_csv_timestamp("2024/03/12 14:03:27.5"));
  CHECK(parse_csv_timestamp("2024/03/12 14:03:27.5")->millisecond == 500);

  // fixtures/fuzz/kernel_log/kmsg-facility-past-int: a record whose prefix, 48888888888888, gave
  // a facility cut to an int (what XidLog compares with 0, the kernel's).
  auto record = parse_kmsg_record(
      test::read_file(test::fixture_path("fuzz/kernel_log/kmsg-facility-past-int")));
  REQUIRE(record);
  CHECK(record->facility == 48888888888888u >> 3);
  CHECK(record->level == 0);

  // Every saved input goes through its reader again: a ParseError or a printable snapshot. An
  // XML one also read in place, as the stream reads it: the same snapshot, or refused alike.
  for (const char *kind : {"xml", "csv"}) {
    std::string folder = test::fixture_path(std::string("fuzz/") + kind);
    if (!std::filesystem::is_directory(folder))
      continue;
    for (const auto &entry : std::filesystem::directory_iterator(folder)) {
      INFO(entry.path());
      std::string bytes = test::read_file(entry.path());
      bool xml = kind == std::string("xml");
      std::optional<std::string> json;
      try {
        Snapshot s = xml ? read_xml(bytes) : read_csv(bytes);
        json = format_json(s);
        CHECK(nlohmann::json::accept(*json));
        CHECK(nlohmann::json::accept(format_legacy(s)));
        CHECK_NOTHROW(format_csv(s));
      } catch (const ParseError &) {
      }
      if (xml) {
        std::string buffer = bytes;
        try {
          std::string in_place = format_json(read_xml_in_place(buffer.data(), buffer.size()));
          REQUIRE(json);
          CHECK(*json == in_place);
        } catch (const ParseError &) {
          CHECK_FALSE(json);
        }
      }
    }
  }
}

} // namespace test_bad_input
