// End to end: `nvsmi-agent watch` against the stand-in nvidia-smi's loop and its failures.
#include "process_support.hpp"
#include "support.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
#include <sstream>

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
                           " FAKE_NVSMI_STATE=" + quote(folder + "/state") + " timeout 60 " +
                           quote(AGENT_BIN) + " watch --nvidia-smi " +
                           quote(std::string(SCRIPTS_DIR) + "/fake-nvidia-smi") + " " + arguments);
  }
  int spawns() const {
    std::string calls = test::read_file(args);
    return static_cast<int>(std::count(calls.begin(), calls.end(), '\n'));
  }
};

std::vector<std::string> lines_of(const std::string &text) {
  std::vector<std::string> lines;
  for (std::size_t start = 0; start < text.size();) {
    std::size_t end = text.find('\n', start);
    lines.push_back(text.substr(start, end - start));
    start = end == std::string::npos ? text.size() : end + 1;
  }
  return lines;
}

// Every line after the header is a whole row of the csv format: 13 cells.
void check_whole_rows(const std::string &log, std::size_t expected_rows) {
  std::vector<std::string> lines = lines_of(log);
  REQUIRE(lines.size() == expected_rows + 1);
  CHECK(lines[0].rfind("timestamp,index,uuid,name,", 0) == 0);
  for (std::size_t i = 1; i < lines.size(); ++i) {
    INFO(lines[i]);
    CHECK(std::count(lines[i].begin(), lines[i].end(), ',') == 12);
  }
  CHECK(log.back() == '\n');
}

bool leftovers() { return test::run_shell("pgrep -f 'sleep 360[0]'").exit_code == 0; }

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
                        "--interval 0.1 --count 2 --stall-timeout 0.5");
  CHECK(run.exit_code == 0);
  CHECK_THAT(run.err, Catch::Contains("no complete sample for 0.5 s"));
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
  std::string script =
      "FAKE_NVSMI_ARGS=" + quote(setup.args) + " " + quote(AGENT_BIN) +
      " watch --interval 0.1 --nvidia-smi " + quote(std::string(SCRIPTS_DIR) + "/fake-nvidia-smi") +
      " --csv-log " + quote(setup.log) + " & agent=$!; sleep 1; mv " + quote(setup.log) + " " +
      quote(setup.log + ".old") +
      "; kill -HUP $agent; sleep 0.5; start=$(date +%s%N); kill -TERM $agent; wait $agent; "
      "code=$?; echo $code $(( ($(date +%s%N) - start) / 1000000 ))";
  Run run = test::run_shell(script);
  INFO(run.err);
  std::vector<std::string> words = lines_of(run.out);
  REQUIRE(words.size() == 1);
  CHECK(words[0].rfind("0 ", 0) == 0);         // exit code 0
  CHECK(std::stoi(words[0].substr(2)) < 2000); // within 2 s
  CHECK_THAT(run.err, Catch::Contains("reopened"));
  check_whole_rows(test::read_file(setup.log + ".old"),
                   lines_of(test::read_file(setup.log + ".old")).size() - 1);
  CHECK(test::read_file(setup.log).rfind("timestamp,index,", 0) == 0);
  CHECK_FALSE(leftovers());
  CHECK(test::run_shell("pgrep -f fake-nvidia-sm[i]").exit_code == 1);
}

TEST_CASE("watch: a reader that goes away ends the run cleanly") {
  Setup setup;
  std::string status = quote(setup.folder + "/status");
  Run run = test::run_shell("{ FAKE_NVSMI_ARGS=" + quote(setup.args) + " " + quote(AGENT_BIN) +
                            " watch --interval 0.05 --nvidia-smi " +
                            quote(std::string(SCRIPTS_DIR) + "/fake-nvidia-smi") + "; echo $? >" +
                            status + "; } | head -n 2 >/dev/null; cat " + status);
  CHECK(run.out == "0\n");
  CHECK(test::run_shell("pgrep -f fake-nvidia-sm[i]").exit_code == 1);
}

