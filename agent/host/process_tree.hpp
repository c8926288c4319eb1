// Where a process sits among the others: its ancestors, its start and its cgroup, from /proc, for
// telling a job's GPU processes (its descendants, or those in its cgroup) from everyone else's,
// and for finding what a job left running.
#pragma once

#include <cstdint>
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

// When `pid` started, in clock ticks after boot (/proc/PID/stat); nullopt when it is not visible
// here or has gone.
std::optional<std::uint64_t> process_start_ticks(pid_t pid);

// The unified (cgroup v2) path of `pid` ("/user.slice/user-1000.slice/session-4.scope"), else
// the whole text of /proc/PID/cgroup for cgroup v1; nullopt when it cannot be read.
std::optional<std::string> process_cgroup(pid_t pid);

struct Descendant {
  pid_t pid = 0;
  pid_t parent = 0;
  char state = '?'; // as in /proc/PID/stat: 'Z' for a zombie
  std::string name; // the kernel's short name (comm), raw bytes
  pid_t group = 0;  // its process group
};

// The ancestors of `pid` as process_ancestors finds them, each with its parent, state and name.
std::vector<Descendant> process_ancestry(pid_t pid, std::size_t max_depth = 64);

// Every process visible here whose parent chain reaches `ancestor` (not `ancestor` itself), read
// in one walk over /proc, in pid order.
std::vector<Descendant> process_descendants(pid_t ancestor);

// `root` and what runs below it, from each task's /proc/PID/task/TID/children: the subtree alone
// is read, not all of /proc (cheap enough to ask at every scrape). At most `most` processes;
// `root` alone where the kernel has no children files (CONFIG_PROC_CHILDREN).
std::vector<pid_t> process_subtree(pid_t root, std::size_t most = 64);

} // namespace nvsmi
