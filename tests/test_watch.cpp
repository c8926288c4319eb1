// End to end: `nvsmi-agent watch` against the stand-in nvidia-smi's loop and its failures.
#include "core/local_time.hpp"
#include "process_support.hpp"
#include "support.hpp"
#include "tmux_session.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <functional>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

namespace test_watch {

using test::lines_of;
using test::quote;
using test::Run;

namespace {

struct Setup {
  std::string folder = test::temporary_folder();
  std::string args = folder + "/args"; // one line per nvidia-smi start
  std::string log = folder + "/gpu-log.csv";

  // Runs `nvsmi-agent watch` on the stand-in, with FAKE_NVSMI_* settings in `environment`.
  Run watch(const std::string &environment, const std::string &arguments) const {
    return test::run_shell(environment + " FAKE_NVSMI_ARGS=" + quote(args) +
                           " FAKE_NVSMI_STATE=" + quote(folder + "/state") + " timeout 120 " +
                           quote(AGENT_BIN) + " watch --nvidia-smi " +
                           quote(std::string(SCRIPTS_DIR) + "/fake-nvidia-smi") + " " + arguments);
  }
  int spawns() const {
    std::string calls = test::read_file(args);
    return static_cast<int>(std::count(calls.begin(), calls.end(), '\n'));
  }
};

// Every line after the header is a whole row of the csv format: a cell for each of the header's
// columns (17, then one per logged field of the field table).
void check_whole_rows(const std::string &log, std::size_t expected_rows) {
  std::vector<std::string> lines = lines_of(log);
  REQUIRE(lines.size() == expected_rows + 1);
  CHECK(lines[0].rfind("timestamp,index,uuid,name,", 0) == 0);
  auto columns = std::count(lines[0].begin(), lines[0].end(), ',');
  CHECK(columns >= 16);
  for (std::size_t i = 1; i < lines.size(); ++i) {
    INFO(lines[i]);
    CHECK(std::count(lines[i].begin(), lines[i].end(), ',') == columns);
  }
  CHECK(log.back() == '\n');
}

// Whether a `sleep 3600` of the stand-in's, or the stand-in itself, started by this test program
// is still there once the kernel has had time to take killed processes down.
bool leftovers() {
  return !test::wait_until([] { return !test::running_here("sleep 3600"); });
}
bool fake_left() {
  return !test::wait_until([] { return !test::running_here(test::fake_nvidia_smi_process); });
}

const int promptly_ms =
    static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(test::promptly).count());

const std::string legacy_8gpu_start =
    R"({"temp":[{"data":["30","30C"],"name":0},{"data":["31","31C"],"name":1},)";

} // namespace

TEST_CASE("watch: one nvidia-smi for the whole run, a line per sample") {
  Setup setup;
  Run run = setup.watch("", "--interval 0.1 --count 3");
  CHECK(run.exit_code == 0);
  std::vector<std::string> lines = lines_of(run.out);
  REQUIRE(lines.size() == 3);
  for (const std::string &line : lines)
    CHECK_THAT(line, Catch::StartsWith(legacy_8gpu_start));
  CHECK(setup.spawns() == 1);
  CHECK_THAT(test::read_file(setup.args),
             Catch::Contains("--format=csv,noheader,nounits -lms 100"));
}

TEST_CASE("watch: --source xml reads the stream of documents; --format json") {
  Setup setup;
  Run run = setup.watch("", "--source xml --format json --interval 0.1 --count 2");
  CHECK(run.exit_code == 0);
  std::vector<std::string> lines = lines_of(run.out);
  REQUIRE(lines.size() == 2);
  auto document = nlohmann::json::parse(lines[1]);
  CHECK(document["source"] == "xml");
  CHECK(document["gpus"].size() == 8);
  CHECK(document["gpus"][3]["processes"].size() == 2);
  CHECK(test::read_file(setup.args) == "-q -x -lms 100\n");
}

TEST_CASE("watch: samples after the first have the host's disk and network rates") {
  Setup setup;
  // A host's /proc and /sys (fixtures/host/), whose counters move once the first sample is out.
  std::string root = setup.folder + "/root", out = setup.folder + "/out";
  std::filesystem::copy(test::fixture_path("host/machine"), root,
                        std::filesystem::copy_options::recursive);
  auto replace = [&](const std::string &from, const std::string &to) {
    return "cp " + quote(test::fixture_path("host/later/" + from)) + " " + quote(to + ".new") +
           " && mv " + quote(to + ".new") + " " + quote(to);
  };
  Run run =
      test::run_shell("NVSMI_HOST_ROOT=" + quote(root) + " FAKE_NVSMI_ARGS=" + quote(setup.args) +
                      " timeout 120 " + quote(AGENT_BIN) + " watch --nvidia-smi " +
                      quote(std::string(SCRIPTS_DIR) + "/fake-nvidia-smi") +
                      " --format json --interval 1 --count 3 > " + quote(out) + " & " +
                      test::shell_wait_until("test -s " + quote(out)) + "; " +
                      replace("diskstats", root + "/proc/diskstats") + " && " +
                      replace("net/dev", root + "/proc/net/dev") + "; wait $!");
  REQUIRE(run.exit_code == 0);
  std::vector<std::string> lines = lines_of(test::read_file(out));
  REQUIRE(lines.size() == 3);
  const char *rates[] = {"disk_read_bytes_per_second", "disk_write_bytes_per_second",
                         "network_receive_bytes_per_second", "network_send_bytes_per_second"};
  nlohmann::json first = nlohmann::json::parse(lines[0])["host"];
  for (const char *rate : rates) {
    INFO(rate);
    REQUIRE(first.contains(rate));
    CHECK(first[rate].is_null()); // nothing to compare with yet: unknown, not 0
  }
  // The counters moved between two of the later samples (when, the machine's load decides): that
  // sample has them as rates, and every later sample has them known.
  double disk_read = 0, network_receive = 0;
  for (std::size_t i = 1; i < lines.size(); ++i) {
    nlohmann::json host = nlohmann::json::parse(lines[i])["host"];
    for (const char *rate : rates) {
      INFO(rate << " in sample " << i);
      REQUIRE(host[rate].is_number());
      CHECK(host[rate].get<double>() >= 0);
    }
    disk_read += host["disk_read_bytes_per_second"].get<double>();
    network_receive += host["network_receive_bytes_per_second"].get<double>();
  }
  CHECK(disk_read > 0);
  CHECK(network_receive > 0);
}

TEST_CASE("watch: --fixture replays a recording without nvidia-smi") {
  Run run = test::run_shell("PATH=/nonexistent " + quote(AGENT_BIN) +
                            " watch --interval 0.05 --count 3 --format csv --fixture " +
                            quote(test::fixture_path("xml/gtx1080ti-2gpu-v10-nodoctype.xml")));
  CHECK(run.exit_code == 0);
  check_whole_rows(run.out, 6); // one header, two GPUs a sample
}

TEST_CASE("watch: the CSV log gets a header once and whole rows") {
  Setup setup;
  REQUIRE(setup.watch("", "--interval 0.1 --count 2 --csv-log " + quote(setup.log)).out.empty());
  REQUIRE(setup.watch("", "--interval 0.1 --count 1 --csv-log " + quote(setup.log)).exit_code == 0);
  check_whole_rows(test::read_file(setup.log), 24);
}

TEST_CASE("watch: a log with other columns is refused, not mixed") {
  Setup setup;
  test::write_file(setup.log, "time,gpu,temp\n1,0,40\n");
  Run run = setup.watch("", "--interval 0.1 --count 1 --csv-log " + quote(setup.log));
  CHECK(run.exit_code == 7);
  CHECK_THAT(run.err, Catch::Contains("other columns"));
  CHECK(test::read_file(setup.log) == "time,gpu,temp\n1,0,40\n");
}

