#include "core/exit_codes.hpp"
#include "host/process_tree.hpp"
#include "nvidia_smi/bounded_command.hpp"
#include "process_support.hpp"
#include "support.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace test_bounded_command {

using namespace nvsmi;
using namespace std::chrono;

namespace {

CommandLimits limits(milliseconds timeout) {
  CommandLimits l;
  l.timeout = timeout;
  l.max_output_bytes = 1 << 20;
  return l;
}

ExitCode error_code_of(const std::vector<std::string> &argv, const CommandLimits &l) {
  try {
    run_bounded(argv, l);
  } catch (const AgentError &error) {
    return error.code();
  }
  return exit_ok;
}

// Alive and not a zombie waiting for whoever reaps orphans here.
bool process_alive(pid_t pid) {
  std::string stat;
  try {
    stat = test::read_file("/proc/" + std::to_string(pid) + "/stat");
  } catch (const std::exception &) {
    return false;
  }
  std::size_t paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] != 'Z';
}

} // namespace

TEST_CASE("captures stdout, stderr and the exit code") {
  CommandResult r =
      run_bounded({"sh", "-c", "echo out; echo err >&2; exit 9"}, limits(test::patience));
  CHECK(r.out == "out\n");
  CHECK(r.err == "err\n");
  CHECK(r.exit_code == 9);
  CHECK(r.term_signal == 0);
}

TEST_CASE("reports a signal death") {
  CommandResult r = run_bounded({"sh", "-c", "kill -TERM $$"}, limits(test::patience));
  CHECK(r.term_signal == SIGTERM);
}

TEST_CASE("a missing or unrunnable program is exit_not_found") {
  CHECK(error_code_of({"no-such-program-nvsmi"}, limits(seconds(5))) == exit_not_found);
  CHECK(error_code_of({"/nonexistent/nvidia-smi"}, limits(seconds(5))) == exit_not_found);
  std::string folder = test::temporary_folder();
  test::write_file(folder + "/not-executable", "#!/bin/sh\necho hi\n");
  CHECK(error_code_of({folder + "/not-executable"}, limits(seconds(5))) == exit_not_found);
}

TEST_CASE("a hung command and its children are killed at the deadline") {
  std::string folder = test::temporary_folder();
  std::string pid_file = folder + "/grandchild.pid";
  auto start = steady_clock::now();
  CHECK(error_code_of({"sh", "-c", "sleep 300 & echo $! > " + pid_file + "; wait"},
                      limits(seconds(3))) == exit_timeout); // time for sh to write the pid
  CHECK(steady_clock::now() - start < test::promptly);      // not the 300 s of the sleep
  pid_t grandchild = std::stoi(test::read_file(pid_file));
  // Killed, it is gone once the kernel has taken it down and whoever reaps orphans has run.
  CHECK(test::wait_until([&] { return !process_alive(grandchild); }));
}

TEST_CASE("returns promptly when a grandchild keeps the pipe open after the child exits") {
  std::string folder = test::temporary_folder();
  std::string pid_file = folder + "/grandchild.pid";
  auto start = steady_clock::now();
  CommandResult r = run_bounded(
      {"sh", "-c", "echo done; (sleep 300; echo late) & echo $! > " + pid_file + "; exit 0"},
      limits(test::patience));
  CHECK(steady_clock::now() - start < test::promptly); // not at the deadline
  CHECK(r.exit_code == 0);
  CHECK(r.out == "done\n");
  pid_t grandchild = std::stoi(test::read_file(pid_file));
  CHECK(test::wait_until([&] { return !process_alive(grandchild); }));
}

TEST_CASE("output past the cap is an error, not an allocation") {
  CommandLimits l = limits(test::patience);
  l.max_output_bytes = 100000;
  CHECK(error_code_of({"sh", "-c", "yes nvidia-smi"}, l) == exit_bad_output);
}

TEST_CASE("a program that cannot be executed leaves no zombie behind") {
  std::string folder = test::temporary_folder();
  test::write_file(folder + "/not-executable", "#!/bin/sh\necho hi\n");
  std::size_t before = test::zombie_children(::getpid()).size();
  // Each start forks a child whose exec fails; it must be reaped there and then.
  for (int i = 0; i < 3; ++i) {
    CHECK(error_code_of({folder + "/not-executable"}, limits(seconds(5))) == exit_not_found);
    CHECK(error_code_of({"/nonexistent/nvidia-smi"}, limits(seconds(5))) == exit_not_found);
  }
  CHECK(test::wait_until([&] { return test::zombie_children(::getpid()).size() <= before; },
                         seconds(10)));
}

// `run` sweeps its zombies on the sampling thread (it is a subreaper) while `--nvlink-counters`
// runs `nvidia-smi nvlink -gt d` with run_bounded on a thread of its own: a sweep made through
// with_bounded_children leaves every bounded run's child to run_bounded, which then still has
// each exit code. Sweeping without it (as before) took some: their runs said exit code 0.
TEST_CASE("a sweep of zombies on another thread leaves run_bounded its children's exits") {
  std::atomic<bool> done{false};
  std::atomic<int> swept{0};
  std::thread sweeper([&] {
    pid_t self = ::getpid();
    while (!done) {
      with_bounded_children([&](const std::vector<pid_t> &bounded) {
        for (const Descendant &process : process_descendants(self))
          if (process.state == 'Z' && process.parent == self &&
              std::find(bounded.begin(), bounded.end(), process.pid) == bounded.end() &&
              ::waitpid(process.pid, nullptr, WNOHANG) > 0)
            ++swept;
      });
    }
  });
  int right = 0;
  constexpr int runs = 150;
  for (int i = 0; i < runs; ++i) {
    CommandResult result = run_bounded({"sh", "-c", "exit 3"}, limits(10s));
    right += result.term_signal == 0 && result.exit_code == 3;
  }
  done = true;
  sweeper.join();
  CHECK(right == runs);
  CHECK(swept == 0);
  // Each child is off the list once its run returned: a later sweep may take what is left.
  with_bounded_children([](const std::vector<pid_t> &bounded) { CHECK(bounded.empty()); });
}

} // namespace test_bounded_command
