#include "nvsmi/nvlink_status.hpp"
#include "nvsmi/quantity.hpp"
#include "snapshot_builders.hpp"
#include "support.hpp"

#include <catch2/catch.hpp>

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

TEST_CASE("nvlink -s: text it does not understand is refused, naming the line, never guessed") {
  const char *hostile[] = {
      "Link 0: 26.562 GB/s\n", // a link before any GPU
      "GPU 0: X (UUID: GPU-a)\n Link 0: fast\n",
      "GPU 0: X (UUID: GPU-a)\n Link 0: 26.562 Gb/s\n",
      "GPU 0: X (UUID: GPU-a)\n Link 0: 26.562 MB/s\n",
      "GPU 0: X (UUID: GPU-a)\n Link 0: 0 GB/s\n",
      "GPU 0: X (UUID: GPU-a)\n Link 0: -5 GB/s\n",
      "GPU 0: X (UUID: GPU-a)\n Link 0: nan GB/s\n",
      "GPU 0: X (UUID: GPU-a)\n Link 0: inf GB/s\n",
      "GPU 0: X (UUID: GPU-a)\n Link 0: 1e300 GB/s\n",
      "GPU 0: X (UUID: GPU-a)\n Link x: 26.562 GB/s\n",
      "GPU x: X (UUID: GPU-a)\n",
      "GPU -1: X (UUID: GPU-a)\n",
      "NVLink is not supported on this system\n",
      "GPU 0: X (UUID: GPU-a)\n\xff\xfe Link 0: 26.562 GB/s\n",
  };
  for (const char *text : hostile) {
    INFO(text);
    CHECK_THROWS_AS(read_nvlink_status(text), ParseError);
  }
  // Many links of a garbled speed would overflow the sum: refused, not wrapped.
  std::string many = "GPU 0: X (UUID: GPU-a)\n";
  for (int link = 0; link < 5000; ++link)
    many += " Link " + std::to_string(link) + ": 99999 GB/s\n";
  CHECK_THROWS_AS(read_nvlink_status(many), ParseError);
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