TEST_CASE("watch: a CSV log of an earlier version is moved aside untouched, never mixed") {
  Setup setup;
  // What the agent wrote before power.limit, fan.speed and the host's columns: 13 cells a row.
  std::string earlier =
      "timestamp,index,uuid,name,pstate,temperature.gpu,utilization.gpu [%],"
      "utilization.memory [%],memory.total [MiB],memory.free [MiB],memory.used [MiB],"
      "memory.used_percent [%],power.draw [W]\n"
      "2024-03-12T14:03:27+01:00,0,GPU-0,NVIDIA H100,P0,30,0,0,81559,81016,0,0.00,69.61\n";
  test::write_file(setup.log, earlier);
  std::string watch = quote(AGENT_BIN) + " watch --interval 0.05 --count 2 --fixture " +
                      quote(test::fixture_path("xml/h100-8gpu-v12.xml")) + " --csv-log " +
                      quote(setup.log);
  Run run = test::run_shell(watch);
  INFO(run.err);
  CHECK(run.exit_code == 0);
  CHECK_THAT(run.err, Catch::Contains("CSV log " + setup.log +
                                      " has the columns of an earlier nvsmi-agent: moved it to " +
                                      setup.log + ".old-columns and started a new one"));
  CHECK(test::read_file(setup.log + ".old-columns") == earlier);
  std::string content = test::read_file(setup.log);
  check_whole_rows(content, 16);
  std::vector<std::string> lines = lines_of(content);
  const std::string disk_and_network = ",host.disk.read [B/s],host.disk.write [B/s],"
                                       "host.network.receive [B/s],host.network.send [B/s]";
  CHECK_THAT(lines[0], Catch::Contains(",power.draw [W],power.limit [W],fan.speed [%],"
                                       "host.cpu [%],host.memory.used [MiB]" +
                                       disk_and_network + ",pcie.replay_counter,activity.sm [%],"));
  CHECK_THAT(lines[0], Catch::EndsWith(",nvlink.bandwidth_bytes_per_second [B/s]"));
  // A recording was not taken on this machine: its host cells are empty, never 0; its XML has
  // the replay counter and the PCIe throughput (0), not dmon's activity.
  const std::string tail = ",700.00,,,,,,,,0,,,,,,,,0,0,,,";
  CHECK_THAT(lines[1], Catch::EndsWith(tail));
  // The agent's log from before the host's disk and network columns: moved aside too.
  std::string before_disks = lines[0];
  before_disks.erase(before_disks.find(disk_and_network), disk_and_network.size());
  before_disks.erase(before_disks.find(",activity.sm [%]"));
  std::string row = lines[1];
  row.replace(row.rfind(tail), std::string::npos, ",700.00,,,,0");
  test::write_file(setup.log, before_disks + "\n" + row + "\n");
  Run moved = test::run_shell(watch);
  INFO(moved.err);
  CHECK(moved.exit_code == 0);
  CHECK_THAT(moved.err, Catch::Contains("has the columns of an earlier nvsmi-agent: moved it to " +
                                        setup.log + ".old-columns.2 "));
  CHECK(test::read_file(setup.log + ".old-columns.2") == before_disks + "\n" + row + "\n");

  // Another such file later takes the next free name: the first one moved aside stays.
  test::write_file(setup.log, earlier + earlier.substr(earlier.find('\n') + 1));
  Run again = test::run_shell(watch);
  INFO(again.err);
  CHECK(again.exit_code == 0);
  CHECK_THAT(again.err, Catch::Contains("moved it to " + setup.log + ".old-columns.3 "));
  CHECK(test::read_file(setup.log + ".old-columns") == earlier);
  CHECK(lines_of(test::read_file(setup.log + ".old-columns.3")).size() == 3);
  check_whole_rows(test::read_file(setup.log), 16);
}

namespace {

// The lines of a JSON log, each parsed; a line that is not JSON fails the test.
std::vector<nlohmann::json> json_lines(const std::string &path) {
  std::string content = test::read_file(path);
  CHECK(!content.empty());
  CHECK(content.back() == '\n');
  std::vector<nlohmann::json> documents;
  for (const std::string &line : lines_of(content)) {
    INFO(line.substr(0, 200));
    REQUIRE(nlohmann::json::accept(line));
    documents.push_back(nlohmann::json::parse(line));
  }
  return documents;
}

std::string json_watch(const std::string &log, const std::string &arguments) {
  return quote(AGENT_BIN) + " watch --interval 0.05 --fixture " +
         quote(test::fixture_path("xml/h100-8gpu-v12.xml")) + " --json-log " + quote(log) + " " +
         arguments;
}

} // namespace

TEST_CASE("watch: --json-log appends a typed snapshot per sample, processes and all") {
  Setup setup;
  std::string log = setup.folder + "/gpu-log.jsonl";
  Run run = test::run_shell(json_watch(log, "--count 3"));
  INFO(run.err);
  CHECK(run.exit_code == 0);
  CHECK(run.out.empty()); // a log is given: stdout stays quiet without --format
  std::vector<nlohmann::json> samples = json_lines(log);
  REQUIRE(samples.size() == 3);
  for (const nlohmann::json &sample : samples) {
    CHECK(sample["schema"] == "nvsmi-agent.snapshot/1");
    CHECK(sample["gpus"].size() == 8);
    // A recording: no host, and no user or command of this machine's for its processes.
    CHECK(sample["host"].is_null());
  }
  const nlohmann::json &process = samples[2]["gpus"][3]["processes"][0];
  CHECK(process["pid"].is_number_integer());
  CHECK(process["user"].is_null());
  CHECK(process["command"].is_null());
  CHECK(process["container"].is_null());
  REQUIRE(test::run_shell(json_watch(log, "--count 2")).exit_code == 0);
  CHECK(json_lines(log).size() == 5);
}

TEST_CASE("watch: a JSON log named .gz is a gzip member per sample, whole after every write, "
          "at a seventh of the bytes") {
  Setup setup;
  std::string plain = setup.folder + "/gpus.jsonl", packed = setup.folder + "/gpus.jsonl.gz";
  REQUIRE(test::run_shell(json_watch(plain, "--count 3")).exit_code == 0);
  Run run = test::run_shell(json_watch(packed, "--count 3"));
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  std::string bytes = test::read_file(packed);
  REQUIRE(bytes.size() > 2);
  CHECK(static_cast<unsigned char>(bytes[0]) == 0x1f);
  CHECK(static_cast<unsigned char>(bytes[1]) == 0x8b);
  // gzip itself reads every member: the same lines as the plain log's, but for the time and the
  // counters, which add up seconds as this run's clock measured them.
  Run unpacked = test::run_shell("gzip -dc " + quote(packed));
  REQUIRE(unpacked.exit_code == 0);
  std::vector<std::string> lines = lines_of(unpacked.out),
                           plain_lines = lines_of(test::read_file(plain));
  REQUIRE(lines.size() == 3);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    nlohmann::json line = nlohmann::json::parse(lines[i]),
                   same = nlohmann::json::parse(plain_lines[i]);
    CHECK(line["schema"] == "nvsmi-agent.snapshot/1");
    line.erase("timestamp");
    same.erase("timestamp");
    for (nlohmann::json *sample : {&line, &same})
      for (nlohmann::json &gpu : (*sample)["gpus"])
        gpu.erase("counters");
    CHECK(line == same);
  }
  CHECK(bytes.size() * 5 < test::read_file(plain).size());
  // Appending: more members after the first three.
  REQUIRE(test::run_shell(json_watch(packed, "--count 2")).exit_code == 0);
  CHECK(lines_of(test::run_shell("gzip -dc " + quote(packed)).out).size() == 5);
  // report reads it as it reads the plain one.
  Run report = test::run_shell(quote(AGENT_BIN) + " report --format json " + quote(packed));
  INFO(report.err);
  REQUIRE(report.exit_code == 0);
  CHECK(nlohmann::json::parse(report.out)["rows"]["read"] == 40);
  // A plain log at a .gz name, or a compressed one at a plain name, is not mixed into.
  std::string wrong = setup.folder + "/wrong.jsonl.gz";
  test::write_file(wrong, test::read_file(plain));
  Run refused = test::run_shell(json_watch(wrong, "--count 1"));
  CHECK(refused.exit_code == 7);
  CHECK_THAT(refused.err, Catch::Contains("holds something other than gzip-compressed "
                                          "nvsmi-agent snapshots"));
  CHECK(test::read_file(wrong) == test::read_file(plain));
  std::string other = setup.folder + "/other.jsonl";
  test::write_file(other, bytes);
  CHECK(test::run_shell(json_watch(other, "--count 1")).exit_code == 7);
  CHECK(test::read_file(other) == bytes);
}

