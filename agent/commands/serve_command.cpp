#include "commands/serve_command.hpp"

#include "core/exit_codes.hpp"
#include "core/log_line.hpp"
#include "fleet/fleet_view.hpp"
#include "formats/prometheus_metrics.hpp"
#include "nvidia_smi/stop_signals.hpp"
#include "sampling/sampling_loop.hpp"
#include "serve/basic_auth.hpp"
#include "serve/embedded_files.hpp"
#include "serve/serve_exposure.hpp"
#include "serve/serve_state.hpp"
#include "serve/web_config.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <csignal>
#include <sys/resource.h>

namespace nvsmi {
namespace {

namespace asio = boost::asio;

// Descriptors kept for nvidia-smi's pipes, the log and the listener.
constexpr std::size_t reserved_descriptors = 64;

// Every connection is a descriptor: the usual soft limit of 1024 would cap clients below what
// the server is meant to hold. Where the hard limit is lower, fewer connections are allowed.
HttpLimits fit_descriptor_limit(HttpLimits limits) {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0)
    return limits;
  rlim_t wanted = limits.max_connections + reserved_descriptors;
  if (limit.rlim_cur < wanted) {
    limit.rlim_cur = std::min<rlim_t>(limit.rlim_max, wanted);
    ::setrlimit(RLIMIT_NOFILE, &limit);
    ::getrlimit(RLIMIT_NOFILE, &limit);
  }
  if (limit.rlim_cur < wanted) {
    std::size_t fits = limit.rlim_cur > 2 * reserved_descriptors
                           ? static_cast<std::size_t>(limit.rlim_cur) - reserved_descriptors
                           : reserved_descriptors;
    log_line("the descriptor limit (" + std::to_string(limit.rlim_cur) + ") allows " +
             std::to_string(fits) + " connections, not " + std::to_string(limits.max_connections));
    limits.max_connections = fits;
  }
  return limits;
}

// Bound to loopback, the server is for this machine alone: a Host naming anything else is a
// browser tricked by DNS rebinding, not a client of ours.
HttpLimits server_limits(const ServeOptions &options) {
  HttpLimits limits = fit_descriptor_limit(options.limits);
  if (auto listen = parse_listen_address(options.listen))
    limits.loopback_hosts_only = listen->address().is_loopback();
  return limits;
}

Exposure exposure(const ServeOptions &options) {
  auto listen = parse_listen_address(options.listen);
  Exposure exposure = default_exposure(listen && listen->address().is_loopback());
  for (const std::string &word : options.expose) {
    if (word == "command-lines")
      exposure.command_lines = true;
    else if (word == "users")
      exposure.users = true;
  }
  return exposure;
}

// Read before anything starts, so that a config that is wrong stops serve with one line.
HttpSecurity security(const ServeOptions &options, asio::io_context &context) {
  if (options.web_config_file.empty())
    return {};
  WebConfig config = read_web_config(options.web_config_file);
  HttpSecurity security{tls_context(config, options.web_config_file), nullptr};
  if (!config.basic_auth_users.empty())
    security.auth = std::make_shared<BasicAuth>(context, config.basic_auth_users);
  return security;
}

class Serve {
public:
  explicit Serve(const ServeOptions &options)
      : exposure_(exposure(options)),
        loop_(
            options.sampling, [this](Snapshot s) { deliver(std::move(s)); },
            [this](LogKind kind, const std::string &message) {
              log_stream_message(kind, message);
              // What the agent does about a problem ("restarting ...") is no cause to show.
              if (kind != LogKind::notice)
                state_.note_error(message);
            },
            [this](int code) { stop(code); }),
        state_(loop_.sampler().interval(), options.history_seconds, options.history_max_mib << 20,
               ServeState::default_pending_max_bytes, options.metrics),
        server_(
            loop_.context(), endpoint(options.listen), server_limits(options),
            [this](std::string_view path, std::string_view query) {
              if (fleet_ && (path == "/fleet" || path == "/fleet.json"))
                return fleet_answer(path);
              return state_.answer(path, query, ServeClock::now(),
                                   {[this] { return loop_.sampler().counters(); },
                                    [this] { return loop_.sampler().cost(); }});
            },
            security(options, loop_.context())),
        fleet_timer_(loop_.context()) {
    if (options.fleet) {
      fleet_.emplace(loop_.context(), *options.fleet);
      state_.link_fleet_page();
    }
  }

