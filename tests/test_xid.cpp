// Xid lines (parsers/src/xid.cpp) as docs/research/xid.md section 1 quotes them, the
// /dev/kmsg record decoder, and XidLog following a file and retrying one it could not open.
#include "kernel_log/kmsg_record.hpp"
#include "kernel_log/xid_log.hpp"
#include "support.hpp"

#include "nvsmi/utf8.hpp"
#include "nvsmi/xid.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <thread>
#include <unistd.h>

namespace test_xid {

using namespace nvsmi;

namespace {

XidEvent parsed(const std::string &line) {
  auto event = parse_xid_line(line);
  INFO(line);
  REQUIRE(event);
  return *event;
}

void append(const std::string &path, const std::string &text) {
  std::ofstream out(path, std::ios::app | std::ios::binary);
  out << text;
}

const std::string line79 =
    "NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.";

// What XidLog says once of a log that is not there.
std::string said_absent(const std::string &path) {
  return "kernel log " + path +
         ": No such file or directory: Xid errors are not counted (nvsmi_xid_readable 0)";
}

std::vector<XidTally> tallies(const XidLog &log) {
  Snapshot snapshot;
  log.attach(snapshot);
  REQUIRE(snapshot.kernel_log);
  return snapshot.kernel_log->xids;
}

std::int64_t count_of(const XidLog &log, const std::string &device, int xid) {
  for (const XidTally &tally : tallies(log))
    if (tally.pci_device == device && tally.xid == xid)
      return tally.count;
  return 0;
}

} // namespace

TEST_CASE("xid: the driver's three forms, with pid and name") {
  XidEvent e = parsed("NVRM: Xid (PCI:0000:cb:00): 109, pid=1797828, name=pt_main_thread, Ch "
                      "00000008, errorString CTX SWITCH TIMEOUT, Info 0x58005");
  CHECK(e.pci_device == "0000:cb:00");
  CHECK(e.xid == 109);
  CHECK(e.pid == 1797828);
  CHECK(e.process_name == "pt_main_thread");
  CHECK(e.message == "Ch 00000008, errorString CTX SWITCH TIMEOUT, Info 0x58005");

  e = parsed("NVRM: Xid (PCI:0000:01:00 GPU-I:02): 13, pid=1797, name=python3, Graphics "
             "Exception");
  CHECK(e.pci_device == "0000:01:00");
  CHECK(e.xid == 13);
  CHECK(e.process_name == "python3");
  CHECK(e.message == "Graphics Exception");

  e = parsed("NVRM: Xid (PCI:0000:01:00 GPU-I:02 GPU-CI:01): 43, pid=5, name=a.out, Ch 0000001a");
  CHECK(e.pci_device == "0000:01:00");
  CHECK(e.xid == 43);
  CHECK(e.pid == 5);
  CHECK(e.message == "Ch 0000001a");
}

TEST_CASE("xid: unknown pid and name are unknown, not zero") {
  XidEvent e = parsed("NVRM: Xid (PCI:0000:cb:00): 13, pid='<unknown>', name=<unknown>, Graphics "
                      "SM Warp Exception on (GPC 7, TPC 7, SM 0): Illegal Instruction Parameter");
  CHECK_FALSE(e.pid);
  CHECK_FALSE(e.process_name);
  CHECK(e.message ==
        "Graphics SM Warp Exception on (GPC 7, TPC 7, SM 0): Illegal Instruction Parameter");

  e = parsed(line79);
  CHECK(e.xid == 79);
  CHECK(e.pci_device == "0000:3b:00");
  CHECK_FALSE(e.pid);
  CHECK_FALSE(e.process_name);
  CHECK(e.message == "GPU has fallen off the bus.");
}

TEST_CASE("xid: lines without pid and name, modern and old drivers") {
  XidEvent e = parsed("NVRM: Xid (PCI:0000:01:00): 120, GSP kernel exception: store access page "
                      "fault (cause:0xf) @ pc:0xffffffff93003d42, partition:4#0");
  CHECK(e.xid == 120);
  CHECK_FALSE(e.pid);
  CHECK(e.message == "GSP kernel exception: store access page fault (cause:0xf) @ "
                     "pc:0xffffffff93003d42, partition:4#0");
  CHECK(parsed("NVRM: Xid (PCI:0000:01:00): 62, 223b6a66 00002100 00000000 20662342").message ==
        "223b6a66 00002100 00000000 20662342");
  CHECK(parsed("NVRM: Xid (PCI:0000:01:00): 154, GPU recovery action changed from 0x0 (None) to "
               "0x1 (GPU Reset Required)")
            .xid == 154);
  e = parsed("NVRM: Xid (PCI:0000:44:00): 79, GPU has fallen off the bus");
  CHECK(e.message == "GPU has fallen off the bus");
  CHECK(parsed("NVRM: Xid (PCI:0000:01:00): 32, Channel ID 00000000 intr 00004000").message ==
        "Channel ID 00000000 intr 00004000");
  CHECK(parsed("NVRM: Xid (PCI:0000:01:00): 31, Ch 00000003, engmask 00000101, intr 10000000")
            .message == "Ch 00000003, engmask 00000101, intr 10000000");
  // Drivers older still print the address without "PCI:".
  CHECK(parsed("NVRM: Xid (0000:02:00): 79, GPU has fallen off the bus.").pci_device ==
        "0000:02:00");
  // pid without name; a code that ends the line; name as the last field.
  e = parsed("NVRM: Xid (PCI:0000:01:00): 45, pid=12542, name=VLLM::Worker, channel 0x00000002");
  CHECK(e.process_name == "VLLM::Worker");
  CHECK(e.message == "channel 0x00000002");
  e = parsed("NVRM: Xid (PCI:0000:01:00): 45, pid=12, Ch 00000001");
  CHECK(e.pid == 12);
  CHECK_FALSE(e.process_name);
  CHECK(e.message == "Ch 00000001");
  e = parsed("NVRM: Xid (PCI:0000:01:00): 48");
  CHECK(e.xid == 48);
  CHECK(e.message.empty());
  e = parsed("3,41,1100,-;NVRM: Xid (PCI:0000:b9:00): 94, pid=1234, name=python");
  CHECK(e.process_name == "python");
  CHECK(e.message.empty());
  // "pid=" that is not a pid belongs to the message.
  e = parsed("NVRM: Xid (PCI:0000:01:00): 13, pid=abc, something");
  CHECK_FALSE(e.pid);
  CHECK(e.message == "pid=abc, something");
}

TEST_CASE("xid: whatever precedes NVRM, and other PCI domains") {
  const std::string body = "NVRM: Xid (PCI:0000:dc:00): 45, pid=1818990, name=python3, Ch "
                           "00000001 caused by previous Xid 149";
  for (const std::string &prefix :
       {std::string(), std::string("6,1234,5678,-;"), std::string("4,1227,99,c,1,-;"),
        std::string("Nov 24 10:00:01 host kernel: [ 123.456] "),
        std::string("Nov 24 10:00:01 host kernel: "), std::string("[Fri Aug 30 11:43:09 2024] "),
        std::string("[  1234.567890] "), std::string("2024-08-30T11:43:09+02:00 gpu7 kernel: ")}) {
    XidEvent e = parsed(prefix + body);
    CHECK(e.pci_device == "0000:dc:00");
    CHECK(e.xid == 45);
    CHECK(e.message == "Ch 00000001 caused by previous Xid 149");
  }
  CHECK(parsed("NVRM: Xid (PCI:0019:01:00): 149, NETIR Fatal XC0 i0 Link -1 (0x000fe406 "
               "0x00000000)")
            .pci_device == "0019:01:00");
  CHECK(parsed("NVRM: Xid (PCI:0018:01:00): 145, RLW_RXPIPE Nonfatal XC0 i0 Link 13 (x)").xid ==
        145);
  // Upper-case hex is spelled as the kernel does, so that one GPU has one tally.
  CHECK(parsed("NVRM: Xid (PCI:0000:3B:00): 79, x").pci_device == "0000:3b:00");
  // A CR of a file written elsewhere.
  CHECK(parsed("NVRM: Xid (PCI:0000:3b:00): 79\r").xid == 79);
}

TEST_CASE("xid: lines that are not Xid reports") {
  for (const char *line : {
           "nvidia-nvswitch0: SXid (PCI:0000:00:00.0): 11001, Fatal, Link 0 ...",
           "NVRM: SXid (PCI:0000:00:00.0): 11001, Fatal",
           "NVRM: GPU at PCI:0000:01:00: GPU-34d7319c-5b19-1e75-186d-c187099e4fe5",
           "NVRM: GPU at 0000:01:00.0 has fallen off the bus.",
           "NVRM: The NVIDIA GPU 0000:b3:00.0",
           "NVRM: Xid",
           "NVRM: Xid (",
           "NVRM: Xid (PCI:0000:3b:00)",
           "NVRM: Xid (PCI:0000:3b:00): ",
           "NVRM: Xid (PCI:0000:3b:00): abc, x",
           "NVRM: Xid (PCI:0000:3b:00): 79x, x",
           "NVRM: Xid (PCI:0000:3b:00): 12345678901234567890, x",
           "NVRM: Xid (PCI:zz:3b:00): 79, x",
           "NVRM: Xid (PCI:0000:3b:00 GPU-X:1): 79, x",
           "NVRM: Xid (PCI:0000:3b:00 GPU-I:): 79, x",
           "NVRM: Xid PCI:0000:3b:00: 79, x",
           "xNVRM: Xid (PCI:0000:3b:00): 79, x",
           "",
           "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.54.15",
       })
    CHECK_FALSE(parse_xid_line(line));
}

TEST_CASE("xid: hostile bytes give valid, capped, one-line text") {
  std::string line = "NVRM: Xid (PCI:0000:3b:00): 13, pid=7, name=a\xff\x01"
                     "b, bad\xc3\x28 \x1b[31m red\x7f\ttab";
  XidEvent e = parsed(line);
  CHECK(is_valid_utf8(e.message));
  CHECK(is_valid_utf8(*e.process_name));
  CHECK(e.message.find('\x1b') == std::string::npos);
  CHECK(e.message.find('\t') == std::string::npos);
  CHECK(e.message.find('\x7f') == std::string::npos);

  // A long message is cut at a character boundary, not inside the euro sign.
  std::string long_line =
      "NVRM: Xid (PCI:0000:3b:00): 13, " + std::string(511, 'a') + "\xe2\x82\xac";
  e = parsed(long_line + std::string(10000, 'b'));
  CHECK(e.message.size() == 511);
  CHECK(is_valid_utf8(e.message));
  e = parsed("NVRM: Xid (PCI:0000:3b:00): 13, " + std::string(100000, 'x'));
  CHECK(e.message.size() <= 512);

  // A name of nothing but blanks and control bytes is no name, not an empty one.
  e = parsed("NVRM: Xid (PCI:0000:3b:00): 13, pid=7, name= \x01\t, msg");
  CHECK(e.pid == 7);
  CHECK_FALSE(e.process_name);
  CHECK(e.message == "msg");

  std::string nul_line("NVRM: Xid (PCI:0000:3b:00): 13, a\0b", 35);
  CHECK(parsed(nul_line).message == "a b");
  // Random bytes around the marker never crash and never give invalid text.
  std::string noise;
  for (int i = 0; i < 4000; ++i)
    noise += static_cast<char>((i * 7919 + 13) & 0xff);
  for (std::size_t at = 0; at < noise.size(); at += 97) {
    auto maybe = parse_xid_line(noise.substr(0, at) + "NVRM: Xid (PCI:0000:3b:00): 79, " +
                                noise.substr(at, 300));
    if (maybe)
      CHECK(is_valid_utf8(maybe->message));
  }
}

TEST_CASE("xid: the Xids that need a reset or reboot") {
  for (int xid : {46, 48, 62, 64, 74, 79, 95, 109, 110, 119, 120, 136, 140, 143, 155, 156, 158})
    CHECK(xid_needs_reset(xid));
  for (int xid : {0, 13, 31, 43, 45, 63, 92, 94, 154, -1})
    CHECK_FALSE(xid_needs_reset(xid));
}

TEST_CASE("kmsg: a record's header, escapes and continuation lines") {
  auto record =
      parse_kmsg_record("6,1234,5678901,-;NVRM: Xid (PCI:0000:3b:00): 79, a\\x5cb"
                        "\\x0aline two\\x1b\n SUBSYSTEM=pci\n DEVICE=+pci:0000:3b:00.0\n");
  REQUIRE(record);
  CHECK(record->facility == 0);
  CHECK(record->level == 6);
  CHECK(record->sequence == 1234);
  CHECK(record->usec == 5678901);
  CHECK(record->message == "NVRM: Xid (PCI:0000:3b:00): 79, a\\b\nline two\x1b");

  // Extra fields before ';' (caller id), and a record from user space (facility 1, LOG_USER).
  record = parse_kmsg_record("4,1227,99,c,caller=T12;message");
  REQUIRE(record);
  CHECK(record->level == 4);
  CHECK(record->message == "message");
  record = parse_kmsg_record("14,5,6,-;NVRM: Xid (PCI:0000:3b:00): 79, forged");
  REQUIRE(record);
  CHECK(record->facility == 1);
  // A prefix past an int's range is kept whole: cut to 32 bits, 2^32 << 3 | 6 read as facility 0.
  record = parse_kmsg_record("34359738374,5,6,-;NVRM: Xid (PCI:0000:3b:00): 79, forged");
  REQUIRE(record);
  CHECK(record->facility == std::uint64_t{1} << 32);
  CHECK(record->level == 6);
  // A backslash that is not an escape stays.
  CHECK(parse_kmsg_record("6,1,2,-;a\\xzz\\x4")->message == "a\\xzz\\x4");

  for (const char *bad : {"", "no header", "6;x", "6,1;x", "a,1,2,-;x", "6,1,2,-",
                          "Nov 24 10:00:01 host kernel: NVRM: Xid (PCI:0000:3b:00): 79, x"})
    CHECK_FALSE(parse_kmsg_record(bad));
}

TEST_CASE("kmsg: a record's time since boot as local time") {
  const char *saved = std::getenv("TZ");
  std::string old = saved ? saved : "";
  ::setenv("TZ", "UTC", 1);
  // Booted 1000 s before 2023-11-14T22:13:20Z; logged 400 s after boot.
  CHECK(record_local_time(400'000'000, 1000'000'000, 1'700'000'000'000'000) ==
        "2023-11-14T22:03:20.000+00:00");
  CHECK(record_local_time(400'500'000, 1000'000'000, 1'700'000'000'000'000) ==
        "2023-11-14T22:03:20.500+00:00");
  ::setenv("TZ", "Asia/Kolkata", 1);
  auto local = record_local_time(400'000'000, 1000'000'000, 1'700'000'000'000'000);
  if (local && local->substr(local->size() - 6) != "+00:00") // no zone database: UTC
    CHECK(local == "2023-11-15T03:33:20.000+05:30");
  // A stamp later than the boot clock now is no time at all.
  CHECK_FALSE(record_local_time(2000'000'000, 1000'000'000, 1'700'000'000'000'000));
  if (saved)
    ::setenv("TZ", old.c_str(), 1);
  else
    ::unsetenv("TZ");
}

TEST_CASE("xid log: lines appended between polls are counted once; a partial line waits") {
  std::string path = test::temporary_folder() + "/kern.log";
  test::write_file(path, "Nov 24 10:00:01 host kernel: [ 1.0] NVRM: loading\n" +
                             ("Nov 24 10:00:02 host kernel: [ 2.0] " + line79 + "\n"));
  std::vector<std::string> said;
  XidLog log(path, [&](const std::string &line) { said.push_back(line); });
  CHECK(log.readable());
  log.poll();
  CHECK(log.caught_up());
  CHECK(count_of(log, "0000:3b:00", 79) == 1);
  log.poll();
  CHECK(count_of(log, "0000:3b:00", 79) == 1);

  append(path, "NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, again\n"
               "NVRM: Xid (PCI:0000:3b:00): 48, pid=7, name=x, DBE\nNVRM: Xid (PCI:0000:1a:00");
  log.poll();
  CHECK(count_of(log, "0000:3b:00", 79) == 2);
  CHECK(count_of(log, "0000:3b:00", 48) == 1);
  CHECK(count_of(log, "0000:1a:00", 13) == 0);
  append(path, "): 13, pid=1, name=y, half");
  log.poll();
  CHECK(count_of(log, "0000:1a:00", 13) == 0);
  append(path, " and half\n");
  log.poll();
  CHECK(count_of(log, "0000:1a:00", 13) == 1);

  std::vector<XidTally> all = tallies(log);
  REQUIRE(all.size() == 3); // by device, then Xid
  CHECK(all[0].pci_device == "0000:1a:00");
  CHECK(all[0].last_message == "half and half");
  CHECK(all[1].xid == 48);
  CHECK(all[2].xid == 79);
  CHECK(all[2].last_message == "again");
  CHECK_FALSE(all[2].last_seen); // a file's lines have no reliable year
  Snapshot snapshot;
  log.attach(snapshot);
  CHECK(snapshot.kernel_log->source == path);
  CHECK(snapshot.kernel_log->readable);
  CHECK_FALSE(snapshot.kernel_log->error);
  CHECK(said.empty());
}

TEST_CASE("xid log: truncation and replacement are read from the start, counts go on") {
  std::string folder = test::temporary_folder();
  std::string path = folder + "/kern.log";
  test::write_file(path, line79 + "\n" + line79 + "\n");
  XidLog log(path, {});
  log.poll();
  CHECK(count_of(log, "0000:3b:00", 79) == 2);

  test::write_file(path, line79 + "\n"); // copytruncate: shorter than what was read
  log.poll();
  CHECK(count_of(log, "0000:3b:00", 79) == 3);

  // logrotate: the old file moved away after one more line, a new one in its place.
  append(path, "NVRM: Xid (PCI:0000:3b:00): 48, last of the old\n");
  REQUIRE(std::rename(path.c_str(), (path + ".1").c_str()) == 0);
  test::write_file(path, "NVRM: Xid (PCI:0000:3b:00): 48, first of the new\n");
  log.poll();
  CHECK(count_of(log, "0000:3b:00", 48) == 2);
  CHECK(tallies(log)[0].last_message == "first of the new");
  log.poll();
  CHECK(count_of(log, "0000:3b:00", 48) == 2);
  append(path, line79 + "\n");
  log.poll();
  CHECK(count_of(log, "0000:3b:00", 79) == 4);
}

TEST_CASE("xid log: kmsg records in a file, and user-space records not counted") {
  std::string path = test::temporary_folder() + "/kmsg.txt";
  test::write_file(path, "3,41,1100,-;" + line79 +
                             "\n SUBSYSTEM=pci\n14,42,1200,-;NVRM: Xid (PCI:0000:3b:00): 79, "
                             "forged from user space\n4,43,1300,-;NVRM: Xid (PCI:0000:3b:00): 13, "
                             "a\\x5cb\n34359738374,44,1400,-;NVRM: Xid (PCI:0000:3b:00): 79, "
                             "a facility that only wraps to the kernel's\n");
  XidLog log(path, {});
  log.poll();
  CHECK(count_of(log, "0000:3b:00", 79) == 1);
  CHECK(count_of(log, "0000:3b:00", 13) == 1);
  CHECK(tallies(log)[0].last_message == "a\\b");
}

TEST_CASE("xid log: a missing log is unreadable and said once") {
  std::string path = test::temporary_folder() + "/absent.log";
  std::vector<std::string> said;
  XidLog log(path, [&](const std::string &line) { said.push_back(line); });
  for (int i = 0; i < 5; ++i)
    log.poll();
  CHECK_FALSE(log.readable());
  REQUIRE(said.size() == 1);
  CHECK(said[0] == said_absent(path));
  Snapshot snapshot;
  log.attach(snapshot);
  REQUIRE(snapshot.kernel_log);
  CHECK_FALSE(snapshot.kernel_log->readable);
  CHECK(snapshot.kernel_log->error == "No such file or directory");
  CHECK(snapshot.kernel_log->xids.empty());
}

TEST_CASE("xid log: a log that appears later is read once the retry interval has passed") {
  std::string path = test::temporary_folder() + "/late.log";
  std::vector<std::string> said;
  const std::chrono::milliseconds retry(20);
  XidLog log(
      path, [&](const std::string &line) { said.push_back(line); }, retry);
  CHECK_FALSE(log.readable());
  // Each poll after a wait longer than the interval tries again and fails for the same cause,
  // which was said already.
  for (int i = 0; i < 3; ++i) {
    std::this_thread::sleep_for(2 * retry);
    log.poll();
  }
  CHECK_FALSE(log.readable());
  REQUIRE(said.size() == 1);
  CHECK(said[0] == said_absent(path));

  test::write_file(path, line79 + "\n");
  CHECK(test::wait_until([&] {
    log.poll();
    return count_of(log, "0000:3b:00", 79) == 1;
  }));
  CHECK(log.readable());
  REQUIRE(said.size() == 2);
  CHECK(said[1] == "kernel log " + path + ": readable again: Xid errors are counted");
  Snapshot snapshot;
  log.attach(snapshot);
  REQUIRE(snapshot.kernel_log);
  CHECK(snapshot.kernel_log->readable);
  CHECK_FALSE(snapshot.kernel_log->error);
}

TEST_CASE("xid log: a log that appears is not looked for before the retry interval has passed") {
  std::string path = test::temporary_folder() + "/soon.log";
  std::vector<std::string> said;
  // An interval no test run lasts: any reading of the file here would be a retry too early.
  XidLog log(
      path, [&](const std::string &line) { said.push_back(line); }, std::chrono::hours(1));
  test::write_file(path, line79 + "\n");
  for (int i = 0; i < 5; ++i) {
    log.poll();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  CHECK_FALSE(log.readable());
  CHECK(count_of(log, "0000:3b:00", 79) == 0);
  CHECK(said.size() == 1);
}

TEST_CASE("xid log: the tallies are bounded") {
  std::string path = test::temporary_folder() + "/many.log";
  std::string text;
  // 4096 pairs fill it: 256 devices x 16 Xids; then 10 pairs more, one of them twice.
  for (unsigned bus = 0; bus < 256; ++bus)
    for (int xid = 1; xid <= 16; ++xid) {
      char line[80];
      std::snprintf(line, sizeof line, "NVRM: Xid (PCI:0000:%02x:00): %d, x\n", bus, xid);
      text += line;
    }
  for (int xid = 100; xid < 110; ++xid)
    text += "NVRM: Xid (PCI:0001:00:00): " + std::to_string(xid) + ", over\n";
  text += "NVRM: Xid (PCI:0001:00:00): 100, over\n";
  text += "NVRM: Xid (PCI:0000:00:00): 1, still counted\n"; // a pair already known
  test::write_file(path, text);
  std::vector<std::string> said;
  XidLog log(path, [&](const std::string &line) { said.push_back(line); });
  log.poll();
  CHECK(tallies(log).size() == XidLog::max_tallies);
  CHECK(log.dropped() == 11);
  CHECK(count_of(log, "0000:00:00", 1) == 2);
  REQUIRE(said.size() == 1);
  CHECK(said[0].find("new pairs are not counted") != std::string::npos);
}

TEST_CASE("xid log: a line too long is skipped, the next one read") {
  std::string path = test::temporary_folder() + "/long.log";
  test::write_file(path, std::string(70 * 1024, 'x'));
  std::vector<std::string> said;
  XidLog log(path, [&](const std::string &line) { said.push_back(line); });
  log.poll();
  append(path, std::string(10, 'y') + line79 + "\n" + line79 + "\n");
  log.poll();
  CHECK(count_of(log, "0000:3b:00", 79) == 1); // the one inside the long line is not counted
  CHECK(said.size() == 1);
}

TEST_CASE("xid log: /dev/kmsg, where this machine lets it be read") {
  std::vector<std::string> said;
  XidLog log(default_kernel_log, [&](const std::string &line) { said.push_back(line); });
  log.poll();
  Snapshot snapshot;
  log.attach(snapshot);
  REQUIRE(snapshot.kernel_log);
  CHECK(snapshot.kernel_log->source == "/dev/kmsg");
  if (log.readable()) {
    CHECK(said.empty());
    for (int i = 0; i < 64 && !log.caught_up(); ++i)
      log.poll();
    CHECK(log.caught_up());
    for (const XidTally &tally : snapshot.kernel_log->xids)
      CHECK(tally.last_seen);
  } else {
    CHECK(said.size() == 1);
    CHECK(snapshot.kernel_log->error);
  }
}

} // namespace test_xid
