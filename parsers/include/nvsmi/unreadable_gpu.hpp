// What nvidia-smi prints for a GPU it cannot read while it reads the others
// (docs/research/fleet-health.md, section 10), e.g.
//   Unable to determine the device handle for GPU 0000:0B:00.0: Unknown Error
//   Unable to determine the device handle for gpu 0000:18:00.0: Unknown Error
//   Unable to determine the device handle for GPU0000:07:00.0: Unknown Error
//   Unable to determine the device handle for GPU0: 0000:24:00.0: GPU is lost.  Reboot the
//   system...
// on stderr (XML) or among the rows (CSV).
#pragma once

#include "nvsmi/snapshot.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace nvsmi {

struct UnreadableGpu {
  std::string pci_bus_id;   // as printed ("0000:0B:00.0")
  std::optional<int> index; // where the message gives it ("GPU0: ...")
  std::string reason;       // "Unknown Error", "GPU is lost" (the advice after it dropped)
};

// nullopt for any other line.
std::optional<UnreadableGpu> parse_unreadable_gpu_line(std::string_view line);

// Every such line in `text` (nvidia-smi's stderr, or its whole output), in order, each bus id once.
std::vector<UnreadableGpu> find_unreadable_gpus(std::string_view text);

// Where nvidia-smi prints such lines before the rest of its output (on stdout, before the XML):
// `text` from its first line that is neither blank nor one of them (trimmed; empty when there is
// none), each of those lines' GPUs added to `found` where it is given.
std::string_view after_unreadable_gpu_lines(std::string_view text,
                                            std::vector<UnreadableGpu> *found = nullptr);

// Puts each unreadable GPU into the snapshot, marked (Gpu::lost_reason), unless a GPU of the same
// bus id is there, which is then marked instead. For an XML snapshot, whose indices are positions,
// the new GPU goes in bus-id order and every index is renumbered by position, since nvidia-smi
// numbers GPUs in that order; for CSV the index is the message's, else the lowest no GPU has
// (where its row would have been; one past the highest when there is no gap).
void add_unreadable_gpus(Snapshot &snapshot, const std::vector<UnreadableGpu> &gpus);

} // namespace nvsmi
