// `nvidia-smi -L` (nvsmi/gpu_listing.hpp) on listings quoted from public issue threads, each
// named where it is, and on lines no driver prints.
#include "nvsmi/gpu_listing.hpp"
#include "nvsmi/gpu_state.hpp"
#include "nvsmi/nvidia_smi_output.hpp"
#include "nvsmi/quantity.hpp"
#include "support.hpp"

#include <catch2/catch.hpp>

namespace test_gpu_listing {

using namespace nvsmi;

TEST_CASE("nvidia-smi -L: GPUs with and without MIG devices, each device's profile and UUID") {
  // influxdata/telegraf#5812 (2023-08-04): 4 A100-SXM4-80GB, MIG on GPU 0 only.
  std::vector<ListedGpu> gpus = read_gpu_listing(
      "GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-513536b6-7d19-9063-b049-1e69664bb298)\n"
      "  MIG 1g.20gb     Device  0: (UUID: MIG-ce861fb0-a248-58ce-a9a8-f9adbc22a66a)\n"
      "  MIG 1g.20gb     Device  1: (UUID: MIG-a45882f0-9215-5733-a0c1-49286ab31cb5)\n"
      "  MIG 1g.20gb     Device  2: (UUID: MIG-f00d722c-f4e1-52c9-aa31-750441ae1bfe)\n"
      "  MIG 1g.20gb     Device  3: (UUID: MIG-930574a9-d43a-5d2b-95da-3e68384c8d6b)\n"
      "GPU 1: NVIDIA A100-SXM4-80GB (UUID: GPU-d8594bd4-0fc3-8595-e355-7c98138f3b95)\n"
      "GPU 2: NVIDIA A100-SXM4-80GB (UUID: GPU-5e375e7e-b41f-155b-dcdc-534524c356fc)\n"
      "GPU 3: NVIDIA A100-SXM4-80GB (UUID: GPU-69ec2344-ebac-b028-f88f-452abb3d7f11)\n");
  REQUIRE(gpus.size() == 4);
  CHECK(gpus[0].index == 0);
  CHECK(gpus[0].name == "NVIDIA A100-SXM4-80GB");
  CHECK(gpus[0].uuid == "GPU-513536b6-7d19-9063-b049-1e69664bb298");
  REQUIRE(gpus[0].migs.size() == 4);
  for (int d = 0; d < 4; ++d) {
    CHECK(gpus[0].migs[d].device == d);
    CHECK(gpus[0].migs[d].profile == "1g.20gb");
    // The newer UUID form carries no instance ids: they stay unknown.
    CHECK_FALSE(gpus[0].migs[d].gpu_instance_id);
    CHECK_FALSE(gpus[0].migs[d].compute_instance_id);
  }
  CHECK(gpus[0].migs[3].uuid == "MIG-930574a9-d43a-5d2b-95da-3e68384c8d6b");
  CHECK(gpus[3].index == 3);
  CHECK(gpus[3].uuid == "GPU-69ec2344-ebac-b028-f88f-452abb3d7f11");
  for (int g = 1; g < 4; ++g)
    CHECK(gpus[g].migs.empty());
}

TEST_CASE("nvidia-smi -L: two 3g.40gb devices (driver 530) and seven 1g.10gb (driver 535)") {
  // NVIDIA/nvidia-container-toolkit#203 (2024-01-08).
  std::vector<ListedGpu> two = read_gpu_listing(
      "GPU 0: NVIDIA A100 80GB PCIe (UUID: GPU-932bfb2c-849a-2a22-1e84-9eff6bc02b39)\n"
      "  MIG 3g.40gb     Device  0: (UUID: MIG-0929581a-2be6-5dec-bf34-0954c6c529a6)\n"
      "  MIG 3g.40gb     Device  1: (UUID: MIG-3adbed3a-d03d-549f-a016-ba1fd7359f23)\n");
  REQUIRE(two.size() == 1);
  CHECK(two[0].name == "NVIDIA A100 80GB PCIe");
  REQUIRE(two[0].migs.size() == 2);
  CHECK(two[0].migs[1].profile == "3g.40gb");
  CHECK(two[0].migs[1].uuid == "MIG-3adbed3a-d03d-549f-a016-ba1fd7359f23");
  // DataDog/datadog-agent#33120 (2025-01-20), the first two and the last of its seven.
  std::vector<ListedGpu> seven = read_gpu_listing(
      "GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-7fdaf0a5-179b-f636-d15d-daf243e3ff16)\n"
      "  MIG 1g.10gb     Device  0: (UUID: MIG-feb88891-0321-5fef-9c87-d4af3b54259e)\n"
      "  MIG 1g.10gb     Device  1: (UUID: MIG-a25704ba-3a06-5299-a795-fd7cf4d13973)\n"
      "  MIG 1g.10gb     Device  6: (UUID: MIG-1aae4990-b962-574e-8375-119d6d9b9687)\n"
      "\n");
  REQUIRE(seven.size() == 1);
  REQUIRE(seven[0].migs.size() == 3);
  CHECK(seven[0].migs[2].device == 6);
  CHECK(seven[0].migs[2].uuid == "MIG-1aae4990-b962-574e-8375-119d6d9b9687");
}

TEST_CASE("nvidia-smi -L: drivers before 470 name a MIG device by its GPU and instance ids") {
  // The UUID as NVIDIA/nvidia-container-toolkit#203 passes it to nvidia-container-cli; the
  // line around it as the newer drivers print theirs.
  std::vector<ListedGpu> gpus = read_gpu_listing(
      "GPU 0: NVIDIA A100 80GB PCIe (UUID: GPU-932bfb2c-849a-2a22-1e84-9eff6bc02b39)\n"
      "  MIG 3g.40gb Device 0: (UUID: MIG-GPU-932bfb2c-849a-2a22-1e84-9eff6bc02b39/1/0)\n");
  REQUIRE(gpus.at(0).migs.size() == 1);
  const ListedMig &mig = gpus[0].migs[0];
  CHECK(mig.uuid == "MIG-GPU-932bfb2c-849a-2a22-1e84-9eff6bc02b39/1/0");
  CHECK(mig.gpu_instance_id == 1);
  CHECK(mig.compute_instance_id == 0);
}

TEST_CASE("nvidia-smi -L: a line of neither kind, or a device before any GPU, is refused by "
          "name, printable; a GPU without a UUID keeps it unknown") {
  for (const char *text :
       {"  MIG 1g.10gb     Device  0: (UUID: MIG-x)\n", "GPU x: NVIDIA H100 (UUID: GPU-1)\n",
        "GPU 0: NVIDIA H100 (UUID: GPU-1)\n  MIG 1g.10gb Device zero: (UUID: MIG-x)\n",
        "GPU 0: NVIDIA H100 (UUID: GPU-1)\n  MIG 1g.10gb (UUID: MIG-x)\n",
        "GPU 0: NVIDIA H100 (UUID: GPU-1)\n\x1b]0;owned\x07 No devices were found\n"}) {
    INFO(text);
    try {
      read_gpu_listing(text);
      FAIL("read");
    } catch (const ParseError &error) {
      std::string said = error.what();
      CHECK(said.find("nvidia-smi -L: line not understood") == 0);
      CHECK(said.find('\x1b') == std::string::npos);
    }
  }
  std::vector<ListedGpu> bare = read_gpu_listing("GPU 0: NVIDIA H100 80GB HBM3\n");
  REQUIRE(bare.size() == 1);
  CHECK(bare[0].name == "NVIDIA H100 80GB HBM3");
  CHECK_FALSE(bare[0].uuid);
}

namespace {

Snapshot a100_mig() {
  return read_nvidia_smi_output(test::read_file(test::fixture_path("xml/a100-mig-v12.xml")));
}

std::vector<ListedGpu> a100_listing() {
  return read_gpu_listing(test::read_file(test::fixture_path("listing/a100-mig-3g-2g.txt")));
}

} // namespace

TEST_CASE("-L joined to -q -x: each MIG device gets its UUID and profile by GPU and device index") {
  Snapshot snapshot = a100_mig();
  CHECK(attach_gpu_listing(snapshot, a100_listing()) == 2);
  const std::vector<MigDevice> &devices = snapshot.gpus.at(0).mig_devices.value();
  REQUIRE(devices.size() == 2);
  CHECK(devices[0].uuid == "MIG-00000000-0000-0000-0000-0000000000b0");
  CHECK(devices[0].profile == "3g.40gb");
  CHECK(devices[1].uuid == "MIG-00000000-0000-0000-0000-0000000000b1");
  CHECK(devices[1].profile == "2g.20gb");
  // Another machine's listing (another GPU UUID) names none of them: nothing is given.
  Snapshot other = a100_mig();
  CHECK(attach_gpu_listing(
            other, read_gpu_listing("GPU 0: NVIDIA A100 80GB PCIe (UUID: GPU-932bfb2c)\n"
                                    "  MIG 3g.40gb Device 0: (UUID: MIG-0929581a)\n")) == 0);
  CHECK_FALSE(other.gpus[0].mig_devices->at(0).uuid);
  // An older UUID whose instance ids disagree with the XML's is a layout changed between the
  // reads: the device keeps its UUID unknown rather than another instance's.
  Snapshot changed = a100_mig();
  CHECK(
      attach_gpu_listing(
          changed, read_gpu_listing("GPU 0: A100 (UUID: GPU-00000000-0000-0000-0000-0000000000a1)\n"
                                    "  MIG 3g.40gb Device 0: (UUID: MIG-GPU-x/2/0)\n"
                                    "  MIG 3g.40gb Device 1: (UUID: MIG-GPU-x/2/0)\n")) == 1);
  CHECK_FALSE(changed.gpus[0].mig_devices->at(0).uuid);
  CHECK(changed.gpus[0].mig_devices->at(1).uuid == "MIG-GPU-x/2/0");
}

TEST_CASE("a MIG instance's state: in use by its own processes, free without, unknown without a "
          "process list; the GPU's lost or failing is its instances'") {
  Snapshot snapshot = a100_mig();
  const Gpu &gpu = snapshot.gpus.at(0);
  const std::vector<MigDevice> &devices = gpu.mig_devices.value();
  // The recording's one process (pid 3131) is on GPU instance 2, compute instance 0: device 1.
  CHECK(mig_state(gpu, devices[0]) == GpuState::free);
  CHECK(mig_state(gpu, devices[1]) == GpuState::in_use);
  CHECK(instance_processes(gpu, devices[0]).value().empty());
  REQUIRE(instance_processes(gpu, devices[1]).value().size() == 1);
  CHECK(instance_processes(gpu, devices[1])->at(0)->pid == 3131);
  // The GPU's own utilization is N/A: unknown, never 0, and its processes make it in use.
  CHECK_FALSE(gpu.utilization_gpu_percent);
  CHECK(gpu_state(gpu) == GpuState::in_use);

  Gpu unlisted = gpu;
  unlisted.processes.reset();
  CHECK(mig_state(unlisted, devices[0]) == GpuState::unknown);
  Gpu graphics = gpu;
  graphics.processes->at(0).type = "G";
  CHECK(mig_state(graphics, devices[1]) == GpuState::free);
  Gpu lost = gpu;
  lost.lost_reason = "GPU is lost";
  CHECK(mig_state(lost, devices[0]) == GpuState::lost);
  // A compute process that names no instance could be on any: the others are unknown, never free.
  Gpu unplaced = gpu;
  unplaced.processes->push_back(gpu.processes->at(0));
  unplaced.processes->back().gpu_instance_id.reset();
  CHECK(mig_state(unplaced, devices[0]) == GpuState::unknown);
  CHECK(mig_state(unplaced, devices[1]) == GpuState::in_use);
  CHECK_FALSE(instance_processes(unplaced, devices[0]));
  // A failing GPU's instances are failing: they share its memory.
  Gpu failing = gpu;
  failing.health.recovery_action = "GPU Reset Required";
  CHECK(mig_state(failing, devices[0]) == GpuState::failing);
  MigDevice no_ids = devices[0];
  no_ids.compute_instance_id.reset();
  CHECK(mig_state(gpu, no_ids) == GpuState::unknown);
}

} // namespace test_gpu_listing
