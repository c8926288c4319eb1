// The readers on a real recording: one NVIDIA H200 on driver 580.159.04 under a PyTorch load
// (pid 473), made by scripts/record-fixtures (fixtures/README.md, `recorded/`). The figures below
// were read off the recorded files by eye; every source must agree on what they share.
#include "nvsmi/compute_apps.hpp"
#include "nvsmi/csv_reader.hpp"
#include "nvsmi/pmon.hpp"
#include "nvsmi/stream.hpp"
#include "nvsmi/xml_reader.hpp"
#include "support.hpp"

#include <catch2/catch.hpp>

#include <sstream>

namespace test_recorded_h200 {

using namespace nvsmi;

namespace {

std::string recorded(const std::string &name) {
  return test::read_file(test::fixture_path("recorded/nvidia-h200__580.159.04/" + name));
}

// What the XML and every CSV form of the query agree on: the GPU, not the moment.
void check_h200(const Snapshot &snapshot) {
  CHECK(snapshot.driver_version == std::string("580.159.04"));
  REQUIRE(snapshot.gpus.size() == 1);
  const Gpu &gpu = snapshot.gpus[0];
  CHECK(gpu.index == 0);
  CHECK(gpu.name == std::string("NVIDIA H200"));
  CHECK(gpu.uuid == std::string("GPU-00000000-0000-0000-0000-000000000000"));
  CHECK(gpu.pci_bus_id == std::string("00000000:00:06.0"));
  CHECK(gpu.memory_total_mib == 143771);
  CHECK(gpu.memory_used_mib == 1587);
  CHECK(gpu.memory_free_mib == 141570);
  CHECK(gpu.power_limit_w == Approx(700.0));
  CHECK(gpu.pstate == std::string("P0"));
  CHECK(gpu.clocks.memory_mhz == 3201);
  CHECK(gpu.clocks.video_mhz == 1545);
  // A passively cooled board: no fan reading, never 0.
  CHECK_FALSE(gpu.fan_speed_percent.has_value());
  CHECK(gpu.health.ecc_enabled == true);
  CHECK(gpu.health.ecc_volatile.uncorrected == 0);
  CHECK(gpu.health.remapped_rows_uncorrectable == 0);
  CHECK(gpu.health.pcie_link_gen == 5);
  CHECK(gpu.health.pcie_link_width == 16);
  CHECK_FALSE(gpu.lost_reason.has_value());
}

} // namespace

TEST_CASE("H200 recording: -q -x reads the GPU, its process and its moment") {
  Snapshot snapshot = read_xml(recorded("query.xml"));
  check_h200(snapshot);
  CHECK(snapshot.cuda_version == std::string("13.0"));
  const Gpu &gpu = snapshot.gpus[0];
  CHECK(gpu.temperature_c == 40);
  CHECK(gpu.utilization_gpu_percent == 47);
  CHECK(gpu.utilization_memory_percent == 7);
  CHECK(gpu.power_draw_w == Approx(286.69));
  CHECK(gpu.clocks.graphics_mhz == 1965);
  CHECK(gpu.clocks.sm_mhz == 1965);
  CHECK(gpu.mig_enabled == false);
  REQUIRE(gpu.processes.has_value());
  REQUIRE(gpu.processes->size() == 1);
  CHECK(gpu.processes->at(0).pid == 473);
  CHECK(gpu.processes->at(0).name == std::string("python3"));
  CHECK(gpu.processes->at(0).used_memory_mib == 1578);
  REQUIRE(gpu.clock_event_reasons_active.has_value());
  CHECK(*gpu.clock_event_reasons_active == std::vector<std::string>{"sw_power_cap"});
}

TEST_CASE("H200 recording: every CSV form of the query reads the same GPU") {
  for (const char *file : {"query-gpu.csv", "query-gpu-nounits.csv"}) {
    INFO(file);
    Snapshot snapshot = read_csv(recorded(file));
    check_h200(snapshot);
    CHECK(snapshot.gpus[0].temperature_c == 44);
    CHECK(snapshot.gpus[0].utilization_gpu_percent == 26);
  }
  // Without a header, the columns are the ones asked for: record-fixtures' 41 fields.
  std::string fields =
      "timestamp,driver_version,count,index,uuid,name,pci.bus_id,pstate,temperature.gpu,"
      "utilization.gpu,utilization.memory,memory.total,memory.used,memory.free,power.draw,"
      "power.limit,enforced.power.limit,fan.speed,clocks.current.graphics,clocks.current.sm,"
      "clocks.current.memory,clocks.current.video,ecc.mode.current,ecc.mode.pending,"
      "ecc.errors.corrected.volatile.total,ecc.errors.corrected.aggregate.total,"
      "ecc.errors.uncorrected.volatile.total,ecc.errors.uncorrected.aggregate.total,"
      "retired_pages.sbe,retired_pages.dbe,retired_pages.pending,remapped_rows.correctable,"
      "remapped_rows.uncorrectable,remapped_rows.pending,remapped_rows.failure,"
      "pcie.link.gen.current,pcie.link.gen.max,pcie.link.width.current,pcie.link.width.max,"
      "clocks_throttle_reasons.supported,clocks_throttle_reasons.active";
  std::vector<std::string> names;
  std::stringstream list(fields);
  for (std::string name; std::getline(list, name, ',');)
    names.push_back(name);
  check_h200(read_csv(recorded("query-gpu-noheader-nounits.csv"), names));

  // Every field driver 580 lists (about 200, new names such as clocks_event_reasons.*): the
  // known ones are found among them, the rest skipped.
  Snapshot all = read_csv(recorded("query-gpu-all.csv"));
  check_h200(all);
  CHECK(all.gpus[0].utilization_gpu_percent == 47);
  CHECK(all.gpus[0].mig_enabled == false);
}

TEST_CASE("H200 recording: nvidia-smi's CSV loop is one sample per row of count 1") {
  std::string text = recorded("query-gpu-loop.csv");
  std::istringstream lines(text);
  std::string header;
  REQUIRE(std::getline(lines, header));
  CsvSampleAssembler assembler(CsvLayout::from_header(header));
  int samples = 0;
  for (std::string line; std::getline(lines, line);) {
    CsvSampleAssembler::Outcome outcome = assembler.add_line(line);
    CHECK_FALSE(outcome.error.has_value());
    if (outcome.sample) {
      ++samples;
      check_h200(*outcome.sample);
    }
  }
  CHECK(samples == 10); // 2 s at -lms 200
}

TEST_CASE("H200 recording: the XML loop is whole documents back to back") {
  XmlDocumentSplitter splitter(1 << 20);
  StreamPieces out;
  splitter.feed(recorded("query-xml-loop.xml"), out);
  CHECK(out.errors.empty());
  REQUIRE(out.pieces.size() == 3); // 3 s at -lms 1000
  for (const std::string &document : out.pieces)
    check_h200(read_xml(document));
}

TEST_CASE("H200 recording: compute-apps, one-shot and its loop") {
  for (const char *file : {"compute-apps.csv", "compute-apps-nounits.csv"}) {
    INFO(file);
    std::vector<ComputeApp> apps = read_compute_apps(recorded(file));
    REQUIRE(apps.size() == 1);
    CHECK(apps[0].gpu_uuid == std::string("GPU-00000000-0000-0000-0000-000000000000"));
    CHECK(apps[0].pid == 473);
    CHECK(apps[0].process_name == std::string("python3"));
    CHECK(apps[0].used_memory_mib == 1578);
  }
  // The loop prints its header once, then each sample's rows with nothing between samples: six
  // samples of one process read as six rows. And with no process it prints no row at all, so an
  // empty sample cannot be told from a late one by the output alone.
  std::vector<ComputeApp> looped = read_compute_apps(recorded("compute-apps-loop.csv"));
  CHECK(looped.size() == 6);
  for (const ComputeApp &app : looped)
    CHECK(app.pid == 473);
  std::string idle = recorded("idle-compute-apps-loop.csv");
  CHECK(idle == "gpu_uuid, pid, process_name, used_gpu_memory [MiB]\n");
  CHECK(read_compute_apps(idle).empty());
}

TEST_CASE("H200 recording: pmon with a process, and with none") {
  std::vector<std::vector<PmonRow>> samples = read_pmon(recorded("pmon.txt"));
  REQUIRE(samples.size() == 5);
  for (const std::vector<PmonRow> &sample : samples) {
    REQUIRE(sample.size() == 1);
    CHECK(sample[0].gpu_index == 0);
    CHECK(sample[0].pid == 473);
    CHECK(sample[0].type == std::string("C"));
    CHECK(sample[0].sm_percent == 34);
    CHECK(sample[0].memory_percent == 5);
    CHECK_FALSE(sample[0].encoder_percent.has_value()); // `-`: never 0
    CHECK(sample[0].fb_mib == 1578);
    CHECK(sample[0].command == std::string("python3"));
  }
  // No process: each sample is the GPU's `-` row, so an empty sample is seen as one.
  std::vector<std::vector<PmonRow>> idle = read_pmon(recorded("idle-pmon.txt"));
  REQUIRE(idle.size() == 2);
  for (const std::vector<PmonRow> &sample : idle) {
    REQUIRE(sample.size() == 1);
    CHECK(sample[0].gpu_index == 0);
    CHECK_FALSE(sample[0].pid.has_value());
    CHECK_FALSE(sample[0].sm_percent.has_value());
  }
}

TEST_CASE("H200 recording: the compute-apps loop with timestamps, as two processes end") {
  // Two processes (pids 442, 443), `-lms 500`: 442 ended after the 6th iteration, 443 after the
  // 11th, and from then on the loop printed nothing. Each iteration's rows share its timestamp.
  for (const char *file :
       {"compute-apps-loop-timestamps.csv", "compute-apps-loop-timestamps-noheader-nounits.csv"}) {
    INFO(file);
    std::istringstream lines(recorded(file));
    ComputeAppsLoopReader reader;
    std::vector<ComputeAppsLoopReader::Sample> samples;
    for (std::string line; std::getline(lines, line);) {
      ComputeAppsLoopReader::Outcome outcome = reader.add_line(line);
      CHECK_FALSE(outcome.error.has_value());
      if (outcome.sample)
        samples.push_back(*outcome.sample);
    }
    if (std::optional<ComputeAppsLoopReader::Sample> last = reader.flush())
      samples.push_back(*last);
    REQUIRE(samples.size() == 11);
    for (std::size_t i = 0; i < samples.size(); ++i) {
      INFO(samples[i].timestamp);
      REQUIRE(samples[i].apps.size() == (i < 6 ? 2u : 1u));
      CHECK(samples[i].apps.back().pid == 443);
      CHECK(samples[i].apps.back().used_memory_mib == 666);
      if (i < 6)
        CHECK(samples[i].apps.front().pid == 442);
    }
    CHECK(samples[0].timestamp.substr(0, 11) == "2026/11/26 ");
  }
  // pmon over the same time: its `-` row says at once that none is left.
  std::vector<std::vector<PmonRow>> pmon = read_pmon(recorded("pmon-exits.txt"));
  REQUIRE(pmon.size() >= 6);
  CHECK(pmon[0].size() == 2);
  CHECK(pmon.back().size() == 1);
  CHECK_FALSE(pmon.back()[0].pid.has_value());
}

} // namespace test_recorded_h200
