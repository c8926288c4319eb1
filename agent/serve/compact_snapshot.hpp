// A Snapshot as serve's history keeps it: readings as plain numbers with a bit for "known", and
// each text shared with the sample before when it has not changed (GPU names, UUIDs, process
// names rarely do). An 8-GPU sample costs about 2.5 KB instead of the 25 KB its rendered bodies
// took, and turns back into the same Snapshot, so the history is still served by format_json.
#pragma once

#include "nvsmi/snapshot.hpp"

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace nvsmi {

using SharedText = std::shared_ptr<const std::string>; // null for unknown

// Whole-number readings in a fixed order, known where their bit in `known` is set.
template <std::size_t N> struct PackedReadings {
  std::array<std::int64_t, N> values{};
  std::uint32_t known = 0;
};

struct CompactProcess {
  // pid, used memory, GPU and compute instance ids, SM and memory utilization, uid, host memory
  PackedReadings<8> numbers;
  double cpu_percent = 0; // NaN where unknown
  // type, name, user, command, started, container, pod_uid, slurm_job_id, systemd_unit
  std::array<SharedText, 9> texts;
};

struct CompactGpu {
  int index = 0;
  SharedText uuid, name, pci_bus_id, pstate;
  PackedReadings<11> numbers;    // temperature, memory, utilization, fan, clocks
  std::array<double, 2> power{}; // draw and limit, NaN where unknown
  std::int8_t mig_enabled = -1;  // -1 unknown, else 0 or 1
  std::optional<std::vector<PackedReadings<6>>> mig_devices;
  std::optional<std::vector<CompactProcess>> processes;
  std::optional<std::vector<SharedText>> clock_event_reasons_active;
  std::vector<std::pair<SharedText, SharedText>> extras; // name, value
};

struct CompactHost {
  SharedText hostname;
  PackedReadings<3> numbers;     // CPU count, memory total and used
  std::array<double, 2> reals{}; // CPU percent and load, NaN where unknown
};

struct CompactSnapshot {
  Source source = Source::xml;
  std::optional<Timestamp> timestamp;
  SharedText driver_version, cuda_version;
  std::vector<CompactGpu> gpus;
  std::optional<CompactHost> host;
};

// `snapshot` packed, sharing each text that equals the one in the same place of `previous`.
// `new_text_bytes` grows by what the texts it had to allocate cost.
CompactSnapshot compact(const Snapshot &snapshot, const CompactSnapshot *previous,
                        std::size_t &new_text_bytes);
Snapshot expand(const CompactSnapshot &compact);

// The heap the sample's own structures take (its texts aside), allocator overhead included.
std::size_t own_bytes(const CompactSnapshot &sample);
// What its texts give back when `sample` is freed: those no other sample shares.
std::size_t text_bytes_freed_by(const CompactSnapshot &sample);

} // namespace nvsmi