TEST_CASE("snapshot --lock: a second run leaves at once with code 8") {
  Setup setup;
  std::string lock = quote(setup.folder + "/snapshot.lock");
  std::string agent = quote(AGENT_BIN);
  Run run = test::run_shell(
      "FAKE_NVSMI_MODE=hang " + agent + " snapshot --timeout 5 --lock " + lock + " --nvidia-smi " +
      quote(std::string(SCRIPTS_DIR) + "/fake-nvidia-smi") + " & first=$!; sleep 0.5; " + agent +
      " snapshot --lock " + lock + " --fixture " +
      quote(test::fixture_path("xml/a100-mig-v12.xml")) + "; echo second=$?; kill $first; wait");
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
             Catch::Contains(",clocks.current.video,clocks.max.sm,serial --format="));
  std::vector<std::string> lines = lines_of(run.out);
  REQUIRE(lines.size() == 2);
  auto gpu = nlohmann::json::parse(lines[1])["gpus"][7];
  CHECK(gpu["clocks.max.sm"] == "1980");
  CHECK(gpu["serial"].is_null()); // nvidia-smi said [N/A]
  std::vector<std::string> log = lines_of(test::read_file(setup.log));
  REQUIRE(log.size() == 17);
  CHECK_THAT(log[0], Catch::EndsWith(",power.draw [W],clocks.max.sm,serial"));
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
      "mkfifo " + fifo + "; sleep 30 <" + fifo +
      " & reader=$!; FAKE_NVSMI_ARGS=" + quote(setup.args) + " " + quote(AGENT_BIN) +
      " watch --format json --interval 0.05 " + "--nvidia-smi " +
      quote(std::string(SCRIPTS_DIR) + "/fake-nvidia-smi") + " --csv-log " + log + " >" + fifo +
      " & agent=$!; sleep 2.5; before=$(wc -l <" + log + "); sleep 1; " + "after=$(wc -l <" + log +
      "); start=$(date +%s%N); kill -TERM $agent; wait $agent; " +
      "code=$?; echo $code $(( ($(date +%s%N) - start) / 1000000 )) $before $after; " +
      "kill $reader";
  Run run = test::run_shell(script);
  INFO(run.out << run.err);
  std::istringstream words(run.out);
  int code = -1, stop_ms = 0, before = 0, after = 0;
  words >> code >> stop_ms >> before >> after;
  CHECK(code == 0);
  CHECK(stop_ms < 2000);
  // 2.5 s of JSON at 20 Hz is far more than a pipe holds; the log went on all the same.
  CHECK(before > 8 * 30);
  CHECK(after > before + 8 * 5);
  CHECK(test::run_shell("pgrep -f fake-nvidia-sm[i]").exit_code == 1);
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
  REQUIRE(test::eventually(
      [&] { return count_of(agent.err(), "cannot run " + wrapper + ": Permission denied") >= 2; },
      std::chrono::seconds(60)));
  INFO(agent.err());
  CHECK(count_of(agent.out(), "\n") == 1); // the good start's sample
  CHECK(test::eventually([&] { return test::zombie_children(agent.pid()).empty(); },
                         std::chrono::seconds(10)));
  ::kill(agent.pid(), SIGTERM);
  CHECK(agent.wait() == 0);
}

TEST_CASE("watch: a stop signal other than SIGINT or SIGTERM takes the process group down, 128+N") {
  Setup setup;
  std::string marker = test::unique_marker();
  auto agent = watch_in_background(setup, "FAKE_NVSMI_MARKER=" + marker, "--interval 0.1");
  REQUIRE(test::eventually(
      [&] { return !test::processes_named(marker).empty() && !agent->out().empty(); }));
  ::kill(agent->pid(), SIGUSR1);
  CHECK(agent->wait() == 128 + SIGUSR1);
  CHECK_THAT(agent->err(), Catch::Contains("stopping on User defined signal 1"));
  CHECK(test::eventually([&] { return test::processes_named(marker).empty(); }));
}

