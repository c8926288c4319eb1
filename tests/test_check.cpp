// check's judgement on hand-made snapshots: every threshold's warning and critical crossing, the
// defaults, the summary's order, the perfdata's exact form, and hostile text kept to one line.
#include "commands/check_command.hpp"
#include "formats/prometheus_metrics.hpp"

#include "nvsmi/utf8.hpp"

#include "snapshot_builders.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <ctime>

namespace test_check {

using namespace nvsmi;

namespace {

using Clock = std::chrono::system_clock;

// `seconds` after test::sample_time() (2024-03-12 14:03:27 UTC), when every hand-made sample
// is taken.
Clock::time_point seconds_after_taken(double seconds) {
  std::tm fields{};
  fields.tm_year = 124, fields.tm_mon = 2, fields.tm_mday = 12;
  fields.tm_hour = 14, fields.tm_min = 3, fields.tm_sec = 27;
  return Clock::from_time_t(::timegm(&fields)) +
         std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

const Clock::time_point now = seconds_after_taken(5);

CheckResult judge(const Snapshot &snapshot, const CheckThresholds &thresholds = {},
                  const std::vector<std::string> &gpus = {}, Clock::time_point at = now) {
  return judge_snapshot(snapshot, thresholds, gpus, at);
}

XidTally tally(const std::string &device, int xid, std::int64_t count,
               const std::string &message = "") {
  XidTally t;
  t.pci_device = device;
  t.xid = xid;
  t.count = count;
  t.last_message = message;
  return t;
}

KernelLog readable_log(std::vector<XidTally> xids) {
  KernelLog log;
  log.source = "/dev/kmsg";
  log.readable = true;
  log.xids = std::move(xids);
  return log;
}

} // namespace

TEST_CASE("check: healthy GPUs are OK, with the perfdata exactly as Nagios reads it") {
  Snapshot snapshot = test::quiet_machine(2);
  snapshot.gpus[1].temperature_c = 51;
  snapshot.gpus[1].memory_used_mib = 20000;
  CheckResult result = judge(snapshot);
  CHECK(result.status == CheckStatus::ok);
  CHECK(result.summary == "2 of 2 OK");
  CHECK(result.perfdata ==
        "'gpus'=2;;;0 'gpus_ok'=2;;;0;2 'lost'=0;;1;0 'failing'=0;;1;0 'age'=5s;;;0 "
        "'gpu0_temp'=40C;85;90 'gpu0_mem'=1.25%;;;0;100 'gpu0_ecc_uncorr'=0;;1;0 "
        "'gpu0_ecc_corr'=0;;;0 "
        "'gpu1_temp'=51C;85;90 'gpu1_mem'=25%;;;0;100 'gpu1_ecc_uncorr'=0;;1;0 "
        "'gpu1_ecc_corr'=0;;;0");
  CHECK(plugin_line(result) == "GPU OK - 2 of 2 OK | " + result.perfdata + "\n");
}

TEST_CASE("check: the exit codes are Nagios's, and CRITICAL outranks WARNING outranks UNKNOWN") {
  CHECK(nagios_exit_code(CheckStatus::ok) == 0);
  CHECK(nagios_exit_code(CheckStatus::warning) == 1);
  CHECK(nagios_exit_code(CheckStatus::critical) == 2);
  CHECK(nagios_exit_code(CheckStatus::unknown) == 3);
  CHECK(worse(CheckStatus::ok, CheckStatus::unknown) == CheckStatus::unknown);
  CHECK(worse(CheckStatus::unknown, CheckStatus::warning) == CheckStatus::warning);
  CHECK(worse(CheckStatus::critical, CheckStatus::unknown) == CheckStatus::critical);
  CHECK(worse(CheckStatus::warning, CheckStatus::critical) == CheckStatus::critical);
}

TEST_CASE("check: temperature warns at 85 C and is critical at the GPU's slowdown threshold") {
  Snapshot snapshot = test::quiet_machine(1);
  snapshot.gpus[0].temperature_c = 84;
  CHECK(judge(snapshot).status == CheckStatus::ok);
  snapshot.gpus[0].temperature_c = 85;
  CheckResult warm = judge(snapshot);
  CHECK(warm.status == CheckStatus::warning);
  CHECK(warm.summary == "GPU 0 (0000:19:00.0): temperature 85 C, warning at 85 C; 0 of 1 OK");

  // Without the driver's slowdown threshold, 90 C.
  snapshot.gpus[0].temperature_c = 89;
  CHECK(judge(snapshot).status == CheckStatus::warning);
  snapshot.gpus[0].temperature_c = 90;
  CHECK(judge(snapshot).summary ==
        "GPU 0 (0000:19:00.0): temperature 90 C, critical at 90 C; 0 of 1 OK");

  snapshot.gpus[0].health.temperature_slowdown_c = 87;
  snapshot.gpus[0].temperature_c = 86;
  CHECK(judge(snapshot).status == CheckStatus::warning);
  snapshot.gpus[0].temperature_c = 87;
  CheckResult hot = judge(snapshot);
  CHECK(hot.status == CheckStatus::critical);
  CHECK(hot.summary == "GPU 0 (0000:19:00.0): temperature 87 C, critical at 87 C (its slowdown "
                       "threshold); 0 of 1 OK");
  CHECK_THAT(hot.perfdata, Catch::Contains("'gpu0_temp'=87C;85;87"));

  CheckThresholds fixed;
  fixed.temperature_critical_at_slowdown = false;
  fixed.temperature_c = {80, 95};
  CHECK(judge(snapshot, fixed).status == CheckStatus::warning);
  snapshot.gpus[0].temperature_c = 95;
  CHECK(judge(snapshot, fixed).summary ==
        "GPU 0 (0000:19:00.0): temperature 95 C, critical at 95 C; 0 of 1 OK");
  CHECK_THAT(judge(snapshot, fixed).perfdata, Catch::Contains("'gpu0_temp'=95C;80;95 "));

  CheckThresholds off;
  off.temperature_critical_at_slowdown = false;
  off.temperature_c = {};
  CHECK(judge(snapshot, off).status == CheckStatus::ok);
  CHECK_THAT(judge(snapshot, off).perfdata, Catch::Contains("'gpu0_temp'=95C "));
}

TEST_CASE("check: an unknown temperature is UNKNOWN, never OK by zero") {
  Snapshot snapshot = test::quiet_machine(2);
  snapshot.gpus[1].temperature_c.reset();
  CheckResult result = judge(snapshot);
  CHECK(result.status == CheckStatus::unknown);
  CHECK(result.summary == "GPU 1 (0000:29:00.0): temperature unknown; 1 of 2 OK");
  CHECK_THAT(result.perfdata, Catch::Contains("'gpu1_temp'=U;85;90 "));

  // A real problem elsewhere is not hidden behind it.
  snapshot.gpus[0].temperature_c = 86;
  CHECK(judge(snapshot).status == CheckStatus::warning);
}

TEST_CASE("check: a GPU with no readings at all is UNKNOWN, said once") {
  Snapshot snapshot = test::quiet_machine(2);
  Gpu blank;
  blank.index = 1;
  blank.pci_bus_id = "00000000:29:00.0";
  snapshot.gpus[1] = blank;
  CheckResult result = judge(snapshot);
  CHECK(result.status == CheckStatus::unknown);
  CHECK(result.summary == "GPU 1 (0000:29:00.0): no readings; 1 of 2 OK");
  CHECK_THAT(result.perfdata, Catch::Contains("'gpu1_temp'=U;85;90 'gpu1_mem'=U;;;0;100"));
}

TEST_CASE("check: memory use is judged only when a threshold is given") {
  Snapshot snapshot = test::quiet_machine(1);
  snapshot.gpus[0].memory_used_mib = 79000; // 98.75%
  CHECK(judge(snapshot).status == CheckStatus::ok);
  CheckThresholds memory;
  memory.memory_percent = {90, 99};
  CheckResult full = judge(snapshot, memory);
  CHECK(full.status == CheckStatus::warning);
  CHECK(full.summary == "GPU 0 (0000:19:00.0): memory 98.75% used, warning at 90%; 0 of 1 OK");
  CHECK_THAT(full.perfdata, Catch::Contains("'gpu0_mem'=98.75%;90;99;0;100"));
  snapshot.gpus[0].memory_used_mib = 79200;
  CHECK(judge(snapshot, memory).status == CheckStatus::critical);
  snapshot.gpus[0].memory_total_mib.reset();
  CHECK(judge(snapshot, memory).summary == "GPU 0 (0000:19:00.0): memory use unknown; 0 of 1 OK");
  CHECK(judge(snapshot).status == CheckStatus::ok);
}

TEST_CASE("check: one uncorrectable ECC error is CRITICAL; corrected ones only when asked") {
  Snapshot snapshot = test::quiet_machine(1);
  snapshot.gpus[0].health.ecc_volatile.corrected = 500;
  CHECK(judge(snapshot).status == CheckStatus::ok);
  CheckThresholds corrected;
  corrected.ecc_corrected = {100, 1000};
  CHECK(judge(snapshot, corrected).summary ==
        "GPU 0 (0000:19:00.0): 500 correctable ECC errors; 0 of 1 OK");
  CHECK(judge(snapshot, corrected).status == CheckStatus::warning);
  snapshot.gpus[0].health.ecc_volatile.corrected = 1000;
  CHECK(judge(snapshot, corrected).status == CheckStatus::critical);

  snapshot = test::quiet_machine(1);
  snapshot.gpus[0].health.ecc_volatile.uncorrected = 1;
  CheckResult one = judge(snapshot);
  CHECK(one.status == CheckStatus::critical);
  CHECK(one.summary == "GPU 0 (0000:19:00.0): 1 uncorrectable ECC error; 0 of 1 OK");
  CHECK_THAT(one.perfdata, Catch::Contains("'gpu0_ecc_uncorr'=1;;1;0"));
  CheckThresholds lenient;
  lenient.ecc_uncorrected = {1, 5};
  lenient.failing = {1, std::nullopt};
  CHECK(judge(snapshot, lenient).status == CheckStatus::warning);

  // A GPU without ECC (GeForce) reports no counts: nothing to judge, nothing invented.
  snapshot.gpus[0].health.ecc_volatile = {};
  CheckResult none = judge(snapshot);
  CHECK(none.status == CheckStatus::ok);
  CHECK_THAT(none.perfdata, !Catch::Contains("ecc"));
}

TEST_CASE("check: lost and failing GPUs come first, with their bus id, then the count") {
  Snapshot snapshot = test::quiet_machine(8);
  Gpu lost;
  lost.index = 4;
  lost.pci_bus_id = "00000000:3B:00.0";
  lost.lost_reason = "GPU is lost";
  snapshot.gpus[4] = lost;
  snapshot.gpus[3].health.ecc_volatile.uncorrected = 2;
  snapshot.gpus[3].health.remapped_rows_pending = true;
  snapshot.gpus[6].temperature_c = 86;
  CheckResult result = judge(snapshot);
  CHECK(result.status == CheckStatus::critical);
  CHECK(result.summary == "GPU 3 (0000:49:00.0): 2 uncorrectable ECC errors, row remap pending; "
                          "GPU 4 (0000:3B:00.0): lost: GPU is lost; "
                          "GPU 6 (0000:79:00.0): temperature 86 C, warning at 85 C; 5 of 8 OK");
  CHECK_THAT(result.perfdata, Catch::StartsWith("'gpus'=8;;;0 'gpus_ok'=5;;;0;8 'lost'=1;;1;0 "
                                                "'failing'=1;;1;0 "));
  // A lost GPU has no readings to graph, and none are made up for it.
  CHECK_THAT(result.perfdata, !Catch::Contains("gpu4_"));

  CheckThresholds two_lost;
  two_lost.lost = {1, 2};
  snapshot.gpus[3] = test::quiet_gpu(3);
  snapshot.gpus[6] = test::quiet_gpu(6);
  CHECK(judge(snapshot, two_lost).status == CheckStatus::warning);
  snapshot.gpus[5] = lost;
  snapshot.gpus[5].index = 5;
  CHECK(judge(snapshot, two_lost).status == CheckStatus::critical);
}

TEST_CASE("check: a GPU whose health asks for a reset is failing, CRITICAL by default") {
  Snapshot snapshot = test::quiet_machine(2);
  snapshot.gpus[0].health.recovery_action = "None";
  CHECK(judge(snapshot).status == CheckStatus::ok);
  snapshot.gpus[0].health.recovery_action = "GPU Reset Required";
  snapshot.gpus[0].health.retired_pages_pending = true;
  snapshot.gpus[1].health.remapped_rows_failure = true;
  CheckResult result = judge(snapshot);
  CHECK(result.status == CheckStatus::critical);
  CHECK(result.summary == "GPU 0 (0000:19:00.0): page retirement pending, recovery action: GPU "
                          "Reset Required; GPU 1 (0000:29:00.0): row remapping failed; 0 of 2 OK");
  CHECK_THAT(result.perfdata, Catch::Contains("'failing'=2;;1;0"));
  CheckThresholds warn;
  warn.failing = {1, 3};
  CHECK(judge(snapshot, warn).status == CheckStatus::warning);
}

// check once counted as failing only the GPUs with a reset, remap or retirement pending, where the
// state (and so /metrics, the table and top) also calls failing a GPU with uncorrectable ECC
// errors: an ECC-only GPU was 'failing'=0 here and state="failing" there.
TEST_CASE("check: failing means what the GPU's state and /metrics call failing") {
  Snapshot snapshot = test::quiet_machine(3);
  snapshot.gpus[0].health.ecc_volatile.uncorrected = 2;
  snapshot.gpus[2].health.retired_pages_pending = true;
  CheckResult result = judge(snapshot);
  CHECK_THAT(result.perfdata, Catch::Contains("'failing'=2;;1;0"));
  std::string metrics = format_snapshot_metrics(snapshot);
  for (int index : {0, 2}) {
    INFO("GPU " << index);
    std::string prefix = "nvsmi_gpu_state{gpu=\"" + std::to_string(index) + "\"";
    std::size_t at = metrics.find(prefix);
    REQUIRE(at != std::string::npos);
    std::string failing_line;
    for (std::size_t line = at; line != std::string::npos; line = metrics.find(prefix, line + 1)) {
      std::string text = metrics.substr(line, metrics.find('\n', line) - line);
      if (text.find("state=\"failing\"") != std::string::npos)
        failing_line = text;
    }
    CHECK_THAT(failing_line, Catch::EndsWith(" 1"));
  }
  // The failing thresholds judge the ECC-only GPU as they judge the others.
  CheckThresholds warn_only;
  warn_only.ecc_uncorrected = {1, std::nullopt};
  warn_only.failing = {1, std::nullopt};
  CHECK(judge(snapshot, warn_only).status == CheckStatus::warning);
  warn_only.failing = {std::nullopt, 1};
  CHECK(judge(snapshot, warn_only).status == CheckStatus::critical);
  CHECK(judge(snapshot, warn_only).summary ==
        "GPU 0 (0000:19:00.0): 2 uncorrectable ECC errors; GPU 2 (0000:39:00.0): page retirement "
        "pending; 1 of 3 OK");
}

TEST_CASE("check: Xids that need a reset are CRITICAL, others a WARNING, per GPU") {
  Snapshot snapshot = test::quiet_machine(3);
  snapshot.kernel_log = readable_log({});
  CheckResult clean = judge(snapshot);
  CHECK(clean.status == CheckStatus::ok);
  CHECK_THAT(clean.perfdata, Catch::Contains("'xid_reset'=0;;1;0 'xid_other'=0;1;;0"));

  snapshot.kernel_log = readable_log({tally("0000:19:00", 79, 1, "GPU has fallen off the bus."),
                                      tally("0000:29:00", 13, 2), tally("0000:29:00", 31, 1)});
  CheckResult result = judge(snapshot);
  CHECK(result.status == CheckStatus::critical);
  CHECK(result.summary ==
        "GPU 0 (0000:19:00.0): Xid 79 x1 needs a reset: GPU has fallen off the bus.; "
        "GPU 1 (0000:29:00.0): Xid 13 x2, 31 x1; 1 of 3 OK");
  CHECK_THAT(result.perfdata, Catch::Contains("'xid_reset'=1;;1;0 'xid_other'=3;1;;0"));

  CheckThresholds lenient;
  lenient.xid_other = {5, 10};
  lenient.xid_reset = {1, 2};
  CHECK(judge(snapshot, lenient).status == CheckStatus::warning);
  CHECK(judge(snapshot, lenient).summary ==
        "GPU 0 (0000:19:00.0): Xid 79 x1 needs a reset: GPU has fallen off the bus.; 2 of 3 OK");
}

TEST_CASE("check: Xids of a device nvidia-smi no longer lists are counted, but not with --gpu") {
  Snapshot snapshot = test::quiet_machine(2);
  snapshot.kernel_log = readable_log({tally("0000:c1:00", 79, 3, "GPU has fallen off the bus.")});
  CheckResult result = judge(snapshot);
  CHECK(result.status == CheckStatus::critical);
  CHECK(result.summary == "PCI 0000:c1:00 (not listed): Xid 79 x3 needs a reset: GPU has fallen "
                          "off the bus.; 2 of 2 OK");
  CHECK(judge(snapshot, {}, {"0"}).status == CheckStatus::ok);
}

TEST_CASE("check: an unreadable kernel log is a WARNING by default, else a note") {
  Snapshot snapshot = test::quiet_machine(1);
  KernelLog log;
  log.source = "/dev/kmsg";
  log.error = "Permission denied";
  snapshot.kernel_log = log;
  CheckResult result = judge(snapshot);
  CHECK(result.status == CheckStatus::warning);
  CHECK(result.summary == "Xid unknown: kernel log not readable (Permission denied); 1 of 1 OK");
  CHECK_THAT(result.perfdata, !Catch::Contains("xid"));
  CheckThresholds note;
  note.kernel_log_unreadable_warns = false;
  CHECK(judge(snapshot, note).status == CheckStatus::ok);
  CHECK(judge(snapshot, note).summary == result.summary);
  // No kernel log asked for (a recording without --kernel-log): nothing said.
  snapshot.kernel_log.reset();
  CHECK(judge(snapshot).summary == "1 of 1 OK");
}

TEST_CASE("check: the sample's age against the stale thresholds") {
  Snapshot snapshot = test::quiet_machine(1);
  CheckThresholds stale;
  stale.age_seconds = {300, 900};
  CHECK(judge(snapshot, stale, {}, seconds_after_taken(299)).status == CheckStatus::ok);
  CheckResult old = judge(snapshot, stale, {}, seconds_after_taken(300));
  CHECK(old.status == CheckStatus::warning);
  CHECK(old.summary == "sample is 5 min old, warning at 5 min; 1 of 1 OK");
  CheckResult older = judge(snapshot, stale, {}, seconds_after_taken(2 * 86400 + 3 * 3600 + 7));
  CHECK(older.status == CheckStatus::critical);
  CHECK(older.summary == "sample is 2 d 3 h old, critical at 15 min; 1 of 1 OK");
  CHECK_THAT(older.perfdata, Catch::Contains("'age'=183607s;300;900;0"));
  // The sample's offset counts: 14:03:27 at +01:00 is an hour earlier than at UTC.
  snapshot.timestamp->utc_offset_minutes = 60;
  CHECK(judge(snapshot, stale, {}, seconds_after_taken(5)).summary ==
        "sample is 1 h old, critical at 15 min; 1 of 1 OK");
  // A clock behind the sample's is not a negative age.
  snapshot.timestamp->utc_offset_minutes = 0;
  CHECK_THAT(judge(snapshot, stale, {}, seconds_after_taken(-50)).perfdata,
             Catch::Contains("'age'=0s;300;900;0"));

  snapshot.timestamp->utc_offset_minutes.reset();
  CheckResult unknown = judge(snapshot, stale);
  CHECK(unknown.status == CheckStatus::unknown);
  CHECK(unknown.summary == "sample age unknown (no timestamp with its time zone); 1 of 1 OK");
  snapshot.timestamp.reset();
  CHECK(judge(snapshot, stale).status == CheckStatus::unknown);
  CHECK(judge(snapshot).status == CheckStatus::ok); // no stale threshold: the age is not asked
}

TEST_CASE("check: the stale defaults are off for nvidia-smi run now, on for a recording") {
  CheckOptions live;
  CHECK_FALSE(check_age_limits(live).warning);
  CHECK_FALSE(check_age_limits(live).critical);
  CheckOptions recording;
  recording.sample.fixture = "/var/lib/gpu/nvidia-smi.xml";
  CHECK(check_age_limits(recording).warning == 300.0);
  CHECK(check_age_limits(recording).critical == 900.0);
  recording.stale_critical = std::optional<double>();
  recording.stale_warning = 60.0;
  CHECK(check_age_limits(recording).warning == 60.0);
  CHECK_FALSE(check_age_limits(recording).critical);
}

TEST_CASE("check: --gpu judges only those GPUs; one not listed is CRITICAL") {
  Snapshot snapshot = test::quiet_machine(4);
  snapshot.gpus[1].temperature_c = 95;
  CheckResult some = judge(snapshot, {}, {"0", "2"});
  CHECK(some.status == CheckStatus::ok);
  CHECK(some.summary == "2 of 2 OK");
  CHECK_THAT(some.perfdata, !Catch::Contains("gpu1_"));
  CheckResult missing = judge(snapshot, {}, {"0", "7"});
  CHECK(missing.status == CheckStatus::critical);
  CHECK(missing.summary == "GPU 7 not listed by nvidia-smi; 1 of 1 OK");
}

TEST_CASE("check: fewer GPUs than expected is CRITICAL; none at all without an expectation is "
          "UNKNOWN") {
  CheckThresholds eight;
  eight.expected_gpus = 8;
  CheckResult seven = judge(test::quiet_machine(7), eight);
  CHECK(seven.status == CheckStatus::critical);
  CHECK(seven.summary == "7 of 8 expected GPUs listed; 7 of 7 OK");
  CHECK(judge(test::quiet_machine(8), eight).status == CheckStatus::ok);
  CheckResult none = judge(test::quiet_machine(0));
  CHECK(none.status == CheckStatus::unknown);
  CHECK(none.summary == "no GPUs in the sample");
  CHECK(judge(test::quiet_machine(0), eight).status == CheckStatus::critical);
}

TEST_CASE("check: hostile text from nvidia-smi or the kernel stays on one valid line") {
  Snapshot snapshot = test::quiet_machine(2);
  snapshot.gpus[0].lost_reason =
      std::string("lost | 'x'=1\nGPU OK - \xff\xfe fine\r\t\x1b[31m") + "\xc2\x85 \xe2\x80\xa8 end";
  snapshot.gpus[1].health.recovery_action = std::string(500, 'A') + "|";
  KernelLog log;
  log.error = "no\nway | out";
  snapshot.kernel_log = log;
  CheckResult result = judge(snapshot);
  std::string line = plugin_line(result);
  CHECK(is_valid_utf8(line));
  CHECK(std::count(line.begin(), line.end(), '\n') == 1);
  CHECK(line.back() == '\n');
  CHECK(std::count(line.begin(), line.end(), '|') == 1);
  CHECK(line.find('\r') == std::string::npos);
  CHECK(line.find('\x1b') == std::string::npos);
  CHECK(line.find("\xe2\x80\xa8") == std::string::npos);
  CHECK(line.find("\xc2\x85") == std::string::npos);
  CHECK_THAT(result.summary, Catch::Contains("lost: lost / 'x'=1 GPU OK - \xef\xbf\xbd\xef\xbf\xbd"
                                             " fine"));
  CHECK_THAT(result.summary, Catch::Contains("recovery action: " + std::string(57, 'A') + "..."));
  CHECK_THAT(result.summary, Catch::Contains("kernel log not readable (no way / out)"));
}

TEST_CASE("check: plugin_text cuts at a character and says so") {
  CHECK(plugin_text("plain") == "plain");
  CHECK(plugin_text("abcdefgh", 8) == "abcdefgh");
  CHECK(plugin_text("abcdefghi", 8) == "abcde...");
  CHECK(plugin_text("ab\xc3\xa9\xc3\xa9\xc3\xa9", 7) == "ab\xc3\xa9...");
  CHECK(plugin_text("a|b\nc") == "a/b c");
}

TEST_CASE("check: a failure is one line with no perfdata") {
  CHECK(plugin_line(check_failure(CheckStatus::unknown, "nvidia-smi: cannot run nvidia-smi")) ==
        "GPU UNKNOWN - nvidia-smi: cannot run nvidia-smi\n");
  CHECK(plugin_line(check_failure(CheckStatus::critical, "no answer\nwithin 10 s | x")) ==
        "GPU CRITICAL - no answer within 10 s / x\n");
}

} // namespace test_check
