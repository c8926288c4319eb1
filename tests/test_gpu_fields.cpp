// The field table (nvsmi/gpu_fields.hpp) against every reader and output that walks it: each
// field, given a value of its own, comes out of JSON, the CSV log, /metrics, serve's history and
// the JSON log's reader, so that a field added to the table alone shows everywhere.
#include "formats/formats.hpp"
#include "formats/prometheus_metrics.hpp"
#include "nvsmi/csv_reader.hpp"
#include "nvsmi/gpu_fields.hpp"
#include "nvsmi/xml_reader.hpp"
#include "report/report_json_log.hpp"
#include "serve/compact_snapshot.hpp"
#include "support.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

using namespace nvsmi;

namespace {

// A one-GPU snapshot whose table fields each hold a value of their own (from `seed`).
Snapshot with_every_field(std::int64_t seed) {
  Snapshot snapshot;
  snapshot.gpus.emplace_back();
  Gpu &gpu = snapshot.gpus.back();
  gpu.uuid = "GPU-fields";
  std::int64_t value = seed;
  for (const GpuField &field : gpu_fields()) {
    if (field.kind == FieldKind::integer)
      gpu.health.*field.integer = value;
    else
      gpu.health.*field.text = "Words " + std::to_string(value);
    ++value;
  }
  return snapshot;
}

std::string shown(const GpuField &field, const GpuHealth &health) {
  if (field.kind == FieldKind::integer)
    return health.*field.integer ? std::to_string(*(health.*field.integer)) : "unknown";
  return health.*field.text ? *(health.*field.text) : "unknown";
}

// The object of the GPU's JSON that holds `field` (its JsonPlace).
nlohmann::json &json_object(nlohmann::json &gpu, const GpuField &field) {
  nlohmann::json &health = gpu["health"];
  return field.json_place == JsonPlace::health ? health : health["pcie"];
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
    CHECK(shown(field, read.gpus.at(0).health) == shown(field, snapshot.gpus[0].health));
  }
}

TEST_CASE("a field of the table that is not known is null in JSON and unknown read back") {
  Snapshot snapshot = with_every_field(41);
  snapshot.gpus[0].health = GpuHealth{};
  std::string line = format_json(snapshot);
  auto gpu = nlohmann::json::parse(line)["gpus"][0];
  Snapshot read = read_json_log_line(line);
  for (const GpuField &field : gpu_fields()) {
    INFO(field.json_key);
    nlohmann::json &object = json_object(gpu, field);
    REQUIRE(object.contains(std::string(field.json_key)));
    CHECK(object[std::string(field.json_key)].is_null());
    CHECK(shown(field, read.gpus.at(0).health) == "unknown");
  }
}

TEST_CASE("the JSON log's reader refuses a field of the table of the wrong type") {
  Snapshot snapshot = with_every_field(41);
  for (const GpuField &field : gpu_fields()) {
    INFO(field.json_key);
    auto json = nlohmann::json::parse(format_json(snapshot));
    json_object(json["gpus"][0], field)[std::string(field.json_key)] =
        field.kind == FieldKind::integer ? nlohmann::json("12") : nlohmann::json(12);
    CHECK_THROWS_AS(read_json_log_line(json.dump()), ParseError);
  }
}

TEST_CASE("every logged field of the table has its CSV log column, read back by the CSV reader") {
  Snapshot snapshot = with_every_field(41);
  snapshot.timestamp = Timestamp{2026, 11, 26, 3, 0, 0, std::nullopt, 0};
  std::string log = format_csv(snapshot, true);
  CsvRow row = read_csv_row(log.substr(log.find('\n') + 1),
                            CsvLayout::from_header(log.substr(0, log.find('\n'))), 0);
  for (const GpuField &field : gpu_fields()) {
    if (!field.csv_logged)
      continue;
    INFO(field.csv_name);
    CHECK(csv_header().find("," + std::string(field.csv_name)) != std::string::npos);
    CHECK(shown(field, row.gpu.health) == shown(field, snapshot.gpus[0].health));
  }
}

