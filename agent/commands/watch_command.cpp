#include "commands/watch_command.hpp"

#include "core/exit_codes.hpp"
#include "core/log_line.hpp"
#include "core/number_text.hpp"
#include "core/screen_text.hpp"
#include "files/csv_log.hpp"
#include "files/json_log.hpp"
#include "files/output_queue.hpp"
#include "nvidia_smi/stop_signals.hpp"
#include "sampling/sampling_loop.hpp"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <unistd.h>
#include <vector>

namespace nvsmi {
namespace {

using std::chrono::milliseconds;

// Samples waiting for a slow stdout reader, at most (some seconds of an 8-GPU legacy stream).
constexpr std::size_t max_queued_output = 4u << 20;

class Watch {
public:
  explicit Watch(const WatchOptions &options)
      : options_(options), loop_(
                               options.sampling, [this](Snapshot s) { deliver(std::move(s)); },
                               log_stream_message, [this](int code) { stop(code); }) {
    if (options.csv_log)
      csv_log_.emplace(
          CsvLogSettings{*options.csv_log, options.csv_rotation, options.sampling.fields});
    if (options.json_log)
      json_log_.emplace(*options.json_log, options.json_rotation);
    if (options.format || (!options.csv_log && !options.json_log)) {
      stdout_format_ = options.format.value_or(Format::legacy);
      stdout_.emplace(
          loop_.context(), STDOUT_FILENO, max_queued_output,
          [](const std::string &message) { log_line(message); },
          [this](int error) { stdout_failed(error); });
    }
  }

  int run() {
    loop_.catch_signals([this](int signal) {
      if (signal == SIGHUP)
        reopen_log();
      else
        stop(exit_code_for_stop(signal));
    });
    return loop_.run();
  }

private:
  void reopen_log() {
    try {
      if (csv_log_) {
        csv_log_->reopen();
        log_line("reopened " + *options_.csv_log);
      }
      if (json_log_) {
        json_log_->reopen();
        log_line("reopened " + *options_.json_log);
      }
    } catch (const AgentError &error) {
      log_line(error.what());
      stop(error.code());
    }
  }

  void deliver(Snapshot snapshot) {
    if (loop_.stopping())
      return;
    // Once a minute (--cost-every), from a minute after the first sample, the sample carries
    // the monitor's own cost (docs/WATCH.md): a whole window, not the cost of starting.
    auto now = std::chrono::steady_clock::now();
    if (!cost_read_)
      cost_read_ = now;
    else if (options_.cost_every_seconds > 0 &&
             now - *cost_read_ >= std::chrono::duration<double>(options_.cost_every_seconds)) {
      snapshot.agent = loop_.sampler().cost();
      cost_read_ = now;
    }
    try {
      if (csv_log_)
        csv_log_->append(snapshot);
      if (json_log_)
        json_log_->append(snapshot);
      if (stdout_format_)
        write_stdout(snapshot);
    } catch (const AgentError &error) {
      log_line(error.what());
      stop(error.code());
      return;
    }
    ++written_;
    if (!announced_ && ::isatty(STDERR_FILENO) == 1) {
      announce(snapshot);
      announced_at_terminal_ = true;
    }
    announced_ = true;
    if (options_.count && ++delivered_ >= *options_.count)
      stop(exit_ok);
  }

  // A person who starts watch at a terminal sees what it does and how to stop it, once its first
  // sample says how many GPUs there are; a pipe or a service's log keeps only the samples'
  // problems, as before.
  void announce(const Snapshot &first) {
    std::vector<std::string> outputs;
    if (stdout_format_)
      outputs.push_back(format_name(*stdout_format_) + " to stdout");
    if (options_.csv_log)
      outputs.push_back("CSV to " + printable_text(*options_.csv_log));
    if (options_.json_log)
      outputs.push_back("JSON to " + printable_text(*options_.json_log));
    std::string writing;
    for (const std::string &output : outputs)
      writing += (writing.empty() ? "" : ", ") + output;
    std::size_t gpus = first.gpus.size();
    std::string how_long;
    if (options_.count) // how long a person waits for the end, said at its start
      how_long = " for " + std::to_string(*options_.count) +
                 (*options_.count == 1 ? " sample" : " samples") + " (about " +
                 seconds_text(to_ms(options_.sampling.interval_seconds *
                                    static_cast<double>(*options_.count))) +
                 " s)";
    log_line("watching " + std::to_string(gpus) + (gpus == 1 ? " GPU" : " GPUs") + " every " +
             seconds_text(to_ms(options_.sampling.interval_seconds)) + " s" + how_long +
             ", writing " + writing + "; Ctrl-C stops");
  }

public:
  // At a terminal, the end of a run that wrote a log says what it holds and what reads it.
  void say_end() const {
    if (!announced_at_terminal_ || (!options_.csv_log && !options_.json_log))
      return;
    std::string logs;
    for (const auto *log : {&options_.json_log, &options_.csv_log})
      if (*log)
        logs += (logs.empty() ? "" : " ") + shell_word(**log);
    log_line("wrote " + std::to_string(written_) + (written_ == 1 ? " sample" : " samples") +
             "; `nvsmi-agent report " + logs + "` sums them up");
  }

private:
  // `path` as a shell word a person can paste, printable.
  static std::string shell_word(const std::string &path) {
    std::string text = printable_text(path);
    if (text.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                               "/._-+,:@%") == std::string::npos)
      return text;
    std::string quoted = "'";
    for (char c : text)
      quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return quoted + "'";
  }

  void write_stdout(const Snapshot &snapshot) {
    std::string text;
    if (*stdout_format_ == Format::csv)
      text = format_csv(snapshot, !wrote_csv_header_);
    else
      text = format_snapshot(snapshot, *stdout_format_);
    wrote_csv_header_ = true;
    stdout_->push(std::move(text));
  }

  void stdout_failed(int error) {
    if (error == EPIPE) { // the reader went away: a normal end for a pipe
      stop(exit_ok);
      return;
    }
    log_line(std::string("cannot write to standard output: ") + std::strerror(error));
    stop(exit_io);
  }

  // What was queued for stdout goes out (for a second at most) before the loop ends.
  void stop(int code) {
    loop_.stop(code, [this](std::function<void()> end) {
      if (stdout_)
        stdout_->flush(milliseconds(1000), std::move(end));
      else
        end();
    });
  }

  WatchOptions options_;
  SamplingLoop loop_;
  std::optional<CsvLog> csv_log_;
  std::optional<JsonLog> json_log_;
  std::optional<Format> stdout_format_;
  std::optional<OutputQueue> stdout_;
  long delivered_ = 0;
  bool wrote_csv_header_ = false;
  bool announced_ = false; // the first sample was delivered
  bool announced_at_terminal_ = false;
  long written_ = 0; // samples delivered to every output
  // When the cost was last carried (the first sample: when it was delivered).
  std::optional<std::chrono::steady_clock::time_point> cost_read_;
};

} // namespace

int run_watch(const WatchOptions &options) {
  ignore_write_signals();
  Watch watch(options);
  int code = watch.run();
  watch.say_end();
  finish_log();
  return code;
}

} // namespace nvsmi
