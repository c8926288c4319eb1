#include "nvsmi/gpu_state.hpp"
#include "nvsmi/health_memory.hpp"
#include "nvsmi/xml_reader.hpp"
#include "snapshot_builders.hpp"
#include "support.hpp"

#include <catch2/catch.hpp>

namespace test_gpu_state {

using namespace nvsmi;

namespace {

Gpu gpu_with(Reading utilization, std::optional<std::vector<Process>> processes) {
  Gpu gpu;
  gpu.utilization_gpu_percent = utilization;
  gpu.processes = std::move(processes);
  gpu.temperature_c = 40;
  gpu.power_draw_w = 100;
  gpu.power_limit_w = 700;
  return gpu;
}

Process process_of_type(const char *type) {
  Process process;
  process.pid = 1;
  process.type = type;
  return process;
}

} // namespace

TEST_CASE("the states fixture has one GPU in each state the views show") {
  Snapshot s = test::xml_fixture("xml/h100-8gpu-states-v12.xml");
  std::vector<std::string> words;
  for (const Gpu &gpu : s.gpus)
    words.emplace_back(gpu_state_name(gpu_state(gpu)));
  CHECK(words == std::vector<std::string>{"free", "in use", "hot", "idle but held", "free",
                                          "at power limit", "in use", "free"});
}

TEST_CASE("free needs a known, empty process list and utilization under the threshold") {
  CHECK(gpu_state(gpu_with(4, std::vector<Process>{})) == GpuState::free);
  CHECK(gpu_state(gpu_with(5, std::vector<Process>{})) == GpuState::in_use);
  CHECK(gpu_state(gpu_with(4, std::nullopt)) == GpuState::idle);
  CHECK(gpu_state(gpu_with(4, std::vector<Process>{process_of_type("C")})) == GpuState::idle_held);
  CHECK(gpu_state(gpu_with(4, std::vector<Process>{process_of_type("C+G")})) ==
        GpuState::idle_held);
  // A desktop's Xorg leaves the GPU free for compute work.
  CHECK(gpu_state(gpu_with(0, std::vector<Process>{process_of_type("G")})) == GpuState::free);
  GpuStateThresholds strict;
  strict.idle_below_percent = 1;
  CHECK(gpu_state(gpu_with(4, std::vector<Process>{}), strict) == GpuState::in_use);
}

TEST_CASE("without a utilization reading the processes decide, and nothing known is unknown") {
  CHECK(gpu_state(gpu_with(std::nullopt, std::vector<Process>{})) == GpuState::free);
  CHECK(gpu_state(gpu_with(std::nullopt, std::vector<Process>{process_of_type("C")})) ==
        GpuState::in_use);
  CHECK(gpu_state(gpu_with(std::nullopt, std::nullopt)) == GpuState::unknown);
}

TEST_CASE("hot and at power limit come before what the GPU is doing") {
  Gpu hot = gpu_with(0, std::vector<Process>{});
  hot.temperature_c = 85;
  CHECK(gpu_state(hot) == GpuState::hot);
  hot.temperature_c = 84;
  CHECK(gpu_state(hot) == GpuState::free);
  Gpu capped = gpu_with(90, std::vector<Process>{process_of_type("C")});
  capped.power_draw_w = 665; // 95 % of 700
  CHECK(gpu_state(capped) == GpuState::at_power_limit);
  capped.power_limit_w.reset(); // no limit known: nothing to compare against
  CHECK(gpu_state(capped) == GpuState::in_use);
  capped.temperature_c = 90;
  capped.power_limit_w = 700;
  CHECK(gpu_state(capped) == GpuState::hot);
}

TEST_CASE("each state has a word for people and a key for machines") {
  CHECK(gpu_state_name(GpuState::idle_held) == "idle but held");
  CHECK(gpu_state_key(GpuState::idle_held) == "idle_but_held");
  CHECK(gpu_state_key(GpuState::at_power_limit) == "at_power_limit");
  CHECK(gpu_state_name(GpuState::unknown) == "unknown");
}

TEST_CASE("the fleet summary counts each state and names who holds the idle GPUs") {
  Snapshot s = test::xml_fixture("xml/h100-8gpu-states-v12.xml");
  // A recording from another machine: its pids are not ours, so no user is known.
  CHECK(
      fleet_summary_text(fleet_summary(s)) ==
      "8 GPUs: 3 free \u00b7 2 in use \u00b7 1 idle but held \u00b7 1 at power limit \u00b7 1 hot");

  auto held_by = [](const char *user) {
    Process process = process_of_type("C");
    process.user = user;
    return process;
  };
  Snapshot fleet;
  fleet.gpus.push_back(gpu_with(0, std::vector<Process>{held_by("nobody"), held_by("alice")}));
  fleet.gpus.push_back(gpu_with(1, std::vector<Process>{held_by("alice"), held_by("bob")}));
  fleet.gpus.push_back(gpu_with(2, std::vector<Process>{held_by("carol"), process_of_type("C")}));
  fleet.gpus.push_back(gpu_with(90, std::vector<Process>{held_by("dave")})); // in use: not named
  fleet.gpus.push_back(gpu_with(std::nullopt, std::nullopt));
  fleet.gpus.back().lost_reason = "GPU is lost";
  FleetSummary summary = fleet_summary(fleet);
  CHECK(summary.of(GpuState::idle_held) == 3);
  CHECK(summary.idle_holders == std::vector<std::string>{"nobody", "alice", "bob", "carol"});
  CHECK(fleet_summary_text(summary) == "5 GPUs: 1 in use \u00b7 3 idle but held (nobody, alice, "
                                       "bob, +1 more) \u00b7 1 lost");

  Snapshot one;
  one.gpus.push_back(gpu_with(0, std::vector<Process>{}));
  CHECK(fleet_summary_text(fleet_summary(one)) == "1 GPU: 1 free");
  CHECK(fleet_summary_text(fleet_summary(Snapshot{})) == "no GPUs");
}

TEST_CASE("the fleet summary of several hosts says how many and which of them are without a fresh "
          "sample") {
  Snapshot eight = test::xml_fixture("xml/h100-8gpu-states-v12.xml");
  FleetSummary fleet;
  for (int host = 0; host < 2; ++host) {
    FleetSummary one = fleet_summary(eight);
    one.hosts = 1;
    fleet.add(one);
  }
  CHECK(fleet.gpus == 16);
  CHECK(fleet.of(GpuState::free) == 6);
  CHECK(fleet_summary_text(fleet) == "16 GPUs on 2 hosts: 6 free \u00b7 4 in use \u00b7 2 idle but "
                                     "held \u00b7 2 at power limit \u00b7 2 hot");
  // A host without a fresh sample: its GPUs as last seen count, in no state.
  FleetSummary silent;
  silent.hosts = 1;
  silent.silent_hosts = 1;
  silent.silent_gpus = silent.gpus = 8;
  fleet.add(silent);
  CHECK(fleet_summary_text(fleet) ==
        "24 GPUs on 3 hosts: 6 free \u00b7 4 in use \u00b7 2 idle but held \u00b7 2 at power limit "
        "\u00b7 2 hot \u00b7 8 on 1 host without a fresh sample");

  // Holders are named once however many hosts they hold GPUs on.
  FleetSummary a, b;
  a.idle_holders = {"alice", "bob"};
  b.idle_holders = {"bob", "carol"};
  a.add(b);
  CHECK(a.idle_holders == std::vector<std::string>{"alice", "bob", "carol"});

  FleetSummary empty;
  empty.hosts = 2;
  CHECK(fleet_summary_text(empty) == "no GPUs on 2 hosts");
  FleetSummary none_answering;
  none_answering.hosts = none_answering.silent_hosts = 1;
  CHECK(fleet_summary_text(none_answering) == "0 GPUs on 1 host: 1 host without a fresh sample");
}

TEST_CASE(
    "the fleet summary with MIG counts what a job is given: each instance in place of its GPU, "
    "and the GPUs without MIG") {
  // The A100 recording: MIG instance 0 free, instance 1 (GPU instance 2) held by a process.
  Snapshot a100 = test::xml_fixture("xml/a100-mig-v12.xml");
  FleetSummary mig = fleet_summary(a100);
  CHECK(mig.gpus == 1);
  CHECK(mig.mig_instances == 2);
  CHECK(fleet_summary_text(mig) == "1 GPU, 2 MIG instances: 1 free \u00b7 1 in use");

  // Beside eight H100s without MIG: 9 GPUs, whose states are the 8's and the 2 instances'.
  Snapshot mixed = test::xml_fixture("xml/h100-8gpu-states-v12.xml");
  mixed.gpus.push_back(a100.gpus.front());
  CHECK(fleet_summary_text(fleet_summary(mixed)) ==
        "9 GPUs, 2 MIG instances: 4 free \u00b7 3 in use \u00b7 1 idle but held \u00b7 1 at power "
        "limit \u00b7 1 hot");

  // The GPU's loss or failure is its instances'; across hosts the instances add up.
  Snapshot lost = a100;
  lost.gpus.front().lost_reason = "GPU is lost";
  CHECK(fleet_summary_text(fleet_summary(lost)) == "1 GPU, 2 MIG instances: 2 lost");
  FleetSummary hosts;
  for (const Snapshot *one : {&a100, &mixed}) {
    FleetSummary each = fleet_summary(*one);
    each.hosts = 1;
    hosts.add(each);
  }
  CHECK(fleet_summary_text(hosts).rfind("10 GPUs, 4 MIG instances on 2 hosts: 5 free", 0) == 0);

  // A GPU with MIG on and no instance made yet counts as itself.
  Snapshot none = a100;
  none.gpus.front().mig_devices = std::vector<MigDevice>{};
  CHECK(fleet_summary(none).mig_instances == 0);
  CHECK(fleet_summary_text(fleet_summary(none)).rfind("1 GPU: ", 0) == 0);
}

TEST_CASE("free needs the health that decides failing known: ECC on with its count unknown is "
          "unknown, ECC off or not known is not judged on it") {
  Gpu gpu = gpu_with(0, std::vector<Process>{});
  gpu.health.ecc_enabled = true;
  CHECK(gpu_state(gpu) == GpuState::unknown);
  CHECK(undecided_health(gpu) == std::string("uncorrectable ECC count unknown"));
  gpu.health.ecc_volatile.uncorrected = 0;
  CHECK(gpu_state(gpu) == GpuState::free);
  CHECK_FALSE(undecided_health(gpu));
  gpu.health.ecc_volatile.uncorrected.reset();
  gpu.health.ecc_enabled = false; // a GeForce: no ECC, nothing to know
  CHECK(gpu_state(gpu) == GpuState::free);
  gpu.health.ecc_enabled.reset();
  CHECK(gpu_state(gpu) == GpuState::free);
  // Only free is in question: a busy GPU stays in use.
  Gpu busy = gpu_with(90, std::vector<Process>{process_of_type("C")});
  busy.health.ecc_enabled = true;
  CHECK(gpu_state(busy) == GpuState::in_use);
}

TEST_CASE("health memory: a failing GPU stays failing as of its last reading while the reading is "
          "unknown, until a known reading clears it") {
  auto sample = [](Reading uncorrected, int second) {
    Snapshot snapshot;
    snapshot.timestamp = Timestamp{2024, 3, 12, 14, 3, second, std::nullopt, 60};
    Gpu gpu = gpu_with(0, std::vector<Process>{});
    gpu.uuid = "GPU-0";
    gpu.health.ecc_enabled = true;
    gpu.health.ecc_volatile.uncorrected = uncorrected;
    snapshot.gpus.push_back(gpu);
    return snapshot;
  };
  HealthMemory memory;
  Snapshot counted = sample(2, 27);
  memory.carry(counted);
  CHECK(counted.gpus[0].health.earlier_faults.empty());
  CHECK(gpu_state(counted.gpus[0]) == GpuState::failing);

  for (int second : {28, 29}) { // unknown twice: still as of :27
    Snapshot unknown = sample(std::nullopt, second);
    memory.carry(unknown);
    const Gpu &gpu = unknown.gpus[0];
    CHECK(gpu_state(gpu) == GpuState::failing);
    CHECK(gpu_failure(gpu) == std::string("2 uncorrectable ECC errors as of 2024-03-12 14:03:27"));
    REQUIRE(gpu_failure_as_of(gpu));
    CHECK(gpu_failure_as_of(gpu)->second == 27);
    std::vector<GpuFault> faults = gpu_faults(unknown, 0);
    REQUIRE(faults.size() == 1);
    CHECK(faults[0].key == "ecc_uncorrected"); // the hook's key: the same fault
  }

  // A lost GPU's readings say nothing: the fault is kept for when it is read again.
  Snapshot lost = sample(std::nullopt, 30);
  lost.gpus[0].lost_reason = "GPU is lost";
  memory.carry(lost);
  CHECK(lost.gpus[0].health.earlier_faults.empty());
  Snapshot back = sample(std::nullopt, 31);
  memory.carry(back);
  CHECK(gpu_state(back.gpus[0]) == GpuState::failing);

  Snapshot cleared = sample(0, 32); // a known 0 (after a reset): clear
  memory.carry(cleared);
  CHECK(gpu_state(cleared.gpus[0]) == GpuState::free);
  Snapshot unknown_again = sample(std::nullopt, 33);
  memory.carry(unknown_again);
  CHECK(gpu_state(unknown_again.gpus[0]) == GpuState::unknown); // not failing, not free
  CHECK(memory.gpus() == 0);
}

TEST_CASE("health memory: bounded, whatever GPUs an nvidia-smi makes up") {
  HealthMemory memory;
  for (int i = 0; i < 1000; ++i) {
    Snapshot snapshot;
    Gpu gpu;
    gpu.uuid = "GPU-" + std::to_string(i);
    gpu.health.remapped_rows_pending = true;
    snapshot.gpus.push_back(gpu);
    memory.carry(snapshot);
  }
  CHECK(memory.gpus() == HealthMemory::max_gpus);
}

} // namespace test_gpu_state
