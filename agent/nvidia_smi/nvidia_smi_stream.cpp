#include "nvidia_smi/nvidia_smi_stream.hpp"

#include "core/exit_codes.hpp"
#include "core/log_line.hpp"
#include "core/number_text.hpp"
#include "nvidia_smi/boost_process.hpp"
#include "nvidia_smi/child_exit.hpp"
#include "nvidia_smi/said_line.hpp"

#include "nvsmi/quantity.hpp"

#include <boost/asio/readable_pipe.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/writable_pipe.hpp>

#include <array>
#include <csignal>
#include <optional>
#include <sys/wait.h>
#include <unistd.h>
#include <utility>

namespace nvsmi {
namespace {

namespace asio = boost::asio;
namespace bp = boost::process::v2;
using std::chrono::milliseconds;
using std::chrono::steady_clock;

// The last line that says something, for an exit message.
void remember_message(std::string &last, std::string_view bytes) {
  if (std::optional<std::string> line = last_said_line(bytes))
    last = std::move(*line);
}

// How much of a run's stderr is kept to find its first line in: a wrapper's complaint or a
// loader's error comes first, and a chatty child must not grow the agent.
constexpr std::size_t stderr_head_bytes = 4096;

} // namespace

void log_stream_message(LogKind kind, const std::string &message) {
  log_line(message, kind == LogKind::bad_output ? LogRate::repeating : LogRate::rare);
}

std::vector<std::string> loop_arguments(Source source, milliseconds interval,
                                        const GpuQuery &query) {
  std::vector<std::string> args;
  if (source == Source::xml) {
    args = {"-q", "-x"};
  } else {
    args = {query.argument(), "--format=csv,noheader,nounits"};
  }
  args.push_back("-lms");
  args.push_back(std::to_string(interval.count()));
  return args;
}

struct NvidiaSmiStream::State : std::enable_shared_from_this<NvidiaSmiStream::State> {
  State(asio::io_context &io, StreamSettings s, std::unique_ptr<StreamDecoder> d, LogHandler logger,
        RejectHandler rejected)
      : context(io), settings(std::move(s)), decoder(std::move(d)), log(std::move(logger)),
        on_rejected(std::move(rejected)), out(io), err(io), in(io), stall(io), restart(io),
        kill_timer(io), drain(io), backoff(settings.first_backoff) {
    events.sample_done = [this] {
      ++samples_this_run;
      arm_stall(generation);
    };
    events.skipped = [this](const std::string &text, bool counted) {
      counters.bad_samples += counted ? 1 : 0;
      log(LogKind::bad_output, text);
    };
    events.message = [this](std::string_view text) { remember_message(last_message, text); };
  }

  asio::io_context &context;
  StreamSettings settings;
  std::unique_ptr<StreamDecoder> decoder;
  StreamDecoder::Events events;
  LogHandler log;
  RejectHandler on_rejected;
  std::optional<bp::process> child;
  pid_t group = 0; // the child's pid, which leads its process group; 0 while none was started
  asio::readable_pipe out, err;
  asio::writable_pipe in; // settings.hold_stdin: the child's stdin, open for its run
  asio::steady_timer stall, restart, kill_timer, drain;
  std::array<char, 65536> out_buffer{}, err_buffer{};
  milliseconds backoff;
  steady_clock::time_point started;
  int generation = 0, samples_this_run = 0; // generation: one per start
  bool exited = false, out_closed = false, stopping = false, finished = true, stalled = false;
  bool clean_exit = false;
  SamplingCounters counters;
  std::string last_message, how_it_ended;
  std::string stderr_head; // the first stderr_head_bytes of this run's stderr
  std::function<void()> on_stopped;

