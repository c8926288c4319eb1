#include "formats/formats.hpp"
#include "nvsmi/nvidia_smi_output.hpp"
#include "serve/compact_snapshot.hpp"
#include "serve/serve_history.hpp"
#include "snapshot_builders.hpp"
#include "support.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>

namespace test_serve_history {

using namespace nvsmi;

namespace {

Snapshot fixture(const std::string &name) {
  return read_nvidia_smi_output(test::read_file(test::fixture_path(name)));
}

// `snapshot` as a live sample has it: every GPU with two processes whose every field is known
// (their commands ending in `tag`), and the host.
Snapshot observed(Snapshot snapshot, const std::string &tag) {
  for (Gpu &gpu : snapshot.gpus) {
    gpu.processes.emplace();
    for (std::int64_t pid : {100 + gpu.index, 200 + gpu.index})
      gpu.processes->push_back(test::observed_process(
          pid, "alice", 4096, "python3 /home/alice/train.py --config big.yaml --run " + tag));
  }
  snapshot.host = test::observed_host();
  return snapshot;
}

// Every fixture the readers accept, and one with every optional part filled in.
std::vector<Snapshot> every_kind_of_snapshot() {
  std::vector<Snapshot> snapshots;
  for (const char *folder : {"xml", "csv"})
    for (const auto &entry :
         std::filesystem::directory_iterator(test::fixture_path(std::string(folder))))
      if (entry.path().extension() == "." + std::string(folder)) // not a .stderr beside it
        snapshots.push_back(read_nvidia_smi_output(test::read_file(entry.path())));
  Snapshot full = fixture("xml/a100-mig-v12.xml");
  full.gpus[0].extras = {{"driver_version", std::string("535.10")}, {"serial", std::nullopt}};
  full.gpus[0].temperature_c = -5;
  full.gpus[0].memory_total_mib = std::int64_t(1) << 62; // exact, not through a double
  full.gpus[0].power_draw_w = -0.0;
  // What nvidia-smi -L adds to a MIG instance (nvsmi/gpu_listing.hpp).
  (*full.gpus[0].mig_devices)[1].uuid = "MIG-00000000-0000-0000-0000-0000000000b1";
  (*full.gpus[0].mig_devices)[1].profile = "2g.20gb";
  snapshots.push_back(full);
  snapshots.push_back(observed(fixture("xml/h100-8gpu-v12.xml"), "1"));
  return snapshots;
}

std::string render(const ServeHistory &history) {
  std::string body;
  BodyProducer produce = history.stream(0, false, 1.0);
  while (produce(body)) {
  }
  return body;
}

} // namespace

TEST_CASE("compact history samples turn back into the same snapshot") {
  for (const Snapshot &snapshot : every_kind_of_snapshot()) {
    std::size_t text_bytes = 0;
    CompactSnapshot packed = compact(snapshot, nullptr, text_bytes);
    CHECK(format_json(expand(packed)) == format_json(snapshot));
    CHECK(format_legacy(expand(packed)) == format_legacy(snapshot));
  }
}

TEST_CASE("compact history samples share the texts that did not change") {
  Snapshot snapshot = fixture("xml/h100-8gpu-v12.xml");
  std::size_t first = 0, second = 0;
  CompactSnapshot a = compact(snapshot, nullptr, first);
  CHECK(first > 8 * 3 * 48); // names, UUIDs, bus ids and more, for 8 GPUs
  snapshot.gpus[2].temperature_c = 99;
  CompactSnapshot b = compact(snapshot, &a, second);
  CHECK(second == 0);
  CHECK(b.gpus[5].uuid.get() == a.gpus[5].uuid.get());
  CHECK(format_json(expand(b)) == format_json(snapshot));
  snapshot.gpus[2].name = "renamed";
  std::size_t third = 0;
  compact(snapshot, &b, third);
  CHECK(third > 0);
  CHECK(third < 200);
}

TEST_CASE("compact history samples share process texts and the host's name too") {
  Snapshot snapshot = observed(fixture("xml/h100-8gpu-v12.xml"), "1");
  std::size_t first = 0, second = 0;
  CompactSnapshot a = compact(snapshot, nullptr, first);
  snapshot.host->cpu_percent = 50;
  (*snapshot.gpus[4].processes)[1].cpu_percent.reset();
  CompactSnapshot b = compact(snapshot, &a, second);
  CHECK(second == 0);
  CHECK((*b.gpus[4].processes)[1].texts == (*a.gpus[4].processes)[1].texts);
  CHECK(b.host->hostname.get() == a.host->hostname.get());
  CHECK(format_json(expand(b)) == format_json(snapshot));
  // A new command is counted, once.
  (*snapshot.gpus[4].processes)[1].command = "python3 /home/alice/evaluate.py --checkpoint 12";
  std::size_t third = 0;
  CompactSnapshot c = compact(snapshot, &b, third);
  CHECK(third > 48);
  CHECK(third < 200);
  CHECK(format_json(expand(c)) == format_json(snapshot));
}

TEST_CASE("compact history samples keep each GPU's batch job, shared while the same record holds "
          "it") {
  Snapshot snapshot = fixture("xml/h100-8gpu-v12.xml");
  snapshot.allocations_read = true;
  Allocation held;
  held.job_id = "4321";
  held.user = "alice";
  held.account = "physics";
  held.since_epoch_s = 1700000000;
  held.held_s = 60;
  snapshot.gpus[0].allocation = held;
  snapshot.gpus[1].allocation = held;
  std::size_t first = 0, second = 0;
  CompactSnapshot a = compact(snapshot, nullptr, first);
  CHECK(format_json(expand(a)) == format_json(snapshot));
  CHECK(expand(a).allocations_read);
  snapshot.gpus[0].allocation->held_s = 61; // a second later: the same record
  snapshot.gpus[1].allocation->held_s = 61;
  CompactSnapshot b = compact(snapshot, &a, second);
  CHECK(second == 0);
  REQUIRE(b.allocations.size() == 2);
  CHECK(b.allocations[0].record.get() == a.allocations[0].record.get());
  CHECK(format_json(expand(b)) == format_json(snapshot));
  // Another job on GPU 1: a record of its own, counted.
  snapshot.gpus[1].allocation->job_id = "9999";
  std::size_t third = 0;
  CompactSnapshot c = compact(snapshot, &b, third);
  CHECK(third > 0);
  nlohmann::json gpus = nlohmann::json::parse(format_json(expand(c)))["gpus"];
  CHECK(gpus[0]["allocation"]["job_id"] == "4321");
  CHECK(gpus[0]["allocation"]["held_s"] == 61);
  CHECK(gpus[1]["allocation"]["job_id"] == "9999");
  CHECK(gpus[2]["allocation"].is_null());
}

TEST_CASE("serve history: counts what it really holds, and lets go of it") {
  Snapshot snapshot = fixture("xml/h100-8gpu-v12.xml");
  auto owner = std::make_shared<ServeHistory>(100, 256u << 20); // stream() shares it
  ServeHistory &history = *owner;
  history.add(snapshot, 1000);
  std::size_t one = history.bytes();
  CHECK(one > 2000);
  // The first sample holds the health blocks the later ones share (10,008 bytes for the 8-GPU
  // fixture's 4 processes since each keeps its shares' age).
  CHECK(one < 10240);
  for (int i = 1; i < 50; ++i) {
    snapshot.gpus[0].temperature_c = i;
    history.add(snapshot, 1000 + i);
  }
  std::size_t fifty = history.bytes();
  CHECK(history.size() == 50);
  // The texts are held once: each later sample adds its numbers only.
  double later = static_cast<double>(fifty - one) / 49;
  CHECK(later < 0.75 * static_cast<double>(one));
  CHECK(later < 5000); // 24 own slots of numbers per GPU
  // Past the time window the old samples go, and with them what they alone held.
  history.add(snapshot, 1200);
  CHECK(history.size() == 1);
  CHECK(history.bytes() <= one);
  CHECK(history.bytes() > 0);
}

TEST_CASE("serve history: the byte cap holds, counted on samples that differ in every text") {
  Snapshot snapshot = fixture("xml/h100-8gpu-v12.xml");
  auto owner = std::make_shared<ServeHistory>(1e9, 64 * 1024); // stream() shares it
  ServeHistory &history = *owner;
  for (int i = 0; i < 500; ++i) {
    for (Gpu &gpu : snapshot.gpus)
      gpu.name = "GPU name that changes every time " + std::to_string(i);
    history.add(snapshot, i);
    CHECK(history.bytes() <= 64 * 1024);
  }
  CHECK(history.size() > 5);
  CHECK(history.size() < 40);
}

TEST_CASE("serve history: process and host texts are counted, capped and given back") {
  auto owner = std::make_shared<ServeHistory>(100, 256u << 20); // stream() shares it
  ServeHistory &history = *owner;
  history.add(observed(fixture("xml/h100-8gpu-v12.xml"), "0"), 1000);
  std::size_t one = history.bytes();
  for (int i = 1; i < 50; ++i)
    history.add(observed(fixture("xml/h100-8gpu-v12.xml"), std::to_string(i)), 1000 + i);
  // Every sample's 16 commands are new: each holds them, and they are counted.
  double later = static_cast<double>(history.bytes() - one) / 49;
  CHECK(later > 16 * 64);
  // When the old samples go, so does what their commands cost.
  history.add(observed(fixture("xml/h100-8gpu-v12.xml"), "last"), 1200);
  CHECK(history.size() == 1);
  CHECK(history.bytes() <= one + 16 * 16);
  auto capped = std::make_shared<ServeHistory>(1e9, 128 * 1024);
  for (int i = 0; i < 300; ++i) {
    capped->add(observed(fixture("xml/h100-8gpu-v12.xml"), std::to_string(i)), i);
    CHECK(capped->bytes() <= 128 * 1024);
  }
  CHECK(capped->size() > 5);
  CHECK(capped->size() < 100);
}

TEST_CASE("serve history: MIG instances' UUIDs and profiles are kept, counted and given back") {
  auto owner = std::make_shared<ServeHistory>(100, 256u << 20); // stream() shares it
  ServeHistory &history = *owner;
  // Each sample's listing new, as a hostile -L could make it: 2 instances of 2 long texts each.
  auto listed = [](const std::string &tag) {
    Snapshot snapshot = fixture("xml/a100-mig-v12.xml");
    for (MigDevice &device : *snapshot.gpus[0].mig_devices) {
      device.uuid = "MIG-" + tag + std::string(200, 'u');
      device.profile = tag + std::string(200, 'p');
    }
    return snapshot;
  };
  history.add(listed("0"), 1000);
  std::size_t one = history.bytes();
  for (int i = 1; i <= 20; ++i)
    history.add(listed(std::to_string(i)), 1000 + i);
  CHECK(static_cast<double>(history.bytes() - one) / 20 > 4 * 200);
  CHECK_THAT(render(history), Catch::Contains("MIG-20" + std::string(200, 'u')));
  history.add(listed("last"), 1200);
  CHECK(history.size() == 1);
  CHECK(history.bytes() <= one + 64);
}

TEST_CASE("serve history: the streamed document, part by part") {
  Snapshot snapshot = fixture("xml/h100-8gpu-v12.xml");
  auto owner = std::make_shared<ServeHistory>(3600, 256u << 20); // stream() shares it
  ServeHistory &history = *owner;
  CHECK(nlohmann::json::parse(render(history))["samples"].empty());
  for (int i = 0; i < 40; ++i)
    history.add(snapshot, 1000 + i);
  BodyProducer produce = history.stream(1010, false, 0.5);
  std::string body;
  int parts = 0;
  for (bool more = true; more; ++parts) {
    std::size_t before = body.size();
    more = produce(body);
    CHECK(body.size() - before < 64 * 1024); // one part at a time
    history.add(snapshot, 2000 + parts);     // not in this response
  }
  CHECK(parts > 2);
  auto document = nlohmann::json::parse(body);
  CHECK(document["schema"] == "nvsmi-agent.history/1");
  CHECK(document["interval_seconds"] == 0.5);
  REQUIRE(document["samples"].size() == 30);
  CHECK(document["samples"][0]["received"] == 1010.0);
  CHECK(document["samples"][29]["snapshot"] == nlohmann::json::parse(format_json(snapshot)));
  CHECK(nlohmann::json::parse(render(history))["samples"].size() ==
        static_cast<std::size_t>(40 + parts));
}

TEST_CASE("serve history: samples that age out while a response is sent are left out") {
  Snapshot snapshot = fixture("xml/h100-8gpu-v12.xml");
  auto owner = std::make_shared<ServeHistory>(100, 256u << 20); // stream() shares it
  ServeHistory &history = *owner;
  for (int i = 0; i < 40; ++i)
    history.add(snapshot, i);
  BodyProducer produce = history.stream(0, false, 1);
  std::string body;
  REQUIRE(produce(body));
  history.add(snapshot, 130); // everything before 30 goes
  while (produce(body)) {
  }
  auto samples = nlohmann::json::parse(body)["samples"];
  REQUIRE(samples.size() >= 10);
  CHECK(samples.back()["received"] == 39.0);
  for (std::size_t i = 1; i < samples.size(); ++i)
    CHECK(samples[i]["received"].get<double>() > samples[i - 1]["received"].get<double>());
}

} // namespace test_serve_history
