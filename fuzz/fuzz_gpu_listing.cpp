// The `nvidia-smi -L` reader on any bytes, and what it reads joined to a sample with MIG devices
// and formatted.
#include "check_output.hpp"

#include "nvsmi/gpu_listing.hpp"
#include "nvsmi/quantity.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  std::string_view input(reinterpret_cast<const char *>(data), size);
  std::vector<nvsmi::ListedGpu> listing;
  try {
    listing = nvsmi::read_gpu_listing(input);
  } catch (const nvsmi::ParseError &) {
    return 0;
  }
  // A GPU as the first listed one (its UUID), with two MIG devices of instance ids 1/0 and 2/0,
  // so that the join has something to match; a second GPU without MIG devices.
  nvsmi::Snapshot snapshot;
  snapshot.gpus.resize(2);
  snapshot.gpus[0].uuid = listing.empty() ? std::nullopt : listing.front().uuid;
  snapshot.gpus[0].mig_devices.emplace(2);
  for (std::int64_t i = 0; i < 2; ++i) {
    nvsmi::MigDevice &device = (*snapshot.gpus[0].mig_devices)[static_cast<std::size_t>(i)];
    device.index = i;
    device.gpu_instance_id = i + 1;
    device.compute_instance_id = 0;
  }
  snapshot.gpus[1].index = 1;
  std::size_t attached = nvsmi::attach_gpu_listing(snapshot, listing);
  std::size_t with_uuid = 0;
  for (const nvsmi::MigDevice &device : *snapshot.gpus[0].mig_devices)
    with_uuid += device.uuid ? 1 : 0;
  if (attached != with_uuid || snapshot.gpus[1].mig_devices) {
    std::fprintf(stderr, "the join's count disagrees, or a GPU without devices got some\n");
    std::abort();
  }
  fuzz::check_formats(snapshot);
  return 0;
}