TEST_CASE("watch: SIGKILL of the agent still takes nvidia-smi down (parent-death signal)") {
  Setup setup;
  std::string pid_file = setup.folder + "/nvidia-smi.pid";
  auto agent =
      watch_in_background(setup, "FAKE_NVSMI_PID_FILE=" + quote(pid_file), "--interval 0.1");
  int child = 0;
  REQUIRE(test::eventually([&] {
    try {
      child = std::stoi(test::read_file(pid_file));
    } catch (const std::exception &) {
      return false;
    }
    return !agent->out().empty();
  }));
  ::kill(agent->pid(), SIGKILL);
  CHECK(agent->wait() == 128 + SIGKILL);
  CHECK(test::eventually([&] { return test::process_ended(child); }));
  ::kill(-child, SIGKILL); // what it started, if anything, is out of the kernel's reach
}

TEST_CASE("watch: a CSV sample that never completes is dropped, and memory stays bounded") {
  Setup setup;
  // 500000 rows of a sample of 999999999 GPUs, with a rising index: about 150 MB of text.
  auto agent = watch_in_background(setup, "FAKE_NVSMI_MODE=endless-count",
                                   "--interval 1 --stall-timeout 600");
  REQUIRE(test::eventually([&] { return state_is_done(setup); }, std::chrono::seconds(180)));
  long peak = peak_rss_kib(agent->pid());
  INFO(agent->err().substr(0, 4000));
  CHECK(peak > 0);
  CHECK(peak < 64 * 1024);
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
  REQUIRE(test::eventually([&] { return state_is_done(setup); }, std::chrono::seconds(180)));
  long peak = peak_rss_kib(agent->pid());
  INFO(agent->err());
  CHECK(peak > 0);
  CHECK(peak < 128 * 1024); // the cap, a copy of it while it grows, and the program
  CHECK_THAT(agent->err(), Catch::Contains("XML document longer than 33554432 bytes, skipped"));
  ::kill(agent->pid(), SIGTERM);
  CHECK(agent->wait() == 0);
}

TEST_CASE("watch: a chatty nvidia-smi costs a few log lines, then a count") {
  Setup setup;
  // 200000 lines of garbage on stdout, then exit 9 (and again after each restart).
  auto agent =
      watch_in_background(setup, "FAKE_NVSMI_MODE=chatty", "--interval 1 --stall-timeout 600");
  REQUIRE(test::eventually([&] { return agent->err_contains("exited with code 9"); },
                           std::chrono::seconds(120)));
  ::kill(agent->pid(), SIGTERM);
  CHECK(agent->wait() == 0);
  std::string err = agent->err();
  INFO(err);
  CHECK(err.size() < 16 * 1024);
  CHECK(count_of(err, "nvidia-smi printed: garbage line") <= 20);
  CHECK(count_of(err, "more than 20 messages in 30 s: the rest are counted, not shown") >= 1);
  CHECK_THAT(err, Catch::Contains(" messages suppressed\n"));
  CHECK_THAT(err, Catch::Contains("nvidia-smi exited with code 9: garbage line"));
}

TEST_CASE("watch --source xml: nvidia-smi's message on stdout is in the exit line") {
  Setup setup;
  auto agent = watch_in_background(setup, "FAKE_NVSMI_MODE=exit9", "--source xml --interval 0.1");
  REQUIRE(test::eventually([&] { return agent->err_contains("exited with code 9"); }));
  ::kill(agent->pid(), SIGTERM);
  CHECK(agent->wait() == 0);
  std::string err = agent->err();
  INFO(err);
  CHECK_THAT(err, Catch::Contains("nvidia-smi exited with code 9: NVIDIA-SMI has failed because "
                                  "it couldn't communicate with the NVIDIA driver."));
  CHECK(err.find("partial sample dropped") == std::string::npos);
}