  void spawn() {
    if (generation++ > 0)
      ++counters.restarts;
    std::vector<std::string> argv = settings.command;
    argv.insert(argv.end(), settings.arguments.begin(), settings.arguments.end());
    bp::filesystem::path executable = find_program(argv[0]);
    out = asio::readable_pipe(context);
    err = asio::readable_pipe(context);
    in = asio::writable_pipe(context);
    exited = out_closed = stalled = clean_exit = false;
    finished = false;
    samples_this_run = 0;
    last_message.clear();
    stderr_head.clear();
    started = steady_clock::now();
    group = 0;
    bp::error_code error;
    if (executable.empty())
      error = bp::error_code(ENOENT, bp::system_category());
    else
      child.emplace(settings.hold_stdin
                        ? bp::default_process_launcher()(
                              context.get_executor(), error, executable,
                              std::vector<std::string>(argv.begin() + 1, argv.end()),
                              bp::process_stdio{in, out, err}, NewProcessGroup{})
                        : bp::default_process_launcher()(
                              context.get_executor(), error, executable,
                              std::vector<std::string>(argv.begin() + 1, argv.end()),
                              bp::process_stdio{nullptr, out, err}, NewProcessGroup{}));
    if (error) {
      child.reset();
      std::string message = executable.empty()
                                ? program_not_found(argv[0])
                                : "cannot run " + executable.string() + ": " + error.message();
      // The first start of the GPU query: a failure ends the agent, so none went before.
      if (generation == 1 && settings.first_start_fatal)
        throw AgentError(exit_not_found, message);
      ++counters.spawn_failures;
      log(LogKind::problem, message);
      finished = true;
      schedule_restart();
      return;
    }
    // Kept from the start: Boost's handle may read -1 once the child is reaped or detached, and
    // kill(-(-1)) would signal every process we may signal.
    group = child->id();
    if (settings.cost)
      settings.cost->started();
    read_out(generation);
    read_err(generation);
    wait_exit(generation);
    arm_stall(generation);
  }

  void read_out(int gen) {
    auto self = shared_from_this();
    out.async_read_some(asio::buffer(out_buffer),
                        [this, self, gen](bp::error_code error, std::size_t n) {
                          if (gen != generation)
                            return;
                          if (n > 0)
                            decoder->feed(std::string_view(out_buffer.data(), n), events);
                          if (error) {
                            out_closed = true;
                            if (exited)
                              finish_run();
                            return;
                          }
                          read_out(gen);
                        });
  }

  void read_err(int gen) {
    auto self = shared_from_this();
    err.async_read_some(
        asio::buffer(err_buffer), [this, self, gen](bp::error_code error, std::size_t n) {
          if (gen != generation)
            return;
          std::string_view bytes(err_buffer.data(), n);
          remember_message(last_message, bytes);
          stderr_head.append(
              bytes.substr(0, stderr_head_bytes - std::min(stderr_head.size(), stderr_head_bytes)));
          decoder->feed_stderr(bytes);
          if (!error)
            read_err(gen);
        });
  }

  void wait_exit(int gen) {
    auto self = shared_from_this();
    async_wait_child(
        context, child->id(),
        [this, self, gen](ChildEnd end) {
          if (end.cpu_seconds && settings.cost)
            settings.cost->ended(*end.cpu_seconds);
          child_exited(gen, end.status);
        },
        [this, self, gen] {
          child->async_wait([this, self, gen](bp::error_code, int) {
            if (gen == generation)
              child_exited(gen, child->native_exit_code());
          });
        });
  }

  void child_exited(int gen, int status) {
    if (gen != generation)
      return;
    exited = true;
    // Said once the output is read to its end (finish_run): the last of it may be the reason.
    how_it_ended = WIFSIGNALED(status) ? "was killed by signal " + std::to_string(WTERMSIG(status))
                                       : "exited with code " + std::to_string(WEXITSTATUS(status));
    clean_exit = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (!stopping && !stalled)
      ++counters.child_exits;
    // Whatever it started must not hold the pipe (or the GPU) after it.
    kill_group(SIGKILL);
    if (out_closed) {
      finish_run();
      return;
    }
    auto self = shared_from_this();
    drain.expires_after(milliseconds(200));
    drain.async_wait([this, self, gen](bp::error_code error) {
      if (!error && gen == generation)
        finish_run();
    });
  }

  void arm_stall(int gen) {
    if (settings.silence_is_an_answer)
      return;
    auto self = shared_from_this();
    stall.expires_after(settings.stall_timeout);
    stall.async_wait([this, self, gen](bp::error_code error) {
      if (error || gen != generation || exited || stopping)
        return;
      ++counters.stalls;
      stalled = true;
      log(LogKind::problem, "no complete sample for " + seconds_text(settings.stall_timeout) +
                                " s: killing " + settings.label + " and its process group");
      terminate_child();
    });
  }