TEST_CASE("report reads a JSON log of plain lines (as every agent wrote before) and the same log "
          "compressed alike; broken gzip is a bad row, not the end") {
  Setup setup;
  std::string plain = test::fixture_path("logs/shared-3users.jsonl");
  std::string packed = setup.folder + "/shared.jsonl.gz";
  REQUIRE(test::run_shell("gzip -c " + quote(plain) + " >" + quote(packed)).exit_code == 0);
  auto report = [](const std::string &log) {
    Run run = test::run_shell(quote(AGENT_BIN) + " report --format json " + quote(log));
    INFO(run.err);
    REQUIRE(run.exit_code == 0);
    nlohmann::json document = nlohmann::json::parse(run.out);
    document.erase("files");
    return document;
  };
  nlohmann::json from_plain = report(plain);
  CHECK(from_plain["rows"]["read"] == 76);
  CHECK(report(packed) == from_plain);
  // Whole members, then garbage: what came before is read, the break is said.
  std::string broken = setup.folder + "/broken.jsonl.gz";
  REQUIRE(test::run_shell("head -10 " + quote(plain) + " | gzip -c >" + quote(broken) +
                          " && head -c 64 /dev/zero | tr '\\0' x >>" + quote(broken))
              .exit_code == 0);
  Run run = test::run_shell(quote(AGENT_BIN) + " report --format json " + quote(broken));
  INFO(run.out << run.err);
  REQUIRE(run.exit_code == 0);
  nlohmann::json document = nlohmann::json::parse(run.out);
  CHECK(document["rows"]["read"] == 41);
  CHECK_THAT(document.dump(), Catch::Contains("gzip data broken at byte"));
  // A bomb (2 MB of one line in 2 KB) meets the line cap as it is decompressed, as a plain file.
  std::string bomb = setup.folder + "/bomb.jsonl.gz";
  // A JSON line's start, then a run of 'x': it passes the check that a log starts as one, and
  // meets the line cap.
  REQUIRE(test::run_shell("{ printf '{'; head -c 2000000 /dev/zero | tr '\\0' x; } | gzip -c >" +
                          quote(bomb))
              .exit_code == 0);
  CHECK(std::filesystem::file_size(bomb) < 10000);
  Run bombed = test::run_shell(quote(AGENT_BIN) + " report " + quote(bomb));
  CHECK(bombed.exit_code == 6);
  CHECK_THAT(bombed.err, Catch::Contains("line longer than"));
}

TEST_CASE("watch: both logs rotate at 100 MB by default, five kept") {
  Setup setup;
  // A log a few bytes short of the default size (sparse: no disk is written for it) rotates at
  // the next sample, without --csv-max-bytes or --json-max-bytes.
  std::string json = setup.folder + "/gpus.jsonl", csv = setup.log;
  REQUIRE(test::run_shell(json_watch(json, "--count 1")).exit_code == 0);
  Run first = setup.watch("", "--interval 0.1 --count 1 --csv-log " + quote(csv));
  REQUIRE(first.exit_code == 0);
  for (const std::string &path : {json, csv})
    REQUIRE(test::run_shell("truncate -s 99999000 " + quote(path)).exit_code == 0);
  REQUIRE(test::run_shell(json_watch(json, "--count 1")).exit_code == 0);
  Run second = setup.watch("", "--interval 0.1 --count 1 --csv-log " + quote(csv));
  INFO(second.err);
  REQUIRE(second.exit_code == 0);
  for (const std::string &path : {json, csv}) {
    INFO(path);
    CHECK(std::filesystem::file_size(path + ".1") == 99999000);
    CHECK(std::filesystem::file_size(path) < 100000);
  }
  CHECK(json_lines(json).size() == 1);
  Run help = test::run_shell(quote(AGENT_BIN) + " watch --help");
  CHECK_THAT(help.out, Catch::Contains("100000000"));
}

TEST_CASE("watch: a log path that is a symbolic link or a FIFO is refused; rotation renames over "
          "a planted link without following it") {
  Setup setup;
  // In a folder others may write, a link at the path would send the log where it points.
  std::string target = setup.folder + "/target", link = setup.folder + "/gpus.jsonl";
  test::write_file(target, "");
  REQUIRE(::symlink(target.c_str(), link.c_str()) == 0);
  Run linked = test::run_shell(json_watch(link, "--count 1"));
  CHECK(linked.exit_code == 7);
  CHECK_THAT(linked.err, Catch::Contains("JSON log " + link + " is a symbolic link"));
  std::string dangling = setup.folder + "/dangling.csv";
  REQUIRE(::symlink((setup.folder + "/made-elsewhere").c_str(), dangling.c_str()) == 0);
  Run csv = setup.watch("", "--interval 0.1 --count 1 --csv-log " + quote(dangling));
  CHECK(csv.exit_code == 7);
  CHECK_THAT(csv.err, Catch::Contains("CSV log " + dangling + " is a symbolic link"));
  CHECK_FALSE(std::filesystem::exists(setup.folder + "/made-elsewhere"));
  std::string fifo = setup.folder + "/fifo.jsonl";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  Run piped = test::run_shell("timeout 60 " + json_watch(fifo, "--count 1"));
  CHECK(piped.exit_code == 7);
  CHECK_THAT(piped.err, Catch::Contains("is not a regular file"));
  // A link planted where the rotated file goes is replaced, never written through.
  std::string log = setup.folder + "/rotated.jsonl";
  REQUIRE(test::run_shell(json_watch(log, "--count 1")).exit_code == 0);
  REQUIRE(::symlink(target.c_str(), (log + ".1").c_str()) == 0);
  REQUIRE(test::run_shell(json_watch(log, "--count 1 --json-max-bytes 100")).exit_code == 0);
  CHECK(test::read_file(target).empty());
  CHECK_FALSE(std::filesystem::is_symlink(log + ".1"));
  CHECK(json_lines(log + ".1").size() == 1);
}

TEST_CASE("watch: --json-max-bytes rotates the JSON log into whole lines") {
  Setup setup;
  std::string log = setup.folder + "/gpu-log.jsonl";
  REQUIRE(test::run_shell(json_watch(log, "--count 1")).exit_code == 0);
  std::size_t line = test::read_file(log).size();
  ::unlink(log.c_str());
  // Room for two lines a file: six samples fill the log and both rotated files.
  std::uint64_t max = line * 2 + line / 2;
  Run run = test::run_shell(
      json_watch(log, "--count 6 --json-keep 2 --json-max-bytes " + std::to_string(max)));
  INFO(run.err);
  CHECK(run.exit_code == 0);
  for (const std::string &path : {log, log + ".1", log + ".2"}) {
    INFO(path);
    CHECK(test::read_file(path).size() <= max);
    CHECK(json_lines(path).size() == 2);
  }
  CHECK(test::run_shell("test -e " + quote(log + ".3")).exit_code != 0);
}

TEST_CASE("watch: a second watch on the same JSON log is refused; SIGHUP reopens it") {
  Setup setup;
  std::string log = setup.folder + "/gpu-log.jsonl";
  test::Background first(json_watch(log, ""));
  auto lines_in = [&](const std::string &path) {
    try {
      return lines_of(test::read_file(path)).size();
    } catch (const std::exception &) {
      return std::size_t(0);
    }
  };
  REQUIRE(test::wait_until([&] { return lines_in(log) >= 1; }));
  Run second = test::run_shell("timeout 60 " + json_watch(log, "--count 1"));
  CHECK(second.exit_code == 7);
  CHECK_THAT(second.err, Catch::Contains("JSON log " + log + " is in use by another process (pid " +
                                         std::to_string(first.pid()) + ")"));
  // logrotate's way: move the file, then SIGHUP; the agent starts a new one at the path.
  REQUIRE(::rename(log.c_str(), (log + ".old").c_str()) == 0);
  ::kill(first.pid(), SIGHUP);
  REQUIRE(test::wait_until([&] { return lines_in(log) >= 1; }));
  ::kill(first.pid(), SIGTERM);
  CHECK(first.wait() == 0);
  INFO(first.err());
  CHECK_THAT(first.err(), Catch::Contains("reopened " + log));
  CHECK(json_lines(log + ".old").size() >= 1);
  CHECK(json_lines(log).size() >= 1);
}

