#include "watch_command.hpp"

#include "csv_log.hpp"
#include "exit_codes.hpp"
#include "file_io.hpp"
#include "local_time.hpp"
#include "nvidia_smi_stream.hpp"
#include "output_queue.hpp"

#include "nvsmi/csv_reader.hpp"
#include "nvsmi/quantity.hpp"
#include "nvsmi/stream.hpp"
#include "nvsmi/xml_reader.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>

#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <memory>
#include <unistd.h>

namespace nvsmi {
namespace {

namespace asio = boost::asio;
using std::chrono::milliseconds;

void log_line(const std::string &message) {
  std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", &utc);
  std::fprintf(stderr, "nvsmi-agent: %s %s\n", stamp, message.c_str());
}

// Samples waiting for a slow stdout reader, at most (some seconds of an 8-GPU legacy stream).
constexpr std::size_t max_queued_output = 4u << 20;

milliseconds to_ms(double seconds) {
  return milliseconds(std::max<long long>(1, std::llround(seconds * 1000)));
}

// Every whole sample in a recording: one document or CSV sample, or several recorded from a loop.
std::vector<Snapshot> fixture_samples(const std::string &path,
                                      const std::vector<std::string> &extra_fields) {
  std::string origin = path == "-" ? "standard input" : path;
  std::string content = read_capped(path, max_input_bytes);
  std::string_view text = trim(content);
  std::vector<Snapshot> samples;
  StreamPieces pieces;
  try {
    if (!text.empty() && text.front() == '<') {
      XmlDocumentSplitter(max_input_bytes).feed(text, pieces);
      for (const std::string &document : pieces.pieces)
        samples.push_back(read_xml(document));
    } else {
      LineSplitter(max_input_bytes).feed(std::string(text) + "\n", pieces);
      CsvSampleAssembler assembler(CsvLayout::from_fields(query_fields(), extra_fields));
      for (const std::string &line : pieces.pieces)
        if (auto sample = assembler.add_line(line).sample)
          samples.push_back(std::move(*sample));
    }
  } catch (const ParseError &error) {
    throw AgentError(exit_bad_output, origin + ": " + error.what());
  }
  // A recording without loop structure (no `count` column, say) is one sample.
  if (samples.empty())
    samples.push_back(parse_output(content, origin));
  return samples;
}

class Watch {
public:
  explicit Watch(const WatchOptions &options)
      : options_(options), signals_(context_, SIGINT, SIGTERM, SIGHUP), replay_(context_) {
    if (options.csv_log)
      log_.emplace(CsvLogSettings{*options.csv_log, options.csv_max_bytes, options.csv_keep,
                                  options.fields});
    if (options.format || !options.csv_log) {
      stdout_format_ = options.format.value_or(Format::legacy);
      stdout_.emplace(context_, STDOUT_FILENO, max_queued_output, log_line,
                      [this](int error) { stdout_failed(error); });
    }
    if (options.fixture)
      fixture_ = fixture_samples(*options.fixture, options.fields);
  }

  int run() {
    wait_for_signal();
    if (fixture_.empty())
      start_stream();
    else
      replay_next();
    context_.run();
    return exit_code_;
  }

private:
  void start_stream() {
    StreamSettings settings;
    settings.command = nvidia_smi_argv(options_.nvidia_smi);
    settings.source = options_.source;
    settings.extra_fields = options_.fields;
    settings.interval = to_ms(options_.interval_seconds);
    settings.stall_timeout = options_.stall_timeout_seconds
                                 ? to_ms(*options_.stall_timeout_seconds)
                                 : std::max(settings.interval * 3, milliseconds(10000));
    stream_ = std::make_unique<NvidiaSmiStream>(
        context_, settings, [this](Snapshot s) { deliver(std::move(s)); }, log_line,
        [this](const std::string &message) {
          log_line(message);
          stop(exit_smi_failed);
        });
    stream_->start();
  }

  void replay_next() {
    deliver(fixture_[replayed_++ % fixture_.size()]);
    if (stopping_)
      return;
    replay_.expires_after(to_ms(options_.interval_seconds));
    replay_.async_wait([this](boost::system::error_code error) {
      if (!error && !stopping_)
        replay_next();
    });
  }

  void wait_for_signal() {
    signals_.async_wait([this](boost::system::error_code error, int signal) {
      if (error)
        return;
      if (signal == SIGHUP) {
        reopen_log();
        wait_for_signal();
        return;
      }
      stop(exit_ok);
    });
  }

  void reopen_log() {
    if (!log_)
      return;
    try {
      log_->reopen();
      log_line("reopened " + *options_.csv_log);
    } catch (const AgentError &error) {
      log_line(error.what());
      stop(error.code());
    }
  }

  void deliver(Snapshot snapshot) {
    if (stopping_)
      return;
    attach_local_offset(snapshot);
    try {
      if (log_)
        log_->append(snapshot);
      if (stdout_format_)
        write_stdout(snapshot);
    } catch (const AgentError &error) {
      log_line(error.what());
      stop(error.code());
      return;
    }
    if (options_.count && ++delivered_ >= *options_.count)
      stop(exit_ok);
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

  void stop(int code) {
    if (stopping_)
      return;
    stopping_ = true;
    exit_code_ = code;
    replay_.cancel();
    auto flush_and_leave = [this] {
      if (!stdout_) {
        signals_.cancel();
        return;
      }
      stdout_->flush(milliseconds(1000), [this] { signals_.cancel(); });
    };
    if (stream_)
      stream_->stop(flush_and_leave);
    else
      flush_and_leave();
  }

  WatchOptions options_;
  asio::io_context context_;
  asio::signal_set signals_;
  asio::steady_timer replay_;
  std::optional<CsvLog> log_;
  std::optional<Format> stdout_format_;
  std::optional<OutputQueue> stdout_;
  std::vector<Snapshot> fixture_;
  std::unique_ptr<NvidiaSmiStream> stream_;
  std::size_t replayed_ = 0;
  long delivered_ = 0;
  bool wrote_csv_header_ = false, stopping_ = false;
  int exit_code_ = exit_ok;
};

} // namespace

int run_watch(const WatchOptions &options) {
  // A reader that goes away shows as EPIPE on write, not as a silent death.
  std::signal(SIGPIPE, SIG_IGN);
  Watch watch(options);
  return watch.run();
}

} // namespace nvsmi