TEST_CASE("a CSV log with fewer of the table's columns is an earlier agent's") {
  std::vector<std::string> earlier = earlier_csv_headers();
  std::size_t logged = 0;
  for (const GpuField &field : gpu_fields())
    logged += field.csv_logged;
  // The oldest (ending at power.draw), then one with each count of the table's columns below all.
  REQUIRE(earlier.size() == 1 + logged);
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
    std::size_t series = metrics.find("\n" + name + "{");
    REQUIRE(series != std::string::npos);
    std::string sample = metrics.substr(series + 1, metrics.find('\n', series + 1) - series - 1);
    double value = std::stod(sample.substr(sample.rfind(' ') + 1));
    CHECK(value ==
          Approx(static_cast<double>(*(snapshot.gpus[0].health.*field.integer)) * field.scale));
  }
}

TEST_CASE("serve's history keeps a change of any one field of the table") {
  Snapshot first = with_every_field(41);
  std::size_t bytes = 0;
  CompactSnapshot packed = compact(first, nullptr, bytes);
  std::size_t position = 0;
  for (const GpuField &field : gpu_fields()) {
    INFO(field.json_key);
    Snapshot changed = first;
    GpuHealth &health = changed.gpus[0].health;
    if (field.kind == FieldKind::integer)
      health.*field.integer = 1000 + static_cast<std::int64_t>(position);
    else
      health.*field.text = "Changed";
    CompactSnapshot next = compact(changed, &packed, bytes);
    Snapshot back = expand(next);
    CHECK(shown(field, back.gpus.at(0).health) == shown(field, health));
    CHECK(shown(field, expand(packed).gpus.at(0).health) == shown(field, first.gpus[0].health));
    ++position;
  }
}

TEST_CASE("a field that moves every sample keeps a slot of its own while the health block is "
          "shared") {
  REQUIRE(own_slot_field_count() > 0); // the PCIe throughput, at least
  REQUIRE(own_slot_field_count() <= own_slot_capacity);
  Snapshot first = with_every_field(41);
  std::size_t bytes = 0;
  CompactSnapshot packed = compact(first, nullptr, bytes);
  Snapshot changed = first;
  std::int64_t value = 5000;
  for (const GpuField &field : gpu_fields())
    if (field.history == History::own_slot)
      changed.gpus[0].health.*field.integer = value++;
  std::size_t text_bytes = 0;
  CompactSnapshot next = compact(changed, &packed, text_bytes);
  // One block for both samples: a per-sample reading must not cost a health block per sample.
  CHECK(next.gpus.at(0).health == packed.gpus.at(0).health);
  CHECK(text_bytes == 0);
  Snapshot back = expand(next), earlier = expand(packed);
  for (const GpuField &field : gpu_fields()) {
    INFO(field.json_key);
    CHECK(shown(field, back.gpus.at(0).health) == shown(field, changed.gpus[0].health));
    CHECK(shown(field, earlier.gpus.at(0).health) == shown(field, first.gpus[0].health));
  }
}

TEST_CASE("a field that moves every sample and is unknown stays unknown in serve's history") {
  Snapshot snapshot = with_every_field(41);
  for (const GpuField &field : gpu_fields())
    if (field.history == History::own_slot)
      (snapshot.gpus[0].health.*field.integer).reset();
  std::size_t bytes = 0;
  Snapshot back = expand(compact(snapshot, nullptr, bytes));
  for (const GpuField &field : gpu_fields()) {
    INFO(field.json_key);
    CHECK(shown(field, back.gpus.at(0).health) == shown(field, snapshot.gpus[0].health));
  }
}

TEST_CASE("every field of the table with an XML leaf is read from nvidia-smi's XML") {
  for (const GpuField &field : gpu_fields()) {
    if (*field.xml_leaf == '\0' || field.kind != FieldKind::integer)
      continue;
    INFO(field.json_key);
    std::string unit(unit_symbol(field.unit));
    std::string leaf = std::string("<") + field.xml_leaf + ">77" + (unit.empty() ? "" : " ") +
                       unit + "</" + field.xml_leaf + ">";
    if (*field.xml_parent != '\0')
      leaf = std::string("<") + field.xml_parent + ">" + leaf + "</" + field.xml_parent + ">";
    Snapshot read = read_xml("<nvidia_smi_log><gpu>" + leaf + "</gpu></nvidia_smi_log>");
    CHECK(shown(field, read.gpus.at(0).health) == "77");
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
      CHECK(shown(field, read.gpus.at(0).health) == "unknown");
    }
}