TEST_CASE("watch: a JSON log that holds something else is refused, not mixed") {
  Setup setup;
  std::string log = setup.folder + "/notes.txt";
  test::write_file(log, "time,gpu,temp\n1,0,40\n");
  Run run = test::run_shell(json_watch(log, "--count 1"));
  CHECK(run.exit_code == 7);
  CHECK_THAT(run.err, Catch::Contains("JSON log " + log +
                                      " holds something other than "
                                      "nvsmi-agent snapshots"));
  CHECK(test::read_file(log) == "time,gpu,temp\n1,0,40\n");
  CHECK(test::run_shell(json_watch(log, "--count 1 --csv-log " + quote(log))).exit_code == 2);
}

TEST_CASE("watch: --csv-max-bytes rotates, each file with its header") {
  Setup setup;
  Run run = setup.watch("", "--interval 0.05 --count 6 --csv-max-bytes 3000 --csv-keep 2 "
                            "--csv-log " +
                                quote(setup.log));
  CHECK(run.exit_code == 0);
  for (const std::string &path : {setup.log, setup.log + ".1", setup.log + ".2"}) {
    INFO(path);
    std::string content = test::read_file(path);
    CHECK(content.size() <= 3000);
    CHECK(content.rfind("timestamp,index,", 0) == 0);
  }
  CHECK(test::run_shell("test -e " + quote(setup.log + ".3")).exit_code != 0);
}

TEST_CASE("watch at a terminal says once what it watches, where and how to stop; a pipe not") {
  Setup setup;
  Run piped = setup.watch("", "--interval 0.1 --count 2");
  CHECK(piped.exit_code == 0);
  CHECK(piped.err.find("watching") == std::string::npos);
  CHECK(piped.err.find("Ctrl-C") == std::string::npos);
  if (!test::installed("tmux")) {
    WARN("tmux is not installed (scripts/install-deps installs it): watch at a terminal is not "
         "tested");
    return;
  }
  test::Tmux tmux(200, 24);
  // stdout away, so that the screen holds stderr alone. The tmux server's end is a SIGHUP, which
  // watch takes to reopen its logs: the timeout ends it should the test fail before Ctrl-C.
  tmux.run("FAKE_NVSMI_STATE=" + quote(setup.folder + "/state") + " timeout --foreground 120 " +
           quote(AGENT_BIN) + " watch --nvidia-smi " +
           quote(std::string(SCRIPTS_DIR) + "/fake-nvidia-smi") +
           " --interval 0.5 --format json --csv-log " + quote(setup.log) +
           " >/dev/null; echo watch-exit=$?");
  const std::string line =
      "watching 8 GPUs every 0.5 s, writing json to stdout, CSV to " + setup.log + "; Ctrl-C stops";
  REQUIRE(tmux.wait_for(line));
  // Once, not once per sample.
  REQUIRE(test::wait_until([&] { return lines_of(test::read_file(setup.log)).size() > 3 * 8; }));
  std::string screen = tmux.screen();
  INFO(screen);
  CHECK(screen.find(line) == screen.rfind(line));
  tmux.key("C-c");
  CHECK(tmux.wait_for("watch-exit=0"));
}

TEST_CASE("watch with a log and no stdout says at a terminal what it logs, how often, for how "
          "long and how to stop, and at its end what reads the log") {
  Setup setup;
  std::string log = setup.folder + "/gpus.jsonl.gz";
  if (!test::installed("tmux")) {
    WARN("tmux is not installed (scripts/install-deps installs it): not tested");
    return;
  }
  test::Tmux tmux(200, 24);
  // stdout away: nothing reads it, as with `watch --count 60 --json-log F > /dev/null`.
  tmux.run("timeout --foreground 120 " + quote(AGENT_BIN) + " watch --interval 0.5 --fixture " +
           quote(test::fixture_path("xml/h100-8gpu-v12.xml")) + " --count 4 --json-log " +
           quote(log) + " >/dev/null; echo watch-exit=$?");
  REQUIRE(tmux.wait_for("watch-exit=0"));
  std::string screen = tmux.screen();
  INFO(screen);
  CHECK(screen.find("watch-exit=0") != std::string::npos);
  CHECK(screen.find("watching 8 GPUs every 0.5 s for 4 samples (about 2 s), writing JSON to " +
                    log + "; Ctrl-C stops") != std::string::npos);
  CHECK(screen.find("wrote 4 samples; `nvsmi-agent report " + log + "` sums them up") !=
        std::string::npos);
  // A pipe gets neither: a script's stderr stays its own.
  Run piped = test::run_shell(json_watch(setup.folder + "/piped.jsonl", "--count 2"));
  CHECK(piped.exit_code == 0);
  CHECK(piped.err.find("watching") == std::string::npos);
  CHECK(piped.err.find("wrote") == std::string::npos);
}

TEST_CASE("watch: a child that exits is restarted with backoff; the log keeps whole rows") {
  Setup setup;
  Run run = setup.watch("FAKE_NVSMI_EXIT_AFTER=2",
                        "--interval 0.1 --count 3 --csv-log " + quote(setup.log));
  CHECK(run.exit_code == 0);
  CHECK_THAT(run.err, Catch::Contains("exited with code 9: NVIDIA-SMI has failed"));
  CHECK_THAT(run.err, Catch::Contains("restarting nvidia-smi in 1 s"));
  CHECK(setup.spawns() == 2);
  check_whole_rows(test::read_file(setup.log), 24);
}

TEST_CASE("watch: failed starts back off 1 s, then 2 s") {
  Setup setup;
  Run run = setup.watch("FAKE_NVSMI_FAIL_SPAWNS=2", "--interval 0.1 --count 1");
  CHECK(run.exit_code == 0);
  CHECK_THAT(run.err, Catch::Contains("restarting nvidia-smi in 1 s") &&
                          Catch::Contains("restarting nvidia-smi in 2 s"));
  CHECK(setup.spawns() == 3);
  CHECK(lines_of(run.out).size() == 1);
}

TEST_CASE("watch: a stalled child that ignores SIGTERM is killed and replaced") {
  Setup setup;
  Run run = setup.watch("FAKE_NVSMI_HANG_AFTER=1 FAKE_NVSMI_IGNORE_TERM=1",
                        "--interval 0.1 --count 2 --stall-timeout 15");
  CHECK(run.exit_code == 0);
  // The stall clock starts at the spawn, so a start slower than the timeout counts as a stall too
  // and is one spawn more: at 3 s, a 2-core machine at load 17 started the stand-in 8 times. At
  // 15 s only the hang after the first sample stalls.
  CHECK_THAT(run.err, Catch::Contains("no complete sample for 15 s"));
  CHECK_THAT(run.err, Catch::Contains("killed by signal 9"));
  CHECK(setup.spawns() == 2);
  CHECK_FALSE(leftovers());
}

TEST_CASE("watch: half a document is dropped, garbage is skipped, the stream goes on") {
  Setup setup;
  Run half = setup.watch("FAKE_NVSMI_HALF_AFTER=1", "--source xml --interval 0.1 --count 2");
  CHECK(half.exit_code == 0);
  CHECK_THAT(half.err, Catch::Contains("partial sample dropped"));
  for (const std::string &line : lines_of(half.out))
    CHECK_THAT(line, Catch::StartsWith(legacy_8gpu_start));
  Run garbage = setup.watch("FAKE_NVSMI_GARBAGE_AFTER=1", "--interval 0.1 --count 3");
  CHECK(garbage.exit_code == 0);
  CHECK_THAT(garbage.err, Catch::Contains("sample skipped"));
  CHECK(lines_of(garbage.out).size() == 3);
}