  // SIGTERM to the group, SIGKILL after the grace if it is still there.
  void terminate_child() {
    if (!child || exited)
      return;
    kill_group(SIGTERM);
    auto self = shared_from_this();
    int gen = generation;
    kill_timer.expires_after(settings.term_grace);
    kill_timer.async_wait([this, self, gen](bp::error_code error) {
      if (!error && gen == generation && !exited)
        kill_group(SIGKILL);
    });
  }

  void kill_group(int signal) const {
    if (group > 0)
      ::kill(-group, signal);
  }

  void finish_run() {
    if (finished)
      return;
    finished = true;
    stall.cancel();
    drain.cancel();
    kill_timer.cancel();
    bp::error_code ignored;
    out.close(ignored);
    err.close(ignored);
    in.close(ignored);
    if (child)
      child->detach();
    child.reset();
    bool partial = decoder->finish(events, clean_exit && !stalled);
    if (stopping) {
      // Released as it is called: a handler may hold the stream itself (the sampler's dmon,
      // stopped to start again without GPM), which would otherwise never be freed.
      if (std::function<void()> done = std::exchange(on_stopped, nullptr))
        done();
      return;
    }
    if (partial) {
      ++counters.partial_samples;
      log(LogKind::problem, "partial sample dropped");
    }
    // A refusal is the handler's to say: a failure, or what is done about it.
    if (samples_this_run == 0 && settings.refused && settings.refused(last_message)) {
      on_rejected(settings.label + " refused the query: " + last_message);
      return;
    }
    // Last of the problems, so that it is the one serve shows: the cause, with its message. A run
    // without a sample that wrote on stderr is named by the first line there (a missing
    // libnvidia-ml, a wrapper's complaint): that is the cause, what follows it only its echo.
    std::optional<std::string> stderr_line =
        samples_this_run == 0 ? first_said_line(stderr_head) : std::nullopt;
    if (stderr_line)
      log(LogKind::problem, settings.label + " " + how_it_ended +
                                " before its first sample; on stderr: " + *stderr_line);
    else
      log(LogKind::problem,
          settings.label + " " + how_it_ended + (last_message.empty() ? "" : ": " + last_message));
    schedule_restart();
  }

  void schedule_restart() {
    if (samples_this_run > 0 && steady_clock::now() - started >= settings.good_run)
      backoff = settings.first_backoff;
    milliseconds delay = backoff;
    backoff = std::min(backoff * 2, settings.max_backoff);
    log(LogKind::notice, "restarting " + settings.label + " in " + seconds_text(delay) + " s");
    auto self = shared_from_this();
    restart.expires_after(delay);
    restart.async_wait([this, self](bp::error_code error) {
      if (!error && !stopping)
        spawn();
    });
  }

  void stop(std::function<void()> done) {
    stopping = true;
    restart.cancel();
    stall.cancel();
    if (finished) {
      done();
      return;
    }
    on_stopped = std::move(done);
    terminate_child();
  }
};

NvidiaSmiStream::NvidiaSmiStream(asio::io_context &context, StreamSettings settings,
                                 std::unique_ptr<StreamDecoder> decoder, LogHandler log,
                                 RejectHandler on_rejected)
    : state_(std::make_shared<State>(context, std::move(settings), std::move(decoder),
                                     std::move(log), std::move(on_rejected))) {}

NvidiaSmiStream::~NvidiaSmiStream() {
  if (state_->child && !state_->exited) {
    state_->kill_group(SIGKILL);
    state_->child->detach();
  }
}

void NvidiaSmiStream::start() { state_->spawn(); }
void NvidiaSmiStream::stop(std::function<void()> done) { state_->stop(std::move(done)); }

void NvidiaSmiStream::restart_with(std::vector<std::string> arguments,
                                   std::unique_ptr<StreamDecoder> decoder) {
  if (state_->stopping || !state_->finished)
    return;
  state_->settings.arguments = std::move(arguments);
  state_->decoder = std::move(decoder);
  state_->backoff = state_->settings.first_backoff;
  state_->spawn();
}
const SamplingCounters &NvidiaSmiStream::counters() const { return state_->counters; }

std::optional<pid_t> NvidiaSmiStream::child_pid() const {
  // `exited` is set once Boost.Process has reaped it; the pid may then be another process's.
  if (state_->child && !state_->exited)
    return state_->child->id();
  return std::nullopt;
}

} // namespace nvsmi
