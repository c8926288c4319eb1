// The host's disk and network rates (host/host_io.hpp): which devices count, on a host's /proc
// and /sys as fixtures/host/ has them; the rate rules alone on made-up counters; and files that
// cannot be read, or are not what they should be.
#include "host/host_io.hpp"

#include "support.hpp"

#include <catch2/catch.hpp>

#include <filesystem>
#include <sys/stat.h>

namespace test_host_io {

using namespace nvsmi;
namespace fs = std::filesystem;

namespace {

// A copy of fixtures/host/machine to change: the root a HostIoReader reads.
std::string host_root() {
  std::string root = test::temporary_folder() + "/root";
  fs::copy(test::fixture_path("host/machine"), root, fs::copy_options::recursive);
  return root;
}

// Puts fixtures/host/later's readings in place of `root`'s.
void next_reading(const std::string &root) {
  test::write_file(root + "/proc/diskstats",
                   test::read_file(test::fixture_path("host/later/diskstats")));
  test::write_file(root + "/proc/net/dev",
                   test::read_file(test::fixture_path("host/later/net/dev")));
}

// Puts fixtures/host/machine's readings back in `root`.
void first_reading(const std::string &root) {
  test::write_file(root + "/proc/diskstats",
                   test::read_file(test::fixture_path("host/machine/proc/diskstats")));
  test::write_file(root + "/proc/net/dev",
                   test::read_file(test::fixture_path("host/machine/proc/net/dev")));
}

double seconds(DeviceRates::Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// What a reader found between two reads of `root`, and the bounds of the time between them: the
// rate is bytes over a time at least `shortest` and at most `longest`.
struct Between {
  Host first, second;
  double shortest, longest;
};
Between read_twice(const std::string &root, HostIoReader &reader) {
  using Clock = DeviceRates::Clock;
  Between out;
  Clock::time_point before_first = Clock::now();
  reader.read(out.first);
  Clock::time_point after_first = Clock::now();
  next_reading(root);
  Clock::time_point before_second = Clock::now();
  reader.read(out.second);
  Clock::time_point after_second = Clock::now();
  out.shortest = seconds(before_second - after_first);
  out.longest = seconds(after_second - before_first);
  return out;
}
Between read_twice(const std::string &root) {
  HostIoReader reader(root);
  return read_twice(root, reader);
}

// `rate` is `bytes` over a time between `between`'s bounds.
void check_rate(const RealReading &rate, double bytes, const Between &between) {
  REQUIRE(rate);
  CHECK(*rate >= bytes / between.longest * (1 - 1e-9));
  CHECK(*rate <= bytes / between.shortest * (1 + 1e-9));
}

} // namespace

TEST_CASE("host io: whole disks and NICs, two readings apart, are the rates") {
  std::string root = host_root();
  Between read = read_twice(root);
  // Nothing to compare with on the first reading: unknown, never 0.
  CHECK_FALSE(read.first.disk_read_bytes_per_second);
  CHECK_FALSE(read.first.disk_write_bytes_per_second);
  CHECK_FALSE(read.first.network_receive_bytes_per_second);
  CHECK_FALSE(read.first.network_send_bytes_per_second);
  // nvme0n1 and sda in 512-byte sectors; not their partitions, not loop0 or dm-0 (on nvme0n1p2).
  check_rate(read.second.disk_read_bytes_per_second, (200000 + 2000) * 512.0, read);
  check_rate(read.second.disk_write_bytes_per_second, (40000 + 1000) * 512.0, read);
  // eno1 and ib0; not lo, docker0 or the veth, whose bytes eno1 carries too.
  check_rate(read.second.network_receive_bytes_per_second, 250000000.0 + 1000000.0, read);
  check_rate(read.second.network_send_bytes_per_second, 5000000.0 + 3000000.0, read);
}

TEST_CASE("host io: the disk rule reads sys/block and sys/devices/virtual") {
  std::string text = test::read_file(test::fixture_path("host/machine/proc/diskstats"));
  std::optional<DeviceCounters> disks =
      read_diskstats(text, [](std::string_view name) { return name.rfind("sd", 0) == 0; });
  REQUIRE(disks);
  REQUIRE(disks->size() == 2); // sda and sda1: the predicate alone says what a whole disk is
  CHECK(disks->at(0).name == "sda");
  CHECK(disks->at(0).in == 400000 * 512ull);
  CHECK(disks->at(0).out == 160000 * 512ull);
  // The same disk's sectors are 512 bytes whatever its own sector size: no other unit.
  CHECK(
      read_diskstats("   8  0 sdb 1 0 8 0 1 0 16 0 0 0 0\n", [](auto) { return true; })->at(0).in ==
      8 * 512ull);
}

TEST_CASE("host io: a container's namespace has only virtual interfaces: all but lo count") {
  std::string text = "Inter-|   Receive |  Transmit\n"
                     " face |bytes    packets|bytes\n"
                     "    lo: 100 1 0 0 0 0 0 0 100 1 0 0 0 0 0 0\n"
                     "  eth0: 5000 10 0 0 0 0 0 0 7000 10 0 0 0 0 0 0\n";
  std::optional<DeviceCounters> all_virtual = read_net_dev(text, [](auto) { return true; });
  REQUIRE(all_virtual);
  REQUIRE(all_virtual->size() == 1);
  CHECK(all_virtual->at(0).name == "eth0");
  CHECK(all_virtual->at(0).in == 5000);
  CHECK(all_virtual->at(0).out == 7000);
  // Only lo: no interface, so no rate (unknown, not 0).
  DeviceRates rates;
  auto t0 = DeviceRates::Clock::now();
  auto lo_only =
      read_net_dev("    lo: 100 1 0 0 0 0 0 0 100 1 0 0 0 0 0 0\n", [](auto) { return true; });
  REQUIRE(lo_only);
  CHECK(lo_only->empty());
  rates.update(lo_only, t0);
  CHECK_FALSE(rates.update(lo_only, t0 + std::chrono::seconds(1)).in);
}

TEST_CASE(
    "host io: rates only over what both readings have, and never across a counter that went back") {
  using namespace std::chrono_literals;
  DeviceRates rates;
  auto t0 = DeviceRates::Clock::now();
  auto one = [](std::uint64_t in, std::uint64_t out) { return DeviceCounters{{"sda", in, out}}; };
  CHECK_FALSE(rates.update(one(1000, 2000), t0).in); // the first
  DeviceRates::Rates r = rates.update(one(3000, 2500), t0 + 2s);
  REQUIRE(r.in);
  REQUIRE(r.out);
  CHECK(*r.in == 1000);
  CHECK(*r.out == 250);
  // Went back (a 32-bit counter wrapped, a disk replaced under its name): unknown, then the new
  // counters are the baseline.
  r = rates.update(one(10, 2600), t0 + 3s);
  CHECK_FALSE(r.in);
  CHECK_FALSE(r.out);
  r = rates.update(one(110, 2700), t0 + 4s);
  CHECK(r.in == 100.0);
  // A disk plugged in between readings adds nothing until it has two.
  r = rates.update(DeviceCounters{{"sda", 210, 2800}, {"sdb", 1000000, 1000000}}, t0 + 5s);
  CHECK(r.in == 100.0);
  // The clock not moving: no rate.
  CHECK_FALSE(rates.update(one(310, 2900), t0 + 5s).in);
  // Unreadable: unknown, and so is the next (nothing to compare with).
  CHECK_FALSE(rates.update(std::nullopt, t0 + 6s).in);
  CHECK_FALSE(rates.update(one(410, 3000), t0 + 7s).in);
  CHECK(rates.update(one(510, 3100), t0 + 8s).in == 100.0);
  // No device in both: unknown.
  CHECK_FALSE(rates.update(DeviceCounters{{"sdc", 1, 1}}, t0 + 9s).in);
}

TEST_CASE("host io: an unreadable, oversized, planted or malformed file is unknown, never 0") {
  std::string root = host_root();
  HostIoReader reader(root);
  Host host;
  reader.read(host);
  auto after = [&](const std::function<void()> &change) {
    // A good reading first, so that only `change` can leave the rate unknown.
    next_reading(root);
    change();
    Host out;
    reader.read(out);
    fs::remove(root + "/proc/diskstats"); // a FIFO is not written to: it would wait for a reader
    fs::remove(root + "/proc/net/dev");
    test::write_file(root + "/proc/diskstats",
                     test::read_file(test::fixture_path("host/machine/proc/diskstats")));
    test::write_file(root + "/proc/net/dev",
                     test::read_file(test::fixture_path("host/machine/proc/net/dev")));
    reader.read(host); // the baseline for the next
    return out;
  };
  // Gone.
  Host gone = after([&] { fs::remove(root + "/proc/diskstats"); });
  CHECK_FALSE(gone.disk_read_bytes_per_second);
  CHECK(gone.network_receive_bytes_per_second); // the other file still counts
  // A line that is no diskstats line.
  CHECK_FALSE(after([&] {
                test::write_file(root + "/proc/diskstats", "8 0 sda 1 2 x 4 5 6 7 8\n");
              }).disk_read_bytes_per_second);
  // Larger than any such file.
  CHECK_FALSE(after([&] {
                test::write_file(root + "/proc/net/dev",
                                 std::string(host_io_max_file_bytes + 1, ' '));
              }).network_receive_bytes_per_second);
  // More devices than a machine has.
  CHECK_FALSE(after([&] {
                std::string many;
                for (std::size_t i = 0; i < host_io_max_devices + 3; ++i) // and net/dev's headers
                  many += "8 0 sd" + std::to_string(i) + " 1 0 8 0 1 0 16 0 0 0 0\n";
                test::write_file(root + "/proc/diskstats", many);
              }).disk_read_bytes_per_second);
  // A FIFO planted where the file should be: not read (it would block), no wait.
  CHECK_FALSE(after([&] {
                fs::remove(root + "/proc/net/dev");
                REQUIRE(::mkfifo((root + "/proc/net/dev").c_str(), 0600) == 0);
              }).network_receive_bytes_per_second);
  fs::remove(root + "/proc/net/dev");
  // No root at all: every rate unknown.
  HostIoReader nowhere(root + "/missing");
  Host none;
  nowhere.read(none);
  nowhere.read(none);
  CHECK_FALSE(none.disk_read_bytes_per_second);
  CHECK_FALSE(none.network_send_bytes_per_second);
}

TEST_CASE(
    "host io: the counters files are held open and read again; a replaced one is opened anew") {
  std::string root = host_root();
  HostIoReader reader(root);
  Host first;
  reader.read(first);
  // Held: the files moved away from their paths (not unlinked) are still the ones read, with
  // what was written to them since.
  fs::rename(root + "/proc", root + "/proc-moved");
  test::write_file(root + "/proc-moved/diskstats",
                   test::read_file(test::fixture_path("host/later/diskstats")));
  test::write_file(root + "/proc-moved/net/dev",
                   test::read_file(test::fixture_path("host/later/net/dev")));
  Host held;
  reader.read(held);
  CHECK(held.disk_read_bytes_per_second);
  CHECK(*held.disk_read_bytes_per_second > 0);
  CHECK(held.network_receive_bytes_per_second);
  CHECK(*held.network_receive_bytes_per_second > 0);
  // Replaced under its path (written beside and renamed over it, as an atomic writer does): the
  // new file is read, here counters that went back, so no rate; then rates from it again.
  fs::rename(root + "/proc-moved", root + "/proc");
  test::write_file(root + "/proc/diskstats.new",
                   test::read_file(test::fixture_path("host/machine/proc/diskstats")));
  fs::rename(root + "/proc/diskstats.new", root + "/proc/diskstats");
  Host replaced;
  reader.read(replaced);
  CHECK_FALSE(replaced.disk_read_bytes_per_second); // went back: the new file was read
  CHECK(replaced.network_receive_bytes_per_second); // net/dev, not replaced, unchanged: 0 B/s
  next_reading(root);
  Host again;
  reader.read(again);
  REQUIRE(again.disk_read_bytes_per_second);
  CHECK(*again.disk_read_bytes_per_second > 0);
}

TEST_CASE("host io: a device is looked up under sys/ once while it stays listed") {
  std::string root = host_root();
  HostIoReader reader(root);
  Host first;
  reader.read(first);
  // nvme0n1's entry gone from sys/block after the first reading: still the whole disk it was for
  // this reader (its 200,000 sectors and sda's 2,000), no longer one for a new reader (sda's).
  fs::remove_all(root + "/sys/block/nvme0n1");
  Between same = read_twice(root, reader);
  check_rate(same.second.disk_read_bytes_per_second, (200000 + 2000) * 512.0, same);
  first_reading(root);
  Between fresh = read_twice(root);
  check_rate(fresh.second.disk_read_bytes_per_second, 2000 * 512.0, fresh);
  // A name gone for a reading is looked up anew when it is back (another device may have it).
  std::string without_nvme;
  for (const std::string &line :
       test::lines_of(test::read_file(test::fixture_path("host/machine/proc/diskstats"))))
    if (line.find(" nvme0n1 ") == std::string::npos)
      without_nvme += line + "\n";
  test::write_file(root + "/proc/diskstats", without_nvme);
  reader.read(first);
  first_reading(root);
  Between back = read_twice(root, reader);
  check_rate(back.second.disk_read_bytes_per_second, 2000 * 512.0, back);
}

} // namespace test_host_io