  int run() {
    loop_.catch_signals([this](int signal) { stop(exit_code_for_stop(signal)); });
    server_.start();
    if (fleet_)
      poll_fleet();
    // run() throws when nvidia-smi cannot be started at all.
    return loop_.run([this] {
      auto address = server_.local_endpoint();
      std::string host = address.address().to_string();
      if (address.address().is_v6())
        host = "[" + host + "]";
      log_line(std::string(server_.tls() ? "serving https://" : "serving http://") + host + ":" +
               std::to_string(address.port()) + "/ (metrics at /metrics)");
    });
  }

private:
  static asio::ip::tcp::endpoint endpoint(const std::string &listen) {
    auto parsed = parse_listen_address(listen);
    if (!parsed)
      throw AgentError(exit_usage, "--listen: expected HOST:PORT (127.0.0.1:9437, [::1]:9437, "
                                   ":9437), not \"" +
                                       listen + "\"");
    return *parsed;
  }

  void deliver(Snapshot snapshot) {
    limit_exposure(snapshot, exposure_); // before anything is kept or rendered
    state_.set_interval(loop_.sampler().interval());
    state_.add(snapshot, ServeClock::now());
  }

  // Every interval, on the server's own thread: the hosts asked (a poll still out, waiting on a
  // host's deadline, is not doubled) and /fleet.json rendered again from what each last said,
  // so that the hosts that answer keep coming while a stalled one runs out its deadline.
  void poll_fleet() {
    fleet_->poll([this] { render_fleet(); });
    render_fleet();
    fleet_timer_.expires_after(loop_.sampler().interval());
    fleet_timer_.async_wait([this](boost::system::error_code error) {
      if (!error && !loop_.stopping())
        poll_fleet();
    });
  }

  // Another host's sample is shown as that host gave it, less what this serve's own --expose
  // withholds: a fleet page beyond loopback must not pass on the user names or command lines
  // that a serve on this machine's loopback gives its own users.
  void render_fleet() {
    std::vector<HostReading> shown = fleet_->hosts();
    for (HostReading &reading : shown)
      if (reading.last_good)
        limit_exposure(*reading.last_good, exposure_);
    fleet_json_ = std::make_shared<const std::string>(
        format_fleet_json(shown, std::chrono::system_clock::now()));
  }

  HttpResponse fleet_answer(std::string_view path) const {
    if (path == "/fleet")
      return {200, "text/html; charset=utf-8", fleet_page(), {}, {}};
    return {200, "application/json", fleet_json_, {}, {}};
  }

  void stop(int code) {
    if (loop_.stopping())
      return;
    fleet_timer_.cancel();
    fleet_.reset(); // its requests in flight end now
    server_.stop();
    loop_.stop(code);
  }

  Exposure exposure_;
  SamplingLoop loop_;
  ServeState state_;
  HttpServer server_;
  asio::steady_timer fleet_timer_;
  std::optional<FleetPoller> fleet_;
  std::shared_ptr<const std::string> fleet_json_;
};

} // namespace

int run_serve(const ServeOptions &options) {
  ignore_write_signals();
  try {
    Serve serve(options);
    int code = serve.run();
    finish_log();
    return code;
  } catch (const boost::system::system_error &error) {
    throw AgentError(exit_io, "cannot listen on " + options.listen + ": " + error.code().message());
  }
}

} // namespace nvsmi
