#include "host/procps_library.hpp"

#include "core/log_line.hpp"

#include <dlfcn.h>
#include <optional>
#include <string>

namespace nvsmi {
namespace {

// The library's soname: the ABI that libproc2-dev's headers describe (the package's Depends).
constexpr const char *library = "libproc2.so.0";

template <typename Function> bool resolve(void *handle, const char *name, Function &target) {
  target = reinterpret_cast<Function>(::dlsym(handle, name));
  if (!target)
    log_line(std::string("host readings unknown: ") + library + " has no " + name);
  return target != nullptr;
}

std::optional<Procps> load() {
  // Never closed: the readers keep libproc2's objects until the end of the run.
  void *handle = ::dlopen(library, RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *why = ::dlerror();
    log_line(std::string("host readings unknown: cannot load ") + library + ": " +
             (why ? why : "(no reason given)"));
    return std::nullopt;
  }
  Procps functions{};
  bool found = resolve(handle, "procps_hertz_get", functions.hertz_get) &&
               resolve(handle, "procps_pids_new", functions.pids_new) &&
               resolve(handle, "procps_pids_select", functions.pids_select) &&
               resolve(handle, "procps_pids_unref", functions.pids_unref) &&
               resolve(handle, "procps_stat_new", functions.stat_new) &&
               resolve(handle, "procps_stat_select", functions.stat_select) &&
               resolve(handle, "procps_stat_unref", functions.stat_unref) &&
               resolve(handle, "procps_meminfo_new", functions.meminfo_new) &&
               resolve(handle, "procps_meminfo_select", functions.meminfo_select) &&
               resolve(handle, "procps_meminfo_unref", functions.meminfo_unref);
  if (!found)
    return std::nullopt;
  return functions;
}

} // namespace

const Procps *procps() {
  static const std::optional<Procps> loaded = load();
  return loaded ? &*loaded : nullptr;
}

} // namespace nvsmi