TEST_CASE("watch: SIGTERM stops the child and exits 0 promptly; SIGHUP reopens the log") {
  Setup setup;
  // Waits for the log to hold its header and a row: the agent has started, or has reopened it.
  std::string has_a_row = test::shell_wait_until("[ $(wc -l <" + quote(setup.log) + ") -ge 2 ]");
  std::string script = "FAKE_NVSMI_ARGS=" + quote(setup.args) + " " + quote(AGENT_BIN) +
                       " watch --interval 0.1 --nvidia-smi " +
                       quote(std::string(SCRIPTS_DIR) + "/fake-nvidia-smi") + " --csv-log " +
                       quote(setup.log) + " & agent=$!; " + has_a_row + "; mv " + quote(setup.log) +
                       " " + quote(setup.log + ".old") + "; kill -HUP $agent; " + has_a_row +
                       "; start=$(date +%s%N); kill -TERM $agent; wait $agent; "
                       "code=$?; echo $code $(( ($(date +%s%N) - start) / 1000000 ))";
  Run run = test::run_shell(script);
  INFO(run.err);
  std::vector<std::string> words = lines_of(run.out);
  REQUIRE(words.size() == 1);
  CHECK(words[0].rfind("0 ", 0) == 0); // exit code 0
  CHECK(std::stoi(words[0].substr(2)) < promptly_ms);
  CHECK_THAT(run.err, Catch::Contains("reopened"));
  check_whole_rows(test::read_file(setup.log + ".old"),
                   lines_of(test::read_file(setup.log + ".old")).size() - 1);
  CHECK(test::read_file(setup.log).rfind("timestamp,index,", 0) == 0);
  CHECK_FALSE(leftovers());
  CHECK_FALSE(fake_left());
}

TEST_CASE("watch: a reader that goes away ends the run cleanly") {
  Setup setup;
  std::string status = quote(setup.folder + "/status");
  Run run = test::run_shell("{ FAKE_NVSMI_ARGS=" + quote(setup.args) + " " + quote(AGENT_BIN) +
                            " watch --interval 0.05 --nvidia-smi " +
                            quote(std::string(SCRIPTS_DIR) + "/fake-nvidia-smi") + "; echo $? >" +
                            status + "; } | head -n 2 >/dev/null; cat " + status);
  CHECK(run.out == "0\n");
  CHECK_FALSE(fake_left());
}

TEST_CASE("snapshot --lock: a second run leaves at once with code 8") {
  Setup setup;
  std::string lock = quote(setup.folder + "/snapshot.lock");
  std::string agent = quote(AGENT_BIN);
  Run run = test::run_shell("FAKE_NVSMI_MODE=hang FAKE_NVSMI_ARGS=" + quote(setup.args) + " " +
                            agent + " snapshot --timeout 60 --lock " + lock + " --nvidia-smi " +
                            quote(std::string(SCRIPTS_DIR) + "/fake-nvidia-smi") + " & first=$!; " +
                            // It holds the lock once it has started nvidia-smi.
                            test::shell_wait_until("test -s " + quote(setup.args)) + "; " + agent +
                            " snapshot --lock " + lock + " --fixture " +
                            quote(test::fixture_path("xml/a100-mig-v12.xml")) +
                            "; echo second=$?; kill $first; wait");
  CHECK_THAT(run.out, Catch::Contains("second=8"));
  CHECK_THAT(run.err, Catch::Contains("another run holds"));
  // The first run, terminated, took its hung nvidia-smi down with it.
  CHECK_THAT(run.err, Catch::Contains("interrupted by Terminated"));
  CHECK_FALSE(leftovers());
  // Once the holder is gone, the lock is free again.
  CHECK(test::run_agent("snapshot --lock " + lock + " --fixture " +
                        quote(test::fixture_path("xml/a100-mig-v12.xml")))
            .exit_code == 0);
}

TEST_CASE("watch: --fields adds query fields to json and to the CSV log") {
  Setup setup;
  Run run = setup.watch("", "--interval 0.1 --count 2 --format json --csv-log " + quote(setup.log) +
                                " --fields clocks.max.sm,serial,temperature.gpu,serial");
  INFO(run.err);
  CHECK(run.exit_code == 0);
  // A field already read, and a repeated one, are asked for once.
  CHECK_THAT(test::read_file(setup.args),
             Catch::Contains(",clocks_throttle_reasons.active,clocks.max.sm,serial --format="));
  std::vector<std::string> lines = lines_of(run.out);
  REQUIRE(lines.size() == 2);
  auto gpu = nlohmann::json::parse(lines[1])["gpus"][7];
  CHECK(gpu["clocks.max.sm"] == "1980");
  CHECK(gpu["serial"].is_null()); // nvidia-smi said [N/A]
  std::vector<std::string> log = lines_of(test::read_file(setup.log));
  REQUIRE(log.size() == 17);
  CHECK_THAT(log[0],
             Catch::Contains(",host.network.send [B/s],pcie.replay_counter,activity.sm [%]"));
  CHECK_THAT(log[0],
             Catch::EndsWith(",nvlink.bandwidth_bytes_per_second [B/s],clocks.max.sm,serial"));
  CHECK_THAT(log[16], Catch::EndsWith(",1980,"));
}

TEST_CASE("watch: a field nvidia-smi refuses ends the run with its message, not a restart loop") {
  Setup setup;
  Run run = setup.watch("", "--interval 0.1 --count 2 --fields clocks.max.sm,no.such.field");
  CHECK(run.exit_code == 4);
  CHECK(run.out.empty());
  CHECK_THAT(run.err, Catch::Contains("Field \"no.such.field\" is not a valid field to query."));
  CHECK(setup.spawns() == 1);
  CHECK(setup.watch("", "--fields 'a;b'").exit_code == 2);
  CHECK(setup.watch("", "--source xml --fields serial").exit_code == 2);
}

TEST_CASE("watch: a reader that stops reading stdout holds up neither the log nor a stop") {
  Setup setup;
  std::string fifo = quote(setup.folder + "/stdout");
  std::string log = quote(setup.log);
  // `sleep` holds the pipe's read end and never reads: the pipe fills after a few samples.
  std::string script =
      "mkfifo " + fifo + "; sleep 300 <" + fifo +
      " & reader=$!; FAKE_NVSMI_ARGS=" + quote(setup.args) + " " + quote(AGENT_BIN) +
      " watch --format json --interval 0.05 " + "--nvidia-smi " +
      quote(std::string(SCRIPTS_DIR) + "/fake-nvidia-smi") + " --csv-log " + log + " >" + fifo +
      " & agent=$!; " + test::shell_wait_until("[ $(wc -l <" + log + ") -gt 240 ]") +
      "; before=$(wc -l <" + log + "); " +
      test::shell_wait_until("[ $(wc -l <" + log + ") -gt $((before + 40)) ]") +
      "; after=$(wc -l <" + log + "); start=$(date +%s%N); kill -TERM $agent; wait $agent; " +
      "code=$?; echo $code $(( ($(date +%s%N) - start) / 1000000 )) $before $after; " +
      "kill $reader";
  Run run = test::run_shell(script);
  INFO(run.out << run.err);
  std::istringstream words(run.out);
  int code = -1, stop_ms = 0, before = 0, after = 0;
  words >> code >> stop_ms >> before >> after;
  CHECK(code == 0);
  CHECK(stop_ms < promptly_ms);
  // 30 samples of JSON are far more than a pipe holds; the log went on all the same.
  CHECK(before > 8 * 30);
  CHECK(after > before + 8 * 5);
  CHECK_FALSE(fake_left());
}

namespace {

// A shell loop that waits (at most 60 s) until `condition` holds.
std::string wait_until(const std::string &condition) {
  return "i=0; until " + condition + " || [ $i -ge 1200 ]; do sleep 0.05; i=$((i+1)); done; ";
}

std::string fake_smi() { return quote(std::string(SCRIPTS_DIR) + "/fake-nvidia-smi"); }

// The stand-in's 8-GPU sample (noheader, nounits), its lines changed by `change`.
std::string csv_sample(const std::function<std::string(const std::string &)> &change) {
  std::string out;
  for (const std::string &line :
       lines_of(test::read_file(test::fixture_path("csv/h100-8gpu-noheader-nounits.csv"))))
    if (!line.empty())
      out += change(line) + "\n";
  return out;
}

bool have_berlin() {
  if (test::run_shell("test -e /usr/share/zoneinfo/Europe/Berlin").exit_code == 0)
    return true;
  WARN("no tzdata for Europe/Berlin: skipped");
  return false;
}

} // namespace

