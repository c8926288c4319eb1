// A program the agent starts that must take everything it starts with it: the drain hook
// (--on-unhealthy). Its own process group is not enough, since `setsid`, a daemon's double fork or
// `nohup ... &` leave it. So the agent forks a keeper, a copy of itself that never execs: the
// keeper makes itself a child subreaper (PR_SET_CHILD_SUBREAPER), so that every orphan the program
// leaves comes to it whatever session or group it made, then starts the program, waits, and at
// the program's end or on SIGTERM (the agent's deadline, or the agent's death through
// PR_SET_PDEATHSIG) kills its every descendant and says whom. A cgroup would also freeze a fork
// bomb, but needs a delegated, writable cgroup v2 subtree, which the shipped unit
// (ProtectControlGroups) and a user's own serve do not have; the subreaper works for every user.
// What the program asks another service to start (systemd-run, at, a D-Bus activation) is that
// service's, and no keeper's.
//
// The program gets stdin, stdout and stderr on /dev/null and no other descriptor of the agent's;
// the keeper keeps none either, but the pipe on which it reports.
#pragma once

#include <string>
#include <sys/types.h>
#include <vector>

namespace nvsmi {

struct KeptStart {
  pid_t keeper = -1; // the keeper's pid, in a process group of its own with the program
  int report = -1;   // the read end of the keeper's report: EOF once the keeper has ended
  int error = 0;     // errno where no keeper could be started
};

// Starts `executable` (a path) with `arguments` (argv[0] first) and `environment` under a keeper,
// which ends it and everything it started at `timeout_ms`, or at once when the program ends, or
// on SIGTERM. The caller reads `report` to its end (the keeper's end), then reaps the keeper.
KeptStart start_kept(const std::string &executable, const std::vector<std::string> &arguments,
                     const std::vector<std::string> &environment, long timeout_ms);

// What the keeper said when it ended.
struct KeptEnd {
  bool program_ended = false; // its wait status below is known
  int program_status = 0;     // as waitpid gives it
  int exec_error = 0;         // errno where the program could not be executed
  // What it killed beside the program, "pid 4242 (sleep)", the first few, and how many in all.
  std::vector<std::string> killed;
  std::size_t killed_count = 0;
  std::size_t left = 0;  // descendants still there when it gave up (stuck in the kernel)
  bool deadline = false; // the program was ended at its deadline
  bool stopped = false;  // ... on SIGTERM (the agent's end)
  int no_subreaper = 0;  // errno where the keeper could not be a subreaper: only its group goes
};
// Reads the keeper's report (its text, as read from the pipe to its end).
KeptEnd read_kept_end(const std::string &report);

// How many of the killed the keeper names; the rest are counted.
inline constexpr std::size_t kept_named_at_most = 16;

} // namespace nvsmi
