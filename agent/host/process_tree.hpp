// Where a process sits among the others: its ancestors and its cgroup, from /proc, for telling a
// job's GPU processes (its descendants, or those in its cgroup) from everyone else's.
#pragma once

#include <optional>
#include <string>
#include <sys/types.h>
#include <vector>

namespace nvsmi {

// The chain of parents of `pid`, nearest first, ending before pid 1 or 0, at most `max_depth`
// long (a chain read while processes come and go could otherwise loop). Empty when `pid` is not
// visible here or has gone.
std::vector<pid_t> process_ancestors(pid_t pid, std::size_t max_depth = 64);

// Whether `ancestor` is `pid` itself or among its ancestors.
bool descends_from(pid_t pid, pid_t ancestor);

// The unified (cgroup v2) path of `pid` ("/user.slice/user-1000.slice/session-4.scope"), else
// the whole text of /proc/PID/cgroup for cgroup v1; nullopt when it cannot be read.
std::optional<std::string> process_cgroup(pid_t pid);

} // namespace nvsmi