TEST_CASE("watch: a second watch on the same CSV log is refused and names the first") {
  Setup setup;
  std::string agent = quote(AGENT_BIN), log = quote(setup.log);
  // No kernel log: where /dev/kmsg is forbidden, the third watch would say so on stderr too.
  std::string watch = agent + " watch --interval 0.1 --kernel-log none --nvidia-smi " + fake_smi() +
                      " --csv-log " + log;
  Run run = test::run_shell(
      watch + " 2>/dev/null & first=$!; " +
      wait_until("[ \"$(cat " + log + " 2>/dev/null | wc -l)\" -ge 17 ]") + "timeout 60 " + watch +
      " --count 1; echo \"second=$? first=$first\"; kill -TERM $first; wait $first; " +
      "echo \"first ended=$?\"; timeout 60 " + watch + " --count 1; echo \"then=$?\"");
  INFO(run.out << run.err);
  std::vector<std::string> lines = lines_of(run.out);
  REQUIRE(lines.size() == 3);
  REQUIRE(lines[0].rfind("second=7 first=", 0) == 0);
  std::string first_pid = lines[0].substr(std::string("second=7 first=").size());
  CHECK_THAT(run.err, Catch::Contains("CSV log " + setup.log +
                                      " is in use by another process (pid " + first_pid + ")"));
  CHECK(std::count(run.err.begin(), run.err.end(), '\n') == 1);
  CHECK(lines[1] == "first ended=0");
  CHECK(lines[2] == "then=0"); // the lock went with the first watch
  std::string content = test::read_file(setup.log);
  std::size_t rows = lines_of(content).size() - 1;
  CHECK(rows % 8 == 0);
  check_whole_rows(content, rows);
}

TEST_CASE("watch: a log that reaches the file size limit keeps whole rows; exit 7") {
  if (!test::installed("prlimit")) {
    WARN("prlimit not installed: skipped");
    return;
  }
  Setup setup;
  // A full disk, without root: writes past RLIMIT_FSIZE fail with EFBIG once SIGXFSZ (which
  // would kill the agent mid-row) is ignored. A sample of 8 GPUs is about 1000 bytes.
  Run run = test::run_shell("prlimit --fsize=3000 timeout 60 " + quote(AGENT_BIN) +
                            " watch --interval 0.05 --nvidia-smi " + fake_smi() + " --csv-log " +
                            quote(setup.log));
  INFO(run.err);
  CHECK(run.exit_code == 7);
  CHECK_THAT(run.err, Catch::Contains("cannot write CSV log " + setup.log + ": File too large"));
  std::string content = test::read_file(setup.log);
  CHECK(content.size() <= 3000);
  std::size_t rows = lines_of(content).size() - 1;
  CHECK(rows >= 8);
  CHECK(rows % 8 == 0);
  check_whole_rows(content, rows);
}

TEST_CASE("watch: a log whose header is longer than 4096 bytes is appended to") {
  Setup setup;
  std::string fields, cells;
  for (int i = 0; i < 200; ++i) {
    fields += (i ? "," : "") + std::string("custom.field.with.a.long.name.") + std::to_string(i);
    cells += ", " + std::to_string(i);
  }
  std::string fixture = setup.folder + "/wide.csv";
  test::write_file(fixture, csv_sample([&](const std::string &line) { return line + cells; }));
  std::string watch = quote(AGENT_BIN) + " watch --count 1 --interval 0.05 --fixture " +
                      quote(fixture) + " --fields " + fields + " --csv-log " + quote(setup.log);
  Run first = test::run_shell(watch);
  INFO(first.err);
  REQUIRE(first.exit_code == 0);
  Run second = test::run_shell(watch);
  INFO(second.err);
  CHECK(second.exit_code == 0);
  std::vector<std::string> lines = lines_of(test::read_file(setup.log));
  REQUIRE(lines.size() == 17);
  CHECK(lines[0].size() > 4096);
  CHECK_THAT(lines[0], Catch::EndsWith(",custom.field.with.a.long.name.199"));
  CHECK_THAT(lines[16], Catch::EndsWith(",198,199"));
}

TEST_CASE("watch: the hour that repeats in autumn gets its own offset each time (TZ set)") {
  if (!have_berlin())
    return;
  Setup setup;
  // nvidia-smi's local times through the night Europe/Berlin goes from +02:00 back to +01:00 at
  // 03:00, one GPU a sample; replayed in order, the repeated 02:xx are told apart by it.
  const char *times[] = {"02:40:00.000", "02:50:00.000", "02:59:59.500",
                         "02:00:00.500", "02:10:00.000", "03:00:00.000"};
  std::string first_gpu =
      lines_of(test::read_file(test::fixture_path("csv/h100-8gpu-noheader-nounits.csv")))[0];
  std::string rest = first_gpu.substr(first_gpu.find(','));
  rest.replace(rest.find(", 8, 0, "), 8, ", 1, 0, ");
  std::string recording;
  for (const char *time : times)
    recording += std::string("2024/10/27 ") + time + rest + "\n";
  std::string fixture = setup.folder + "/fall-back.csv";
  test::write_file(fixture, recording);

  Run run = test::run_shell("TZ=Europe/Berlin " + quote(AGENT_BIN) +
                            " watch --count 6 --interval 0.05 --fixture " + quote(fixture) +
                            " --csv-log " + quote(setup.log));
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  std::vector<std::string> lines = lines_of(test::read_file(setup.log));
  REQUIRE(lines.size() == 7);
  const char *expected[] = {"2024-10-27T02:40:00.000+02:00", "2024-10-27T02:50:00.000+02:00",
                            "2024-10-27T02:59:59.500+02:00", "2024-10-27T02:00:00.500+01:00",
                            "2024-10-27T02:10:00.000+01:00", "2024-10-27T03:00:00.000+01:00"};
  for (int i = 0; i < 6; ++i)
    CHECK(lines[static_cast<std::size_t>(i + 1)].substr(0, 29) == expected[i]);

  Run report = test::run_shell("TZ=Europe/Berlin " + quote(AGENT_BIN) + " report --format json " +
                               quote(setup.log));
  INFO(report.err);
  REQUIRE(report.exit_code == 0);
  auto figures = nlohmann::json::parse(report.out);
  CHECK(figures["rows"]["used"] == 6);
  CHECK(figures["rows"]["bad"]["out_of_order"] == 0);
}

