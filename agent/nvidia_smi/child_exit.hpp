// Waits on an io_context for a child's end and reaps it with wait4, which, unlike Boost.Process's
// own wait, says what CPU the child used (with the children it waited for): the cost of every run
// of nvidia-smi, to its last tick, even of one that ran for a moment.
#pragma once

#include <boost/asio/io_context.hpp>

#include <functional>
#include <optional>
#include <sys/types.h>

namespace nvsmi {

struct ChildEnd {
  int status = 0;                    // as waitpid gives it
  std::optional<double> cpu_seconds; // user + system; nullopt where the kernel has no pidfd
};

// Calls `done` on `context` once `pid` (a child of this process, not waited for elsewhere) has
// ended and is reaped. Where pidfd_open is refused (a kernel before 5.3, a seccomp filter),
// `fallback` is called instead, at once: the caller then waits as it did before, without a cost.
void async_wait_child(boost::asio::io_context &context, pid_t pid,
                      std::function<void(ChildEnd)> done, const std::function<void()> &fallback);

} // namespace nvsmi
