#include "nvsmi/nvlink_counters.hpp"
#include "nvsmi/nvlink_status.hpp"
#include "nvsmi/quantity.hpp"
#include "snapshot_builders.hpp"
#include "support.hpp"

#include <catch2/catch.hpp>

namespace test_nvlink_status {

using namespace nvsmi;

namespace {

std::string fixture(const std::string &name) { return test::read_file(test::fixture_path(name)); }

// 18 NVLink 4 links of 26.562 GB/s each way.
constexpr std::int64_t h100_capacity = 478116000000;

} // namespace

TEST_CASE("nvlink -s: a GPU's capacity is the sum of its active links' speeds, each way") {
  std::vector<NvlinkCapacity> gpus =
      read_nvlink_status(fixture("nvlink/handmade-h100-8gpu-nvlink-status.txt"));
  REQUIRE(gpus.size() == 8);
  for (std::size_t g = 0; g < gpus.size(); ++g) {
    CHECK(gpus[g].gpu_index == static_cast<int>(g));
    CHECK(gpus[g].uuid == "GPU-00000000-0000-0000-0000-00000000000" + std::to_string(g));
    CHECK(gpus[g].bytes_per_second == h100_capacity);
  }
}

TEST_CASE("nvlink -s: inactive links add nothing; a GPU with none active is unknown, never 0") {
  std::vector<NvlinkCapacity> gpus =
      read_nvlink_status(fixture("nvlink/handmade-h100-8gpu-inactive-links-nvlink-status.txt"));
  REQUIRE(gpus.size() == 8);
  CHECK(gpus[0].bytes_per_second == 16 * 26562000000);
  CHECK(gpus[1].bytes_per_second == h100_capacity);
  CHECK_FALSE(gpus[7].bytes_per_second.has_value());
}

TEST_CASE("nvlink -s (H100 and H200 without NVLink peers, 580): empty output, every GPU unknown") {
  for (const char *machine : {"nvidia-h100-80gb-hbm3__580.159.04", "nvidia-h200__580.159.04"}) {
    std::vector<NvlinkCapacity> gpus =
        read_nvlink_status(fixture(std::string("recorded/") + machine + "/nvlink-status.txt"));
    CHECK(gpus.empty());
    Snapshot snapshot = test::quiet_machine(8);
    attach_nvlink_capacity(snapshot, gpus);
    for (const Gpu &gpu : snapshot.gpus)
      CHECK_FALSE(gpu.nvlink_bandwidth_bytes_per_second.has_value());
  }
}

TEST_CASE("nvlink -s: a V100 with two links down, as printed in a public report (UUID elided)") {
  // Azure/azhpc-diagnostics issue 73: NVLink 2 links of 25.781 GB/s.
  std::vector<NvlinkCapacity> gpus = read_nvlink_status("GPU 3: Tesla V100-SXM2-32GB (UUID: ...)\n"
                                                        "         Link 0: 25.781 GB/s\n"
                                                        "         Link 1: 25.781 GB/s\n"
                                                        "         Link 2: 25.781 GB/s\n"
                                                        "         Link 3: <inactive>\n"
                                                        "         Link 4: 25.781 GB/s\n"
                                                        "         Link 5: <inactive>\n");
  REQUIRE(gpus.size() == 1);
  CHECK(gpus[0].gpu_index == 3);
  CHECK(gpus[0].bytes_per_second == 4 * 25781000000);
}

TEST_CASE("nvlink -s: text it does not understand leaves that GPU unknown, naming the line, never "
          "guessed; what belongs to no GPU is refused") {
  const char *odd_links[] = {
      " Link 0: fast\n",
      " Link 0: 26.562 Gb/s\n",
      " Link 0: 26.562 MB/s\n",
      " Link 0: 0 GB/s\n",
      " Link 0: -5 GB/s\n",
      " Link 0: nan GB/s\n",
      " Link 0: inf GB/s\n",
      " Link 0: 1e300 GB/s\n",
      " Link x: 26.562 GB/s\n",
      "\xff\xfe Link 0: 26.562 GB/s\n",
      " Link 0: 26.562 GB/s\nNVLE: disabled\n",
  };
  for (const char *odd : odd_links) {
    INFO(odd);
    // The odd GPU between two read ones: only its capacity is unknown.
    std::vector<NvlinkCapacity> gpus = read_nvlink_status(
        std::string("GPU 0: X (UUID: GPU-a)\n Link 0: 26.562 GB/s\n") + "GPU 1: X (UUID: GPU-b)\n" +
        odd + "GPU 2: X (UUID: GPU-c)\n Link 0: 26.562 GB/s\n");
    REQUIRE(gpus.size() == 3);
    CHECK(gpus[0].bytes_per_second == 26562000000);
    CHECK_FALSE(gpus[1].bytes_per_second);
    REQUIRE(gpus[1].no_figures);
    CHECK_THAT(*gpus[1].no_figures, Catch::StartsWith("nvlink -s line not understood: \""));
    for (char c : *gpus[1].no_figures)
      CHECK((static_cast<unsigned char>(c) >= 0x20 && c != 0x7f));
    CHECK(gpus[2].bytes_per_second == 26562000000);
  }
  const char *hostile[] = {
      "Link 0: 26.562 GB/s\n", // a link before any GPU
      "GPU x: X (UUID: GPU-a)\n",
      "GPU -1: X (UUID: GPU-a)\n",
      "NVLink is not supported on this system\n",
      "Device does not have or support Nvlink\nGPU 0: X (UUID: GPU-a)\n", // whose answer?
  };
  for (const char *text : hostile) {
    INFO(text);
    CHECK_THROWS_AS(read_nvlink_status(text), ParseError);
  }
  // Many links of a garbled speed would overflow the sum: that GPU unknown, not wrapped.
  std::string many = "GPU 0: X (UUID: GPU-a)\n";
  for (int link = 0; link < 5000; ++link)
    many += " Link " + std::to_string(link) + ": 99999 GB/s\n";
  std::vector<NvlinkCapacity> overflow = read_nvlink_status(many);
  REQUIRE(overflow.size() == 1);
  CHECK_FALSE(overflow[0].bytes_per_second);
  CHECK_THAT(*overflow[0].no_figures, Catch::Contains("past 100000 GB/s"));
}

TEST_CASE("nvlink -s: the real answers under a GPU's line (all links inactive, no NVLink, MIG "
          "mode) leave that GPU unknown and every other GPU's capacity as read") {
  struct Answer {
    const char *fixture, *words;
  };
  for (Answer answer :
       {Answer{"all-links-inactive",
               "NVML: Unable to retrieve Nvlink information as all links are inActive"},
        Answer{"no-nvlink", "Device does not have or support Nvlink"},
        Answer{"mig", "Nvlink queries are not supported for Devices in MIG mode"}}) {
    INFO(answer.fixture);
    std::vector<NvlinkCapacity> gpus = read_nvlink_status(fixture(
        std::string("nvlink/handmade-h100-8gpu-gpu3-") + answer.fixture + "-nvlink-status.txt"));
    REQUIRE(gpus.size() == 8);
    for (std::size_t g = 0; g < gpus.size(); ++g) {
      INFO("GPU " << g);
      CHECK(gpus[g].uuid == "GPU-00000000-0000-0000-0000-00000000000" + std::to_string(g));
      if (g == 3) {
        CHECK_FALSE(gpus[g].bytes_per_second);
        CHECK(gpus[g].no_figures == "nvlink -s says \"" + std::string(answer.words) + "\"");
      } else {
        CHECK(gpus[g].bytes_per_second == h100_capacity);
        CHECK_FALSE(gpus[g].no_figures);
      }
    }
    CHECK(nvlink_capacity_notices(gpus) ==
          std::vector<std::string>{"GPU 3: nvlink -s says \"" + std::string(answer.words) + "\""});
  }
  // As quoted in public reports: an RTX A6000 whose third card has no bridge (siboehm/bench,
  // gpu/nvlink/README.md: "\t Link" lines, "NVLink" in capitals); two A100 PCIe without NVLink
  // (HPE-Japan-Presales/e-learning, gpu/a100/mgmt_on_ubuntu22.04.4lts.md, driver 555.42.02).
  std::vector<NvlinkCapacity> a6000 = read_nvlink_status(
      "GPU 0: NVIDIA RTX A6000 (UUID: GPU-00000000-0000-0000-0000-000000000000)\n"
      "\t Link 0: 14.062 GB/s\n\t Link 1: 14.062 GB/s\n\t Link 2: 14.062 GB/s\n"
      "\t Link 3: 14.062 GB/s\n"
      "GPU 1: NVIDIA RTX A6000 (UUID: GPU-00000000-0000-0000-0000-000000000001)\n"
      "\t Link 0: 14.062 GB/s\n\t Link 1: 14.062 GB/s\n\t Link 2: 14.062 GB/s\n"
      "\t Link 3: 14.062 GB/s\n"
      "GPU 2: NVIDIA RTX A6000 (UUID: GPU-00000000-0000-0000-0000-000000000002)\n"
      "NVML: Unable to retrieve NVLink information as all links are inActive\n");
  REQUIRE(a6000.size() == 3);
  CHECK(a6000[0].bytes_per_second == 4 * 14062000000);
  CHECK(a6000[1].bytes_per_second == 4 * 14062000000);
  CHECK_FALSE(a6000[2].bytes_per_second);
  std::vector<NvlinkCapacity> pcie =
      read_nvlink_status("GPU 0: NVIDIA A100-PCIE-40GB (UUID: GPU-0)\n"
                         "NVML: Unable to retrieve NVLink information as all links are inActive\n"
                         "GPU 1: NVIDIA A100-PCIE-40GB (UUID: GPU-1)\n"
                         "NVML: Unable to retrieve NVLink information as all links are inActive\n");
  REQUIRE(pcie.size() == 2);
  CHECK(nvlink_capacity_notices(pcie) ==
        std::vector<std::string>{"GPUs 0, 1: nvlink -s says \"NVML: Unable to retrieve Nvlink "
                                 "information as all links are inActive\""});
  // Each GPU attached by UUID: the MIG one unknown, never another's figure.
  Snapshot snapshot = test::quiet_machine(8);
  attach_nvlink_capacity(snapshot, read_nvlink_status(fixture(
                                       "nvlink/handmade-h100-8gpu-gpu3-mig-nvlink-status.txt")));
  for (const Gpu &gpu : snapshot.gpus)
    CHECK(gpu.nvlink_bandwidth_bytes_per_second.has_value() == (gpu.index != 3));
}

TEST_CASE("nvlink -s: the notices are bounded: each reason once, 8 GPUs named, 4 reasons") {
  std::string text;
  for (int g = 0; g < 20; ++g)
    text += "GPU " + std::to_string(g) + ": X (UUID: GPU-" + std::to_string(g) +
            ")\nNvlink queries are not supported for Devices in MIG mode\n";
  for (int g = 20; g < 30; ++g)
    text += "GPU " + std::to_string(g) + ": X (UUID: GPU-" + std::to_string(g) + ")\n Link 0: w" +
            std::to_string(g) + "\n";
  std::vector<std::string> notices = nvlink_capacity_notices(read_nvlink_status(text));
  REQUIRE(notices.size() == 5);
  CHECK(notices[0] == "GPUs 0, 1, 2, 3, 4, 5, 6, 7 and 12 more: nvlink -s says \"Nvlink queries "
                      "are not supported for Devices in MIG mode\"");
  CHECK_THAT(notices[1], Catch::StartsWith("GPU 20: nvlink -s line not understood: "));
  CHECK(notices[4] == "7 more GPUs without NVLink figures for other reasons");
}

TEST_CASE("nvlink -s: each GPU gets its own capacity by UUID, whatever the order") {
  Snapshot snapshot = test::quiet_machine(8);
  REQUIRE(snapshot.gpus.size() >= 2);
  snapshot.gpus[0].uuid = "GPU-first";
  snapshot.gpus[1].uuid = "GPU-second";
  std::vector<NvlinkCapacity> capacity(2);
  capacity[0].gpu_index = 0;
  capacity[0].uuid = "GPU-second";
  capacity[0].bytes_per_second = 2;
  capacity[1].gpu_index = 1;
  capacity[1].uuid = "GPU-first";
  capacity[1].bytes_per_second = 1;
  attach_nvlink_capacity(snapshot, capacity);
  CHECK(snapshot.gpus[0].nvlink_bandwidth_bytes_per_second == 1);
  CHECK(snapshot.gpus[1].nvlink_bandwidth_bytes_per_second == 2);
}

namespace {

// Two readings of an A100 machine's counters, quoted in a public script (fixtures/README.md).
std::vector<NvlinkGpuCounters> a100_reading(int which) {
  return read_nvlink_counters(
      fixture("nvlink/a100-pcie-40gb-6gpu-nvlink-throughput-" + std::to_string(which) + ".txt"));
}

// One GPU, one link, its two counters; `tx`/`rx` are the lines' values after "Data Tx: ".
std::string one_link(const std::string &tx, const std::string &rx, const std::string &gpu = "0") {
  return "GPU " + gpu + ": NVIDIA A100-SXM4-40GB (UUID: GPU-" + gpu +
         ")\n\t Link 0: Data Tx: " + tx + "\n\t Link 0: Data Rx: " + rx + "\n";
}

} // namespace

TEST_CASE("nvlink -gt d (A100-PCIE-40GB, quoted): every GPU's links, KiB read as 1024 bytes") {
  std::vector<NvlinkGpuCounters> gpus = a100_reading(1);
  REQUIRE(gpus.size() == 6);
  CHECK(gpus[0].gpu_index == 0);
  CHECK(gpus[0].uuid == "GPU-f41a1a93-42ec-1dc1-e936-03c617b58fd4");
  CHECK(gpus[5].uuid == "GPU-a5e3ac3a-6a5a-8a72-32ce-4c3ad2c74506");
  for (const NvlinkGpuCounters &gpu : gpus)
    CHECK(gpu.links.size() == 12);
  CHECK(gpus[0].links[0].link == 0);
  CHECK(gpus[0].links[0].tx_bytes == std::uint64_t(8299479) * 1024);
  CHECK(gpus[0].links[0].rx_bytes == std::uint64_t(7492431) * 1024);
  CHECK(gpus[0].links[11].link == 11);
  CHECK(gpus[0].links[11].rx_bytes == std::uint64_t(7489712) * 1024);
}

TEST_CASE("nvlink -gt d: two readings give each GPU's rates, summed over its links") {
  // The quoted readings' time apart is not known: 10 s stands in for it.
  std::vector<NvlinkRates> rates = nvlink_rates(a100_reading(1), a100_reading(2), 10);
  REQUIRE(rates.size() == 6);
  CHECK(rates[0].tx_bytes_per_second == 852158259); // 8321858 KiB more over 12 links, in 10 s
  CHECK(rates[0].rx_bytes_per_second == 844028314);
  CHECK(rates[1].tx_bytes_per_second == 860268749);
  CHECK(rates[4].rx_bytes_per_second == 844028416);
  // GPU 3 is GPU 0's peer: what one sends the other receives.
  CHECK(rates[3].rx_bytes_per_second == rates[0].tx_bytes_per_second);
  // The first reading alone gives no rate: unknown, never 0.
  for (const NvlinkRates &rate : nvlink_rates({}, a100_reading(1), 10)) {
    CHECK_FALSE(rate.rx_bytes_per_second.has_value());
    CHECK_FALSE(rate.tx_bytes_per_second.has_value());
  }
}

TEST_CASE("nvlink -gt d (H100 and H200 without NVLink peers, 580): empty output, no GPU") {
  for (const char *machine : {"nvidia-h100-80gb-hbm3__580.159.04", "nvidia-h200__580.159.04"})
    CHECK(
        read_nvlink_counters(fixture(std::string("recorded/") + machine + "/nvlink-throughput.txt"))
            .empty());
}

TEST_CASE("nvlink -gt d: a counter that goes backwards, or a GPU or link missing from one "
          "reading, makes that interval unknown, never 0 or a guess") {
  auto rates = [](const std::string &before, const std::string &after) {
    std::vector<NvlinkRates> all =
        nvlink_rates(read_nvlink_counters(before), read_nvlink_counters(after), 10);
    REQUIRE(all.size() == 1);
    return all[0];
  };
  NvlinkRates grew = rates(one_link("100 KiB", "100 KiB"), one_link("200 KiB", "150 KiB"));
  CHECK(grew.tx_bytes_per_second == 10240);
  CHECK(grew.rx_bytes_per_second == 5120);
  NvlinkRates idle = rates(one_link("100 KiB", "100 KiB"), one_link("100 KiB", "100 KiB"));
  CHECK(idle.tx_bytes_per_second == 0); // counted, and nothing moved: a true 0
  // Reset (nvlink -r) or wrapped: only the direction that went back is unknown.
  NvlinkRates reset = rates(one_link("100 KiB", "100 KiB"), one_link("5 KiB", "150 KiB"));
  CHECK_FALSE(reset.tx_bytes_per_second.has_value());
  CHECK(reset.rx_bytes_per_second == 5120);
  // A link known in one reading only.
  NvlinkRates gone = rates(one_link("100 KiB", "100 KiB"), one_link("N/A", "150 KiB"));
  CHECK_FALSE(gone.tx_bytes_per_second.has_value());
  NvlinkRates unknown = rates(one_link("N/A", "N/A"), one_link("N/A", "N/A"));
  CHECK_FALSE(unknown.tx_bytes_per_second.has_value());
  CHECK_FALSE(unknown.rx_bytes_per_second.has_value());
  // A link the first reading had and the second does not name.
  std::string two_links =
      one_link("100 KiB", "100 KiB") + "\t Link 1: Data Tx: 100 KiB\n\t Link 1: Data Rx: 100 KiB\n";
  NvlinkRates fewer = rates(two_links, one_link("200 KiB", "200 KiB"));
  CHECK_FALSE(fewer.tx_bytes_per_second.has_value());
  // A GPU the first reading did not have.
  NvlinkRates other = rates(one_link("100 KiB", "100 KiB", "1"), one_link("200 KiB", "200 KiB"));
  CHECK_FALSE(other.tx_bytes_per_second.has_value());
  // Beyond any link: 2^53 KiB in 10 s.
  NvlinkRates huge = rates(one_link("0 KiB", "0 KiB"), one_link("9007199254740992 KiB", "0 KiB"));
  CHECK_FALSE(huge.tx_bytes_per_second.has_value());
  // No time between them.
  CHECK_FALSE(nvlink_rates(read_nvlink_counters(one_link("1 KiB", "1 KiB")),
                           read_nvlink_counters(one_link("2 KiB", "2 KiB")), 0)[0]
                  .tx_bytes_per_second.has_value());
}

TEST_CASE("nvlink -gt d: text it does not understand is refused, naming the line, never guessed") {
  for (const std::string &bad : {
           one_link("12 MiB", "1 KiB"),                                  // a unit it does not know
           one_link("12 kib", "1 KiB"),                                  // nor in other letters
           one_link("12", "1 KiB"),                                      // no unit
           one_link("-12 KiB", "1 KiB"),                                 // negative
           one_link("1.5 KiB", "1 KiB"),                                 // not whole
           one_link("0x10 KiB", "1 KiB"),                                // not decimal
           one_link(" KiB", "1 KiB"),                                    // no number
           one_link("9007199254740993 KiB", "1 KiB"),                    // past 2^53 KiB
           one_link("99999999999999999999999 KiB", "1 KiB"),             // past 64 bits
           one_link("1 KiB", "1 KiB") + "\t Link 0: Data Tx: 2 KiB\n",   // a counter twice
           one_link("1 KiB", "1 KiB") + one_link("1 KiB", "1 KiB"),      // a GPU twice
           std::string("\t Link 0: Data Tx: 1 KiB\n"),                   // a link before any GPU
           std::string("GPU x: A100 (UUID: GPU-0)\n"),                   // an index not a number
           std::string("GPU 1024: A100 (UUID: GPU-0)\n"),                // past the indexes kept
           one_link("1 KiB", "1 KiB") + "\t Link 0: Raw Tx: 1 KiB\n",    // -gt r's counters
           one_link("1 KiB", "1 KiB") + std::string(100000, 'x') + "\n", // a long garbled line
       }) {
    CAPTURE(bad.substr(0, 200));
    CHECK_THROWS_AS(read_nvlink_counters(bad), ParseError);
  }
  std::string many = "GPU 0: A100 (UUID: GPU-0)\n";
  for (int link = 0; link < 65; ++link)
    many += "\t Link " + std::to_string(link) + ": Data Tx: 1 KiB\n";
  CHECK_THROWS_WITH(read_nvlink_counters(many),
                    Catch::Contains("nvlink -gt d: line not understood: \"Link 64: Data Tx"));
}

TEST_CASE("nvlink -gt d: a GPU nvidia-smi answers has no NVLink figures for has no counters; the "
          "others are read") {
  std::vector<NvlinkGpuCounters> gpus =
      read_nvlink_counters(one_link("1 KiB", "2 KiB", "0") +
                           "GPU 1: NVIDIA A100-SXM4-40GB (UUID: GPU-1)\n"
                           "Nvlink queries are not supported for Devices in MIG mode\n" +
                           one_link("3 KiB", "4 KiB", "2"));
  REQUIRE(gpus.size() == 3);
  CHECK(gpus[0].links.size() == 1);
  CHECK(gpus[1].links.empty());
  CHECK(gpus[2].links[0].rx_bytes == 4096);
  std::vector<NvlinkRates> rates = nvlink_rates(gpus, gpus, 1.0);
  CHECK_FALSE(rates[1].rx_bytes_per_second);
  // After a link, the answer is not one: refused as any line it does not understand.
  CHECK_THROWS_AS(
      read_nvlink_counters(one_link("1 KiB", "2 KiB") + "Device does not have or support Nvlink\n"),
      ParseError);
}

TEST_CASE("nvlink -gt d: the rates fill only GPUs with an active link and no NVLink figure of "
          "dmon's") {
  Snapshot snapshot = test::quiet_machine(3);
  for (int g = 0; g < 3; ++g)
    snapshot.gpus[g].uuid = "GPU-" + std::to_string(g);
  snapshot.gpus[0].nvlink_bandwidth_bytes_per_second = 300000000000; // counters fill it
  snapshot.gpus[1].nvlink_bandwidth_bytes_per_second = 300000000000; // dmon's figures stay
  snapshot.gpus[1].nvlink_rx_bytes_per_second = 7;
  snapshot.gpus[1].nvlink_tx_bytes_per_second = 8;
  // GPU 2: no active link: left unknown.
  CHECK(wants_nvlink_counters(snapshot));
  std::vector<NvlinkRates> rates(3);
  for (int g = 0; g < 3; ++g) {
    rates[g].gpu_index = 2 - g; // another order, matched by UUID
    rates[g].uuid = "GPU-" + std::to_string(2 - g);
    rates[g].rx_bytes_per_second = 1000 + g;
    rates[g].tx_bytes_per_second = 2000 + g;
  }
  attach_nvlink_rates(snapshot, rates);
  CHECK(snapshot.gpus[0].nvlink_rx_bytes_per_second == 1002);
  CHECK(snapshot.gpus[0].nvlink_tx_bytes_per_second == 2002);
  CHECK(snapshot.gpus[1].nvlink_rx_bytes_per_second == 7);
  CHECK(snapshot.gpus[1].nvlink_tx_bytes_per_second == 8);
  CHECK_FALSE(snapshot.gpus[2].nvlink_rx_bytes_per_second.has_value());
  Snapshot covered = test::quiet_machine(1);
  covered.gpus[0].nvlink_bandwidth_bytes_per_second = 1;
  covered.gpus[0].nvlink_rx_bytes_per_second = 0;
  covered.gpus[0].nvlink_tx_bytes_per_second = 0;
  CHECK_FALSE(wants_nvlink_counters(covered));
}

} // namespace test_nvlink_status
