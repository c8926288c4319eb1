#include "nvidia_smi/bounded_command.hpp"

#include "core/exit_codes.hpp"
#include "core/number_text.hpp"
#include "nvidia_smi/stop_signals.hpp"

#include "nvidia_smi/boost_process.hpp"
#include "nvidia_smi/child_exit.hpp"
#include <boost/asio/io_context.hpp>
#include <boost/asio/readable_pipe.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>

#include <algorithm>
#include <array>
#include <csignal>
#include <cstring>
#include <functional>
#include <mutex>
#include <optional>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

namespace nvsmi {
namespace {

namespace asio = boost::asio;
namespace bp = boost::process::v2;

// Reads one pipe to its end into `sink`, stopping everything when the cap is passed.
class PipeReader {
public:
  PipeReader(asio::readable_pipe &pipe, std::string &sink, std::size_t &total, std::size_t cap,
             std::function<void()> on_overflow, std::function<void()> on_end)
      : pipe_(pipe), sink_(sink), total_(total), cap_(cap), on_overflow_(std::move(on_overflow)),
        on_end_(std::move(on_end)) {}

  void start() {
    pipe_.async_read_some(asio::buffer(buffer_), [this](bp::error_code error, std::size_t n) {
      total_ += n;
      if (total_ > cap_)
        return on_overflow_();
      sink_.append(buffer_.data(), n);
      if (error)
        return on_end_();
      start();
    });
  }

private:
  asio::readable_pipe &pipe_;
  std::string &sink_;
  std::size_t &total_;
  std::size_t cap_;
  std::function<void()> on_overflow_, on_end_;
  std::array<char, 16384> buffer_{};
};

// The children run_bounded is running, in every thread; the lock is held from before a launch
// until its pid is on the list, and by with_bounded_children's caller while it sweeps.
std::mutex bounded_children_lock;
std::vector<pid_t> bounded_children;

// Takes the pid off the list when run_bounded returns or throws: the child was reaped by then,
// or (stuck in the kernel after SIGKILL) is left to whoever sweeps zombies.
class ListedChild {
public:
  explicit ListedChild(pid_t pid) : pid_(pid) { bounded_children.push_back(pid); }
  ~ListedChild() {
    std::lock_guard<std::mutex> hold(bounded_children_lock);
    bounded_children.erase(std::find(bounded_children.begin(), bounded_children.end(), pid_));
  }
  ListedChild(const ListedChild &) = delete;
  ListedChild &operator=(const ListedChild &) = delete;

private:
  pid_t pid_;
};

} // namespace

void with_bounded_children(const std::function<void(const std::vector<pid_t> &)> &use) {
  std::lock_guard<std::mutex> hold(bounded_children_lock);
  use(bounded_children);
}

CommandResult run_bounded(const std::vector<std::string> &argv, const CommandLimits &limits) {
  if (argv.empty())
    throw AgentError(exit_usage, "empty command");
  bp::filesystem::path executable = find_program(argv[0]);
  if (executable.empty())
    throw AgentError(exit_not_found, program_not_found(argv[0]));

  asio::io_context context;
  // Caught from before the fork, so that no moment is left in which a signal ends the agent
  // and leaves the child behind.
  asio::signal_set signals(context);
  add_stop_signals(signals);
  asio::readable_pipe out_pipe(context), err_pipe(context);
  bp::error_code launch_error;
  std::vector<std::string> args(argv.begin() + 1, argv.end());
  std::unique_lock<std::mutex> launching(bounded_children_lock);
  bp::process child = bp::default_process_launcher()(
      context.get_executor(), launch_error, executable, args,
      bp::process_stdio{nullptr, out_pipe, err_pipe}, NewProcessGroup{});
  if (launch_error)
    throw AgentError(exit_not_found,
                     "cannot run " + executable.string() + ": " + launch_error.message());
  const pid_t group = child.id();
  ListedChild listed(group);
  launching.unlock();

  CommandResult result;
  std::optional<AgentError> failure;
  bool exited = false;
  int open_pipes = 2;
  std::size_t total = 0;
  asio::steady_timer deadline(context), grace(context);

  auto kill_group = [&] { ::kill(-group, SIGKILL); };
  auto finish_reading = [&] {
    bp::error_code ignored;
    out_pipe.close(ignored);
    err_pipe.close(ignored);
    grace.cancel();
    if (exited) {
      deadline.cancel();
      signals.cancel(ignored);
    }
  };
  auto abort_with = [&](ExitCode code, std::string message) {
    if (!failure)
      failure.emplace(code, message);
    kill_group();
    finish_reading();
  };
  auto on_pipe_end = [&] {
    if (--open_pipes == 0 && exited)
      finish_reading();
  };
  auto on_overflow = [&] {
    abort_with(exit_bad_output,
               "output larger than " + std::to_string(limits.max_output_bytes) + " bytes");
  };

  PipeReader out_reader(out_pipe, result.out, total, limits.max_output_bytes, on_overflow,
                        on_pipe_end);
  PipeReader err_reader(err_pipe, result.err, total, limits.max_output_bytes, on_overflow,
                        on_pipe_end);
  out_reader.start();
  err_reader.start();

  auto on_exit = [&](int status) {
    exited = true;
    if (WIFSIGNALED(status))
      result.term_signal = WTERMSIG(status);
    else
      result.exit_code = WEXITSTATUS(status);
    if (open_pipes == 0 || failure) {
      finish_reading();
      return;
    }
    // A descendant that outlives the child may hold its pipes open for ever: give the data in
    // flight a moment, then kill the group and stop reading.
    grace.expires_after(limits.exit_grace);
    grace.async_wait([&](bp::error_code error) {
      if (error)
        return;
      kill_group();
      finish_reading();
    });
  };
  if (limits.cost)
    limits.cost->started();
  async_wait_child(
      context, group,
      [&](ChildEnd end) {
        if (end.cpu_seconds && limits.cost)
          limits.cost->ended(*end.cpu_seconds);
        on_exit(end.status);
      },
      [&] { child.async_wait([&](bp::error_code, int) { on_exit(child.native_exit_code()); }); });

  // Stopped from outside (cron's timeout, Ctrl-C, a hangup): take the process group down too.
  signals.async_wait([&](bp::error_code error, int signal) {
    if (!error)
      abort_with(exit_for_signal(signal), std::string("interrupted by ") + strsignal(signal) +
                                              "; killed it and its process group");
  });

  deadline.expires_after(limits.timeout);
  deadline.async_wait([&](bp::error_code error) {
    if (error)
      return;
    abort_with(exit_timeout, "no answer within " + seconds_text(limits.timeout) +
                                 " s; killed it and its process group");
    // A child stuck in the kernel may not die at once; do not wait for it for ever.
    grace.expires_after(std::chrono::seconds(1));
    grace.async_wait([&](bp::error_code grace_error) {
      if (!grace_error)
        context.stop();
    });
  });

  context.run();
  // Either reaped already, or stuck in the kernel after SIGKILL: never block on it here.
  child.detach();
  if (failure)
    throw *failure;
  return result;
}

} // namespace nvsmi