TEST_CASE("local offsets: a live sample in the repeated hour takes the pass it was received in") {
  if (!have_berlin())
    return;
  struct Zone {
    std::string saved;
    bool had = false;
    Zone() {
      if (const char *tz = std::getenv("TZ")) {
        had = true;
        saved = tz;
      }
      setenv("TZ", "Europe/Berlin", 1);
      tzset();
    }
    ~Zone() {
      had ? setenv("TZ", saved.c_str(), 1) : unsetenv("TZ");
      tzset();
    }
  } zone;
  using Clock = std::chrono::system_clock;
  auto offset_in = [](nvsmi::LocalOffsets &offsets, int month, int day, int hour, int minute,
                      Clock::time_point received) {
    nvsmi::Snapshot snapshot;
    nvsmi::Timestamp t;
    t.year = 2024;
    t.month = month;
    t.day = day;
    t.hour = hour;
    t.minute = minute;
    snapshot.timestamp = t;
    offsets.attach(snapshot, received);
    return snapshot.timestamp->utc_offset_minutes;
  };
  auto offset = [&](int month, int day, int hour, int minute, Clock::time_point received) {
    nvsmi::LocalOffsets alone;
    return offset_in(alone, month, day, hour, minute, received);
  };
  auto utc = [](int month, int day, int hour, int minute) {
    std::tm fields{};
    fields.tm_year = 124;
    fields.tm_mon = month - 1;
    fields.tm_mday = day;
    fields.tm_hour = hour;
    fields.tm_min = minute;
    return Clock::from_time_t(timegm(&fields));
  };
  Clock::time_point long_after = utc(12, 1, 0, 0);
  // 02:30 on 27 October is 00:30 UTC (+02:00), and again 01:30 UTC (+01:00).
  CHECK(offset(10, 27, 2, 30, utc(10, 27, 0, 30) + std::chrono::seconds(2)) == 120);
  CHECK(offset(10, 27, 2, 30, utc(10, 27, 1, 30) + std::chrono::seconds(2)) == 60);
  CHECK(offset(10, 27, 2, 30, utc(10, 27, 1, 25)) == 60);
  CHECK(offset(10, 27, 2, 30, long_after) == 120); // a recording on its own: the first pass
  // A recording replayed long after: a repeated time is not put before the sample it follows.
  nvsmi::LocalOffsets replay;
  CHECK(offset_in(replay, 10, 27, 2, 50, long_after) == 120);
  CHECK(offset_in(replay, 10, 27, 2, 10, long_after) == 60);
  CHECK(offset_in(replay, 10, 27, 2, 20, long_after) == 60);
  // No doubt outside the repeated hour; a time the clocks skip takes the offset before.
  CHECK(offset(10, 27, 1, 59, long_after) == 120);
  CHECK(offset(10, 27, 3, 0, long_after) == 60);
  CHECK(offset(7, 1, 12, 0, long_after) == 120);
  CHECK(offset(3, 31, 2, 30, long_after) == 60);
}

namespace {

std::string fake_path() { return std::string(SCRIPTS_DIR) + "/fake-nvidia-smi"; }

// `watch` on the stand-in in the background, with FAKE_NVSMI_* settings in `environment`.
std::unique_ptr<test::Background> watch_in_background(const Setup &setup,
                                                      const std::string &environment,
                                                      const std::string &arguments) {
  return std::make_unique<test::Background>(
      environment + " FAKE_NVSMI_STATE=" + quote(setup.folder + "/state") + " " + quote(AGENT_BIN) +
      " watch --nvidia-smi " + quote(fake_path()) + " " + arguments);
}

std::size_t count_of(const std::string &text, const std::string &part) {
  std::size_t count = 0;
  for (std::size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1))
    ++count;
  return count;
}

// Whether `peak` (KiB) is within `bound`; always, where the agent is built with the sanitizers:
// their shadow memory and quarantine make its RSS no measure of what it holds.
bool peak_within(long peak, long bound) {
  if (NVSMI_SANITIZED) {
    WARN("built with sanitizers: peak RSS " << peak << " KiB not held to " << bound << " KiB");
    return true;
  }
  return peak < bound;
}

// The agent's peak resident memory in KiB (VmHWM), 0 when it cannot be read.
long peak_rss_kib(int pid) {
  std::string status;
  try {
    status = test::read_file("/proc/" + std::to_string(pid) + "/status");
  } catch (const std::exception &) {
    return 0;
  }
  std::size_t at = status.find("VmHWM:");
  return at == std::string::npos ? 0 : std::stol(status.substr(at + 6));
}

bool state_is_done(const Setup &setup) {
  try {
    return test::read_file(setup.folder + "/state") == "done\n";
  } catch (const std::exception &) {
    return false;
  }
}

} // namespace

TEST_CASE("watch: nvidia-smi missing or not executable at the start is exit 3, not a retry loop") {
  Setup setup;
  test::write_file(setup.folder + "/nvidia-smi", "#!/bin/sh\n");
  struct Case {
    std::string command, message;
  } cases[] = {
      {"timeout 30 env PATH=/nonexistent " + quote(AGENT_BIN) + " watch",
       "nvidia-smi: not found on PATH"},
      {"timeout 30 " + quote(AGENT_BIN) + " watch --nvidia-smi /nonexistent/nvidia-smi",
       "cannot run /nonexistent/nvidia-smi: No such file or directory"},
      {"timeout 30 " + quote(AGENT_BIN) + " watch --source xml --nvidia-smi " +
           quote(setup.folder + "/nvidia-smi"),
       "Permission denied"},
  };
  for (const Case &c : cases) {
    Run run = test::run_shell(c.command);
    INFO(c.command << "\n" << run.err);
    CHECK(run.exit_code == 3);
    CHECK(run.out.empty());
    CHECK_THAT(run.err, Catch::StartsWith("nvsmi-agent: ") && Catch::Contains(c.message));
    CHECK(count_of(run.err, "\n") == 1);
  }
}

TEST_CASE("watch: a start that fails after a good one is retried and leaves no zombie") {
  Setup setup;
  // A wrapper that the stand-in makes unexecutable when it exits: every later start fails to exec.
  std::string wrapper = setup.folder + "/nvidia-smi";
  test::write_file(wrapper, "#!/bin/sh\nexec " + quote(fake_path()) + " \"$@\"\n");
  REQUIRE(test::run_shell("chmod +x " + quote(wrapper)).exit_code == 0);
  test::Background agent("FAKE_NVSMI_EXIT_AFTER=1 FAKE_NVSMI_CHMOD_ON_EXIT=" + quote(wrapper) +
                         " " + quote(AGENT_BIN) + " watch --interval 0.1 --nvidia-smi " +
                         quote(wrapper));
  // Both the retries and the good start's sample: the first sample may wait for the process
  // streams, whose starts fail as well and are said in the same words.
  REQUIRE(test::wait_until(
      [&] {
        return count_of(agent.err(), "cannot run " + wrapper + ": Permission denied") >= 2 &&
               count_of(agent.out(), "\n") >= 1;
      },
      std::chrono::seconds(60)));
  INFO(agent.err());
  CHECK(count_of(agent.out(), "\n") == 1); // the good start's sample, and no other
  CHECK(test::wait_until([&] { return test::zombie_children(agent.pid()).empty(); },
                         std::chrono::seconds(10)));
  ::kill(agent.pid(), SIGTERM);
  CHECK(agent.wait() == 0);
}

TEST_CASE("watch: nvidia-smi replaced right after the GPU query started: processes retried") {
  // Issue 23, item 16: the process streams' first start lost the race and watch exited 3.
  Setup setup;
  std::string wrapper = test::nvidia_smi_upgraded_after_start(setup.folder);
  std::string denied = "cannot run " + wrapper + ": Permission denied";
  test::Background agent(test::upgraded_nvidia_smi_environment(setup.folder) + quote(AGENT_BIN) +
                         " watch --format json --interval 0.2 --pmon on --nvidia-smi " +
                         quote(wrapper));
  // Each failed start is said once, with the retry that follows it, backing off (pmon's too:
  // --pmon on runs it without waiting for a process).
  auto retried = [&] {
    return agent.err_contains("restarting nvidia-smi --query-compute-apps in 2 s") &&
           agent.err_contains("restarting nvidia-smi pmon in 2 s");
  };
  test::wait_until([&] { return retried() || agent.exit_code(); });
  INFO(agent.err());
  REQUIRE_FALSE(agent.exit_code()); // was exit 3
  REQUIRE(retried());
  CHECK(agent.err_contains(denied));
  CHECK(count_of(agent.err(), denied) <= count_of(agent.err(), "restarting nvidia-smi "));
  // GPU samples go on meanwhile, without processes.
  std::size_t before = count_of(agent.out(), "\n");
  REQUIRE(test::wait_until([&] { return count_of(agent.out(), "\n") >= before + 3; }));
  CHECK_THAT(agent.out(), Catch::Contains("\"processes\":null"));
  // nvidia-smi works again: the process streams come back.
  REQUIRE(test::run_shell("chmod +x " + quote(wrapper)).exit_code == 0);
  std::string pid = "\"pid\":" + std::to_string(::getpid());
  CHECK(test::wait_until([&] {
    return agent.out().find(pid) != std::string::npos &&
           test::run_shell("grep -q ^pmon " + quote(setup.folder + "/process-calls")).exit_code ==
               0;
  }));
  ::kill(agent.pid(), SIGTERM);
  CHECK(agent.wait() == 0);
  CHECK_FALSE(fake_left());
}

