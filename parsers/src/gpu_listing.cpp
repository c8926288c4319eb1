#include "nvsmi/gpu_listing.hpp"

#include "listing_lines.hpp"
#include "nvsmi/quantity.hpp"
#include "reader_text.hpp"

#include <algorithm>

namespace nvsmi {
namespace {

[[noreturn]] void not_understood(std::string_view line) {
  throw ParseError("nvidia-smi -L: line not understood: " + excerpt(line));
}

// "MIG-GPU-<uuid>/<GI>/<CI>": the instance ids; the newer "MIG-<uuid>" has none.
void instance_ids(ListedMig &mig) {
  if (!mig.uuid || !listing_lines::starts_with(*mig.uuid, "MIG-GPU-"))
    return;
  std::string_view uuid = *mig.uuid;
  std::size_t second = uuid.rfind('/');
  std::size_t first = second == std::string_view::npos || second == 0 ? std::string_view::npos
                                                                      : uuid.rfind('/', second - 1);
  if (first == std::string_view::npos)
    return;
  std::optional<int> gi = listing_lines::whole_number(uuid.substr(first + 1, second - first - 1));
  std::optional<int> ci = listing_lines::whole_number(uuid.substr(second + 1));
  if (gi && ci) {
    mig.gpu_instance_id = *gi;
    mig.compute_instance_id = *ci;
  }
}

// "MIG 3g.40gb     Device  0: (UUID: MIG-...)"
ListedMig mig_line(std::string_view line) {
  std::string_view rest = line.substr(4);
  constexpr std::string_view device_word = "Device";
  std::size_t device = rest.find(device_word);
  if (device == std::string_view::npos)
    not_understood(line);
  ListedMig mig;
  mig.profile = parse_text(trim(rest.substr(0, device)));
  std::string_view after = rest.substr(device + device_word.size());
  std::size_t colon = after.find(':');
  std::optional<int> number = colon == std::string_view::npos
                                  ? std::nullopt
                                  : listing_lines::whole_number(trim(after.substr(0, colon)));
  if (!number)
    not_understood(line);
  mig.device = *number;
  std::string_view tail = trim(after.substr(colon + 1));
  mig.uuid = listing_lines::uuid_at_end(tail);
  instance_ids(mig);
  return mig;
}

} // namespace

std::vector<ListedGpu> read_gpu_listing(std::string_view text) {
  std::vector<ListedGpu> gpus;
  for (std::string_view line; listing_lines::next_line(text, line);) {
    if (listing_lines::starts_with(line, "GPU ")) {
      std::optional<listing_lines::GpuLine> line_read = listing_lines::gpu_line(line);
      if (!line_read)
        not_understood(line);
      ListedGpu gpu;
      gpu.index = line_read->index;
      gpu.name = std::move(line_read->name);
      gpu.uuid = std::move(line_read->uuid);
      gpus.push_back(std::move(gpu));
    } else if (listing_lines::starts_with(line, "MIG ") && !gpus.empty()) {
      gpus.back().migs.push_back(mig_line(line));
    } else {
      not_understood(line); // a MIG device before any GPU, or a line of neither kind
    }
  }
  return gpus;
}

std::size_t attach_gpu_listing(Snapshot &snapshot, const std::vector<ListedGpu> &listing) {
  std::size_t attached = 0;
  for (Gpu &gpu : snapshot.gpus) {
    if (!gpu.mig_devices)
      continue;
    auto listed = std::find_if(listing.begin(), listing.end(), [&](const ListedGpu &entry) {
      return listing_lines::same_gpu(entry.uuid, entry.index, gpu.uuid, gpu.index);
    });
    if (listed == listing.end())
      continue;
    for (MigDevice &device : *gpu.mig_devices) {
      auto mig = std::find_if(listed->migs.begin(), listed->migs.end(), [&](const ListedMig &m) {
        return device.index && *device.index == m.device;
      });
      if (mig == listed->migs.end())
        continue;
      bool disagrees =
          (mig->gpu_instance_id && mig->gpu_instance_id != device.gpu_instance_id) ||
          (mig->compute_instance_id && mig->compute_instance_id != device.compute_instance_id);
      if (disagrees || !mig->uuid)
        continue;
      device.uuid = mig->uuid;
      device.profile = mig->profile;
      ++attached;
    }
  }
  return attached;
}

} // namespace nvsmi
