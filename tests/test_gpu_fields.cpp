// The field table (nvsmi/gpu_fields.hpp) against every reader and output that walks it: each
// field, given a value of its own, comes out of JSON, the CSV log, /metrics, serve's history and
// the JSON log's reader, so that a field added to the table alone shows everywhere.
#include "formats/formats.hpp"
#include "formats/prometheus_metrics.hpp"
#include "nvsmi/csv_reader.hpp"
#include "nvsmi/gpu_fields.hpp"
#include "nvsmi/gpu_state.hpp"
#include "nvsmi/xml_reader.hpp"
#include "report/report_json_log.hpp"
#include "serve/compact_snapshot.hpp"
#include "snapshot_builders.hpp"
#include "support.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <set>
#include <sstream>
#include <type_traits>

namespace test_gpu_fields {

using namespace nvsmi;

namespace {

// Sets `field` of `gpu` to a value made from `seed` (not for a derived field).
void set_field(const GpuField &field, Gpu &gpu, std::int64_t seed) {
  if (field.kind == FieldKind::integer)
    field.integer_in(gpu) = seed;
  else if (field.kind == FieldKind::real)
    field.real_in(gpu) = static_cast<double>(seed) + 0.5;
  else
    field.text_in(gpu) = "Words " + std::to_string(seed);
}

// A one-GPU snapshot whose table fields each hold a value of their own (from `seed`).
Snapshot with_every_field(std::int64_t seed) {
  Snapshot snapshot;
  snapshot.gpus.emplace_back();
  Gpu &gpu = snapshot.gpus.back();
  gpu.uuid = "GPU-fields";
  std::int64_t value = seed;
  for (const GpuField &field : gpu_fields())
    if (field.part != FieldPart::derived)
      set_field(field, gpu, value++);
  return snapshot;
}

std::string shown(const GpuField &field, const Gpu &gpu) {
  std::string text = "unknown";
  field.with_reading(gpu, [&](const auto &value) {
    if constexpr (std::is_same_v<std::decay_t<decltype(value)>, Text>) {
      if (value)
        text = *value;
    } else if (value) {
      std::ostringstream number;
      number << *value;
      text = number.str();
    }
  });
  return text;
}

// The object of the GPU's JSON that holds `field` (its JsonPlace).
nlohmann::json &json_object(nlohmann::json &gpu, const GpuField &field) {
  switch (field.json_place) {
  case JsonPlace::gpu:
    return gpu;
  case JsonPlace::gpu_clocks:
    return gpu["clocks_mhz"];
  case JsonPlace::health:
    return gpu["health"];
  case JsonPlace::health_pcie:
    break;
  }
  return gpu["health"]["pcie"];
}

// The sample of `field`'s family in /metrics, or "" where there is none.
std::string metric_sample(const std::string &metrics, const GpuField &field) {
  std::string start = "\n" + std::string(field.prometheus_name) + "{";
  for (std::size_t at = metrics.find(start); at != std::string::npos;
       at = metrics.find(start, at + 1)) {
    std::string sample = metrics.substr(at + 1, metrics.find('\n', at + 1) - at - 1);
    if (*field.prometheus_label == '\0' ||
        sample.find(std::string(field.prometheus_label) + "=\"" + field.prometheus_label_value +
                    "\"") != std::string::npos)
      return sample;
  }
  return "";
}

} // namespace

TEST_CASE("every field of the table goes through JSON and comes back from the JSON log") {
  Snapshot snapshot = with_every_field(41);
  std::string line = format_json(snapshot);
  auto gpu = nlohmann::json::parse(line)["gpus"][0];
  Snapshot read = read_json_log_line(line);
  for (const GpuField &field : gpu_fields()) {
    INFO(field.json_key);
    nlohmann::json &object = json_object(gpu, field);
    REQUIRE(object.contains(std::string(field.json_key)));
    CHECK_FALSE(object[std::string(field.json_key)].is_null());
    CHECK(shown(field, read.gpus.at(0)) == shown(field, snapshot.gpus[0]));
  }
}

TEST_CASE("a field of the table that is not known is null in JSON and unknown read back") {
  Snapshot snapshot = with_every_field(41);
  snapshot.gpus[0] = Gpu{};
  snapshot.gpus[0].uuid = "GPU-fields";
  std::string line = format_json(snapshot);
  auto gpu = nlohmann::json::parse(line)["gpus"][0];
  Snapshot read = read_json_log_line(line);
  for (const GpuField &field : gpu_fields()) {
    INFO(field.json_key);
    nlohmann::json &object = json_object(gpu, field);
    REQUIRE(object.contains(std::string(field.json_key)));
    CHECK(object[std::string(field.json_key)].is_null());
    CHECK(shown(field, read.gpus.at(0)) == "unknown");
  }
}

TEST_CASE("MIG instances go through JSON and come back from the JSON log, their states with them "
          "(/fleet and report read the agent's JSON)") {
  Snapshot snapshot = test::xml_fixture("xml/a100-mig-v12.xml");
  (*snapshot.gpus[0].mig_devices)[0].uuid = "MIG-00000000-0000-0000-0000-0000000000b0";
  (*snapshot.gpus[0].mig_devices)[0].profile = "3g.40gb";
  std::string line = format_json(snapshot);
  Snapshot read = read_json_log_line(line);
  REQUIRE(read.gpus.at(0).mig_devices);
  REQUIRE(read.gpus[0].mig_devices->size() == 2);
  const MigDevice &first = read.gpus[0].mig_devices->front();
  CHECK(first.uuid == Text("MIG-00000000-0000-0000-0000-0000000000b0"));
  CHECK(first.profile == Text("3g.40gb"));
  CHECK(first.gpu_instance_id == Reading(1));
  CHECK(first.memory_total_mib == Reading(40192));
  CHECK(read.gpus[0].mig_devices->back().uuid == Text());
  CHECK(fleet_summary_text(fleet_summary(read)) ==
        "1 GPU, 2 MIG instances: 1 free \u00b7 1 in use");
  auto json = nlohmann::json::parse(line);
  json["gpus"][0]["mig_devices"][0]["gpu_instance_id"] = "1";
  CHECK_THROWS_WITH(read_json_log_line(json.dump()),
                    "gpus[0].mig_devices[0].gpu_instance_id: expected a whole number or null");
  json["gpus"][0]["mig_devices"] = "all";
  CHECK_THROWS_WITH(read_json_log_line(json.dump()),
                    "gpus[0].mig_devices: expected a list or null");
}

TEST_CASE("the JSON log's reader refuses a field of the table of the wrong type") {
  Snapshot snapshot = with_every_field(41);
  for (const GpuField &field : gpu_fields()) {
    if (field.part == FieldPart::derived)
      continue; // written, never read back
    INFO(field.json_key);
    auto json = nlohmann::json::parse(format_json(snapshot));
    json_object(json["gpus"][0], field)[std::string(field.json_key)] =
        field.kind == FieldKind::text ? nlohmann::json(12) : nlohmann::json("12");
    CHECK_THROWS_AS(read_json_log_line(json.dump()), ParseError);
  }
}

TEST_CASE("every logged field of the table has its CSV log column, read back by the CSV reader") {
  Snapshot snapshot = with_every_field(41);
  snapshot.timestamp = Timestamp{2026, 11, 26, 3, 0, 0, std::nullopt, 0};
  std::string log = format_csv(snapshot, true);
  CsvRow row = read_csv_row(log.substr(log.find('\n') + 1),
                            CsvLayout::from_header(log.substr(0, log.find('\n'))), 0);
  REQUIRE_FALSE(csv_logged_fields().empty());
  for (const GpuField *field : csv_logged_fields()) {
    INFO(field->csv_name);
    CHECK(csv_header().find("," + std::string(field->csv_name)) != std::string::npos);
    CHECK(shown(*field, row.gpu) == shown(*field, snapshot.gpus[0]));
  }
}

TEST_CASE("a CSV log with fewer of the table's columns is an earlier agent's") {
  std::vector<std::string> earlier = earlier_csv_headers();
  // The oldest (ending at power.draw), then one with the host's first two columns and each count
  // of columns from the host's on, all included; then one with all the host's columns and each
  // count from all_host_log_columns_since on, below all.
  REQUIRE(earlier.size() == 1 + csv_logged_fields().size() -
                                static_cast<std::size_t>(csv_log_host_after) + 1 +
                                csv_logged_fields().size() - all_host_log_columns_since);
  for (const std::string &header : earlier)
    CHECK(header != csv_header());
}

TEST_CASE("every field of the table with a Prometheus name has its family, scaled") {
  Snapshot snapshot = with_every_field(41);
  std::string metrics = format_snapshot_metrics(snapshot);
  for (const GpuField &field : gpu_fields()) {
    if (*field.prometheus_name == '\0')
      continue;
    INFO(field.prometheus_name);
    std::string name(field.prometheus_name);
    CHECK(metrics.find("# TYPE " + name + " " + field.prometheus_type + "\n") != std::string::npos);
    std::string sample = metric_sample(metrics, field);
    REQUIRE_FALSE(sample.empty());
    double value = std::stod(sample.substr(sample.rfind(' ') + 1));
    std::optional<double> expected =
        field.prometheus_derived ? field.prometheus_derived(snapshot.gpus[0])
                                 : prometheus_value(field.unit, *field.number_in(snapshot.gpus[0]));
    REQUIRE(expected);
    CHECK(value == Approx(*expected));
  }
}

TEST_CASE("serve's history keeps a change of any one field of the table") {
  Snapshot first = with_every_field(41);
  std::size_t bytes = 0;
  CompactSnapshot packed = compact(first, nullptr, bytes);
  std::size_t position = 0;
  for (const GpuField &field : gpu_fields()) {
    if (field.part == FieldPart::derived)
      continue;
    INFO(field.json_key);
    Snapshot changed = first;
    set_field(field, changed.gpus[0], 1000 + static_cast<std::int64_t>(position));
    CompactSnapshot next = compact(changed, &packed, bytes);
    Snapshot back = expand(next);
    CHECK(shown(field, back.gpus.at(0)) == shown(field, changed.gpus[0]));
    CHECK(shown(field, expand(packed).gpus.at(0)) == shown(field, first.gpus[0]));
    ++position;
  }
}

TEST_CASE("a field that moves every sample keeps a slot of its own while the health block is "
          "shared") {
  REQUIRE(own_slot_field_count(FieldKind::integer) > 0); // temperature, PCIe throughput ...
  REQUIRE(own_slot_field_count(FieldKind::integer) <= own_slot_integers);
  REQUIRE(own_slot_field_count(FieldKind::real) <= own_slot_reals);
  REQUIRE(own_slot_field_count(FieldKind::text) <= own_slot_texts);
  Snapshot first = with_every_field(41);
  std::size_t bytes = 0;
  CompactSnapshot packed = compact(first, nullptr, bytes);
  Snapshot changed = first;
  std::int64_t value = 5000;
  // Numbers only: a changed text costs its own bytes, counted apart from the block.
  for (const GpuField &field : gpu_fields())
    if (field.history == History::own_slot && field.part != FieldPart::derived &&
        field.kind != FieldKind::text)
      set_field(field, changed.gpus[0], value++);
  std::size_t text_bytes = 0;
  CompactSnapshot next = compact(changed, &packed, text_bytes);
  // One block for both samples: a per-sample reading must not cost a health block per sample.
  CHECK(next.gpus.at(0).health == packed.gpus.at(0).health);
  CHECK(text_bytes == 0);
  Snapshot back = expand(next), earlier = expand(packed);
  for (const GpuField &field : gpu_fields()) {
    INFO(field.json_key);
    CHECK(shown(field, back.gpus.at(0)) == shown(field, changed.gpus[0]));
    CHECK(shown(field, earlier.gpus.at(0)) == shown(field, first.gpus[0]));
  }
}

TEST_CASE("a field that moves every sample and is unknown stays unknown in serve's history") {
  Snapshot snapshot = with_every_field(41);
  for (const GpuField &field : gpu_fields()) {
    if (field.history != History::own_slot || field.part == FieldPart::derived)
      continue;
    if (field.kind == FieldKind::integer)
      field.integer_in(snapshot.gpus[0]).reset();
    else if (field.kind == FieldKind::real)
      field.real_in(snapshot.gpus[0]).reset();
    else
      field.text_in(snapshot.gpus[0]).reset();
  }
  std::size_t bytes = 0;
  Snapshot back = expand(compact(snapshot, nullptr, bytes));
  for (const GpuField &field : gpu_fields()) {
    INFO(field.json_key);
    CHECK(shown(field, back.gpus.at(0)) == shown(field, snapshot.gpus[0]));
  }
}

TEST_CASE("every field of the table with an XML leaf is read from nvidia-smi's XML") {
  for (const GpuField &field : gpu_fields()) {
    if (*field.xml_leaf == '\0')
      continue;
    INFO(field.json_key);
    std::string unit(unit_symbol(field.unit));
    std::string value = field.kind == FieldKind::text ? "P7" : "77";
    std::string leaf = std::string("<") + field.xml_leaf + ">" + value + (unit.empty() ? "" : " ") +
                       unit + "</" + field.xml_leaf + ">";
    if (*field.xml_parent != '\0')
      leaf = std::string("<") + field.xml_parent + ">" + leaf + "</" + field.xml_parent + ">";
    Snapshot read = read_xml("<nvidia_smi_log><gpu>" + leaf + "</gpu></nvidia_smi_log>");
    CHECK(shown(field, read.gpus.at(0)) == value);
  }
}

TEST_CASE("the JSON log's reader refuses a health pcie object that is not one") {
  auto json = nlohmann::json::parse(format_json(with_every_field(41)));
  json["gpus"][0]["health"]["pcie"] = "fast";
  CHECK_THROWS_WITH(read_json_log_line(json.dump()),
                    Catch::Contains("gpus[0].health.pcie: expected an object"));
  json["gpus"][0]["health"]["pcie"] = nullptr; // unknown, as a missing one: its fields unknown
  Snapshot read = read_json_log_line(json.dump());
  for (const GpuField &field : gpu_fields())
    if (field.json_place == JsonPlace::health_pcie) {
      INFO(field.json_key);
      CHECK(shown(field, read.gpus.at(0)) == "unknown");
    }
}

TEST_CASE("the JSON log's reader holds a line to its limits, and reads one at them whole") {
  // What `fleet` holds another host's answer to (fleet_answer_limits), here made small.
  const SnapshotLimits limits{2, 3, 4096, 1000};
  const auto one = nlohmann::json::parse(format_json(with_every_field(41)));
  const nlohmann::json process = {
      {"pid", 1}, {"type", "C"}, {"name", "p"}, {"used_memory_mib", 1}, {"user", "a"}};
  auto at = one;
  at["gpus"][0]["processes"] = nlohmann::json::array({process, process, process});
  at["gpus"].push_back(at["gpus"][0]);
  // A list of objects beside `gpus` is no GPUs.
  at["other"] = nlohmann::json::array({process, process, process, process});
  Snapshot read = read_json_log_line(at.dump(), limits);
  CHECK(read.gpus.size() == 2);
  CHECK(read.gpus[1].processes.value().size() == 3);

  auto over = [&](nlohmann::json line, const std::string &said) {
    INFO(said);
    CHECK_THROWS_AS(read_json_log_line(line.dump(), limits), SnapshotLimitError);
    CHECK_THROWS_WITH(read_json_log_line(line.dump(), limits), said);
  };
  auto gpus = at;
  gpus["gpus"].push_back(one["gpus"][0]);
  over(gpus, "more than 2 GPUs");
  auto processes = at;
  processes["gpus"][1]["processes"].push_back(process);
  over(processes, "more than 3 processes on one GPU");
  auto name = at;
  name["gpus"][0]["name"] = std::string(4097, 'x');
  over(name, "a text of more than 4096 bytes");
  auto key = at;
  key[std::string(4097, 'k')] = 1;
  over(key, "a text of more than 4096 bytes");
  auto values = at;
  values["other"] = std::vector<int>(1000, 0);
  over(values, "more than 1000 JSON values");
}

TEST_CASE("the query asks for each name once, and the reader reads every one") {
  const std::vector<std::string> &asked = query_fields();
  std::set<std::string> unique(asked.begin(), asked.end());
  CHECK(unique.size() == asked.size());
  // A header of every asked name: none of them is an unknown column, which the reader would let
  // go (it throws for a known one whose cell does not parse).
  CsvLayout layout = CsvLayout::from_fields(asked);
  for (const CsvLayout::Column &column : layout.columns()) {
    INFO(column.name);
    CHECK(column.field >= 0);
  }
}

} // namespace test_gpu_fields