TEST_CASE("watch: a stop signal other than SIGINT or SIGTERM takes the process group down, 128+N") {
  Setup setup;
  std::string marker = test::unique_marker();
  auto agent = watch_in_background(setup, "FAKE_NVSMI_MARKER=" + marker, "--interval 0.1");
  REQUIRE(test::wait_until(
      [&] { return !test::processes_named(marker).empty() && !agent->out().empty(); }));
  ::kill(agent->pid(), SIGUSR1);
  CHECK(agent->wait() == 128 + SIGUSR1);
  CHECK_THAT(agent->err(), Catch::Contains("stopping on User defined signal 1"));
  CHECK(test::wait_until([&] { return test::processes_named(marker).empty(); }));
}

TEST_CASE("watch: SIGKILL of the agent still takes nvidia-smi down (parent-death signal)") {
  Setup setup;
  std::string pid_file = setup.folder + "/nvidia-smi.pid";
  auto agent =
      watch_in_background(setup, "FAKE_NVSMI_PID_FILE=" + quote(pid_file), "--interval 0.1");
  int child = 0;
  REQUIRE(test::wait_until(
      [&] { return (child = test::pid_in_file(pid_file)) > 0 && !agent->out().empty(); }));
  ::kill(agent->pid(), SIGKILL);
  CHECK(agent->wait() == 128 + SIGKILL);
  CHECK(test::wait_until([&] { return test::process_ended(child); }));
  ::kill(-child, SIGKILL); // what it started, if anything, is out of the kernel's reach
}

TEST_CASE("watch: a CSV sample that never completes is dropped, and memory stays bounded") {
  Setup setup;
  // 500000 rows of a sample of 999999999 GPUs, with a rising index: about 150 MB of text.
  auto agent = watch_in_background(setup, "FAKE_NVSMI_MODE=endless-count",
                                   "--interval 1 --stall-timeout 600");
  REQUIRE(test::wait_until([&] { return state_is_done(setup); }, test::patience * 5));
  long peak = peak_rss_kib(agent->pid());
  INFO(agent->err().substr(0, 4000));
  CHECK(peak > 0);
  CHECK(peak_within(peak, 64 * 1024));
  CHECK_THAT(agent->err(), Catch::Contains("`count` 999999999 is past the 256 GPUs a sample may "
                                           "have; sample dropped"));
  CHECK(agent->out().empty());
  ::kill(agent->pid(), SIGTERM);
  CHECK(agent->wait() == 0);
}

TEST_CASE("watch: an XML document that never ends is skipped at its cap, memory stays bounded") {
  Setup setup;
  // About 100 MB of one document, three times the 32 MiB cap.
  auto agent = watch_in_background(setup, "FAKE_NVSMI_MODE=endless-xml",
                                   "--source xml --interval 1 --stall-timeout 600");
  REQUIRE(test::wait_until([&] { return state_is_done(setup); }, test::patience * 5));
  long peak = peak_rss_kib(agent->pid());
  INFO(agent->err());
  CHECK(peak > 0);
  CHECK(peak_within(peak, 128 * 1024)); // the cap, a copy of it while it grows, the program
  CHECK_THAT(agent->err(), Catch::Contains("XML document longer than 33554432 bytes, skipped"));
  ::kill(agent->pid(), SIGTERM);
  CHECK(agent->wait() == 0);
}

TEST_CASE("watch: a chatty nvidia-smi costs a few log lines, then a count") {
  Setup setup;
  // 200000 lines of garbage on stdout, then exit 9 (and again after each restart). Under the
  // sanitizers 20000, still a thousand times the 20 shown: there the 200000 took 4 s on an idle
  // 2-core machine, over 120 s on a busy one and over 300 s beside three other tests.
  auto agent = watch_in_background(setup,
                                   NVSMI_SANITIZED ? "FAKE_NVSMI_MODE=chatty FAKE_NVSMI_LINES=20000"
                                                   : "FAKE_NVSMI_MODE=chatty",
                                   "--interval 1 --stall-timeout 600");
  // Five times patience: the log's bound below is per window, so time costs nothing.
  REQUIRE(test::wait_until([&] { return agent->err_contains("exited with code 9"); },
                           test::patience * 5));
  ::kill(agent->pid(), SIGTERM);
  CHECK(agent->wait() == 0);
  std::string err = agent->err();
  INFO(err);
  // 20 lines and the notice per 30 s: a slow machine (a sanitizer build on a busy one) takes
  // more than one window for the 200000 lines, and each window may show its 20.
  std::size_t windows =
      count_of(err, "more than 20 messages in 30 s: the rest are counted, not shown");
  CHECK(windows >= 1);
  CHECK(err.size() < 16 * 1024 * std::max<std::size_t>(windows, 1));
  CHECK(count_of(err, "nvidia-smi printed: garbage line") <= 20 * windows);
  CHECK_THAT(err, Catch::Contains(" messages suppressed\n"));
  CHECK_THAT(err, Catch::Contains("nvidia-smi exited with code 9: garbage line"));
}

TEST_CASE("watch --source xml: nvidia-smi's message on stdout is in the exit line") {
  Setup setup;
  auto agent = watch_in_background(setup, "FAKE_NVSMI_MODE=exit9", "--source xml --interval 0.1");
  REQUIRE(test::wait_until([&] { return agent->err_contains("exited with code 9"); }));
  ::kill(agent->pid(), SIGTERM);
  CHECK(agent->wait() == 0);
  std::string err = agent->err();
  INFO(err);
  CHECK_THAT(err, Catch::Contains("nvidia-smi exited with code 9: NVIDIA-SMI has failed because "
                                  "it couldn't communicate with the NVIDIA driver."));
  CHECK(err.find("partial sample dropped") == std::string::npos);
}

TEST_CASE(
    "watch: a looping nvidia-smi that exits with no sample is named by its first stderr line") {
  for (const char *source : {"csv", "xml"}) {
    INFO(source);
    Setup setup;
    auto agent = watch_in_background(setup, "FAKE_NVSMI_MODE=no-library",
                                     std::string("--interval 0.1 --source ") + source);
    REQUIRE(test::wait_until([&] { return agent->err_contains("restarting nvidia-smi in 1 s"); }));
    ::kill(agent->pid(), SIGTERM);
    CHECK(agent->wait() == 0);
    std::string err = agent->err();
    INFO(err);
    // The cause, not the hint the stand-in wrote after it; then the restart as for any exit.
    CHECK_THAT(err, Catch::Contains("nvidia-smi exited with code 12 before its first sample; on "
                                    "stderr: NVIDIA-SMI couldn't find libnvidia-ml.so library in "
                                    "your system.\n"));
    CHECK(err.find("Please also try") == std::string::npos);
  }
}

// valgrind keeps SIGRTMAX for itself and refuses a handler for it (EINVAL); the agent refused to
// start over that ("internal error: add: Invalid argument"), so watch could not be profiled with
// callgrind (docs/PERFORMANCE.md, "watch against Netdata's collector"). A recording, because
// Debian 12's valgrind (3.19) does not know pidfd_open, with which Boost.Process waits for
// nvidia-smi. Nulgrind, the tool that only runs the program: about 2 s for two samples.
TEST_CASE("watch: runs under valgrind, which keeps a realtime signal for itself") {
  if (NVSMI_SANITIZED || !test::installed("valgrind")) {
    WARN("valgrind not installed, or the agent built with sanitizers: skipped");
    return;
  }
  Run run =
      test::run_shell("timeout 120 valgrind --tool=none --quiet " + quote(AGENT_BIN) +
                      " watch --fixture " + quote(test::fixture_path("xml/h100-8gpu-v12.xml")) +
                      " --format json --interval 0.1 --count 2");
  INFO(run.err);
  CHECK(run.exit_code == 0);
  CHECK(run.err.find("internal error") == std::string::npos);
  CHECK(lines_of(run.out).size() == 2);
}

} // namespace test_watch
