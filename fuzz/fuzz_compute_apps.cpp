// The compute-apps reader on any bytes, and what it reads attached to a sample and formatted.
#include "check_output.hpp"

#include "nvsmi/compute_apps.hpp"
#include "nvsmi/quantity.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  std::string_view input(reinterpret_cast<const char *>(data), size);
  std::vector<nvsmi::ComputeApp> apps;
  try {
    apps = nvsmi::read_compute_apps(input);
  } catch (const nvsmi::ParseError &) {
    return 0;
  }
  for (const nvsmi::ComputeApp &app : apps)
    if ((app.pid && *app.pid < 0) || (app.used_memory_mib && *app.used_memory_mib < 0)) {
      std::fprintf(stderr, "a negative pid or memory was accepted\n");
      std::abort();
    }
  // One GPU that the first app names, so that attaching has something to match; one without uuid.
  nvsmi::Snapshot snapshot;
  snapshot.gpus.resize(2);
  snapshot.gpus[0].uuid = apps.empty() ? std::nullopt : apps.front().gpu_uuid;
  snapshot.gpus[1].index = 1;
  nvsmi::attach_compute_apps(snapshot, apps);
  if (snapshot.gpus[1].processes) {
    std::fprintf(stderr, "a GPU without uuid was given processes\n");
    std::abort();
  }
  fuzz::check_formats(snapshot);
  return 0;
}
