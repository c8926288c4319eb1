#include "fleet/ssh_fleet.hpp"

#include "core/exit_codes.hpp"
#include "core/number_text.hpp"
#include "nvidia_smi/bounded_command.hpp"
#include "nvidia_smi/nvidia_smi_stream.hpp"
#include "nvsmi/utf8.hpp"
#include "sampling/sampler.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <map>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

namespace nvsmi {

namespace asio = boost::asio;
using std::chrono::milliseconds;
using std::chrono::steady_clock;
using std::chrono::system_clock;

namespace {

// A ps answer is asked again when the pids on the GPUs change, or after this long: a pid reused
// by another user's process is seen within it.
constexpr milliseconds ps_refresh{60000};
constexpr std::size_t ps_output_limit = 1u << 20;
constexpr std::size_t said_limit = 300; // what is kept of a line ssh or nvidia-smi said

std::vector<std::string> ssh_base(const SshFleetOptions &options, const FleetHost &host,
                                  const std::string &socket) {
  std::vector<std::string> argv{options.ssh};
  if (options.ssh_config) {
    argv.push_back("-F");
    argv.push_back(*options.ssh_config);
  }
  long long seconds = std::max<long long>(1, (options.timeout.count() + 999) / 1000);
  for (std::string option :
       {std::string("BatchMode=yes"), "ConnectTimeout=" + std::to_string(seconds),
        "ControlPath=" + socket}) {
    argv.push_back("-o");
    argv.push_back(std::move(option));
  }
  argv.push_back("-T"); // no terminal: nothing the host prints is a terminal's to act on
  if (!host.user.empty()) {
    argv.push_back("-l");
    argv.push_back(host.user);
  }
  if (!host.port.empty()) {
    argv.push_back("-p");
    argv.push_back(host.port);
  }
  return argv;
}

} // namespace

// The last line `bytes` completes, as a printable line. (Named, not anonymous: Host holds one.)
class SaidLines {
public:
  void feed(std::string_view bytes) {
    for (char c : bytes) {
      if (c == '\n' || c == '\r') {
        take();
      } else if (pending_.size() < 4096) {
        pending_.push_back(c);
      }
    }
  }
  void take() {
    std::string line = printable_line(pending_, said_limit, '?');
    pending_.clear();
    if (line.find_first_not_of(' ') != std::string::npos)
      last_ = line;
  }
  const std::string &last() const { return last_; }
  void forget() { last_.clear(); }

private:
  std::string pending_, last_;
};

namespace {

// The master prints nothing on stdout (-N); its stderr is ssh's reason when it ends.
class MasterDecoder : public StreamDecoder {
public:
  explicit MasterDecoder(std::shared_ptr<SaidLines> said) : said_(std::move(said)) {}
  void feed(std::string_view, const Events &) override {}
  void feed_stderr(std::string_view bytes) override { said_->feed(bytes); }
  bool finish(const Events &, bool) override {
    said_->take();
    return false;
  }

private:
  std::shared_ptr<SaidLines> said_;
};

bool is_socket(const std::string &path) {
  struct stat info {};
  return ::lstat(path.c_str(), &info) == 0 && S_ISSOCK(info.st_mode);
}

std::string seconds_words(milliseconds span) { return seconds_text(span) + " s"; }

std::vector<std::int64_t> pids_of(const Snapshot &snapshot) {
  std::vector<std::int64_t> pids;
  for (const Gpu &gpu : snapshot.gpus)
    if (gpu.processes)
      for (const Process &process : *gpu.processes)
        if (process.pid && *process.pid > 0)
          pids.push_back(*process.pid);
  std::sort(pids.begin(), pids.end());
  pids.erase(std::unique(pids.begin(), pids.end()), pids.end());
  return pids;
}

bool whole_number(std::string_view text, std::int64_t &out) {
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), out);
  return !text.empty() && error == std::errc{} && end == text.data() + text.size();
}

// The next word of `line` from `at`, spaces before it skipped.
std::string_view next_word(std::string_view line, std::size_t &at) {
  while (at < line.size() && line[at] == ' ')
    ++at;
  std::size_t start = at;
  while (at < line.size() && line[at] != ' ')
    ++at;
  return line.substr(start, at - start);
}

} // namespace

std::vector<std::string> ssh_session_command(const SshFleetOptions &options, const FleetHost &host,
                                             const std::string &socket,
                                             const std::vector<std::string> &remote,
                                             bool stdin_held) {
  std::vector<std::string> argv = ssh_base(options, host, socket);
  if (!stdin_held)
    argv.push_back("-n"); // stdin from /dev/null
  // Over the master's connection; where it is not up, ssh connects on its own, with the same
  // checks.
  argv.insert(argv.end(), {"-o", "ControlMaster=no", "--", host.host});
  argv.insert(argv.end(), remote.begin(), remote.end());
  return argv;
}

std::vector<std::string> ssh_master_command(const SshFleetOptions &options, const FleetHost &host,
                                            const std::string &socket) {
  std::vector<std::string> argv = ssh_base(options, host, socket);
  argv.push_back("-n");
  // A dead peer is found within 15 s, and ssh ends: the stream starts it again with backoff.
  argv.insert(argv.end(), {"-M", "-N", "-o", "ControlPersist=no", "-o", "ServerAliveInterval=5",
                           "-o", "ServerAliveCountMax=3", "--", host.host});
  return argv;
}

std::vector<std::string> remote_nvidia_smi() {
  // sshd signals nothing to a command without a terminal when its session ends, and a loop that
  // prints nothing (compute-apps on an idle GPU) never meets the closed pipe: each session would
  // leave one nvidia-smi behind on the host. So nvidia-smi runs under a shell that ends it when
  // the session's stdin ends (the stream holds it open: StreamSettings::hold_stdin), passes its
  // exit status on, and keeps nothing of the session's output open after it. One word in single
  // quotes for the remote shell; the arguments the sampler adds follow as "$@".
  return {"sh", "-c",
          "'exec 3<&0; \"$@\" </dev/null 3<&- & c=$!; "
          "(cat <&3 >/dev/null 2>&1; kill $c 2>/dev/null) >/dev/null 2>&1 & w=$!; "
          "exec 3<&-; wait $c; s=$?; kill $w 2>/dev/null; exit $s'",
          "sh", "nvidia-smi"};
}

std::vector<RemoteProcess> read_remote_ps(std::string_view out,
                                          const std::vector<std::int64_t> &asked) {
  std::vector<RemoteProcess> found;
  while (!out.empty()) {
    std::size_t end = out.find('\n');
    std::string_view line = out.substr(0, end);
    out.remove_prefix(end == std::string_view::npos ? out.size() : end + 1);
    std::size_t at = 0;
    RemoteProcess process;
    std::string_view user;
    if (!whole_number(next_word(line, at), process.pid) ||
        !whole_number(next_word(line, at), process.uid) || process.uid < 0 ||
        (user = next_word(line, at)).empty() ||
        !std::binary_search(asked.begin(), asked.end(), process.pid))
      continue;
    if (std::any_of(found.begin(), found.end(),
                    [&](const RemoteProcess &seen) { return seen.pid == process.pid; }))
      continue;
    process.user = printable_line(user, 64, '?');
    std::string_view command = line.substr(std::min(line.size(), at));
    while (!command.empty() && command.front() == ' ')
      command.remove_prefix(1);
    process.command = printable_line(command, 4096, '?');
    found.push_back(std::move(process));
  }
  return found;
}

struct SshFleet::Host {
  explicit Host(asio::io_context &context) : socket_check(context) {}

  FleetHost target;
  std::string socket;
  std::shared_ptr<SaidLines> master_said = std::make_shared<SaidLines>();
  std::unique_ptr<NvidiaSmiStream> master;
  std::unique_ptr<Sampler> sampler;
  asio::steady_timer socket_check;
  bool connected = false;
  bool gave_up = false;   // nvidia-smi refused the query: it is not asked again
  std::string problem;    // why it is not ok, the latest said
  std::string bad_output; // the latest line of its output that could not be used
  std::optional<Snapshot> last_good, held;
  std::optional<system_clock::time_point> last_good_at;
  std::optional<steady_clock::time_point> last_sample;
  // Who runs the processes on its GPUs: the last ps, for which pids, and when it answered.
  std::thread ps_worker;
  bool ps_in_flight = false, ps_answered = false;
  std::vector<std::int64_t> ps_pids;
  steady_clock::time_point ps_at{};
  std::map<std::int64_t, RemoteProcess> owners;
};

SshFleet::SshFleet(asio::io_context &context, SshFleetOptions options,
                   std::function<void()> on_change)
    : context_(context), options_(std::move(options)), on_change_(std::move(on_change)) {}

SshFleet::~SshFleet() {
  *alive_ = false;
  for (auto &host : hosts_) {
    host->sampler.reset();
    host->master.reset();
  }
  remove_files();
}

void SshFleet::remove_files() {
  // A ps still out ends with its master's connection, by its deadline at the latest.
  for (auto &host : hosts_) {
    if (host->ps_worker.joinable())
      host->ps_worker.join();
    ::unlink(host->socket.c_str());
  }
  if (!folder_.empty() && ::rmdir(folder_.c_str()) == 0)
    folder_.clear();
}

void SshFleet::start() {
  // $XDG_RUNTIME_DIR only where it is this user's own and closed to others: whoever could rename
  // the folder made in it could put their own socket where ssh looks for the master's.
  const char *runtime = std::getenv("XDG_RUNTIME_DIR");
  struct stat info {};
  bool own = runtime && *runtime == '/' && ::stat(runtime, &info) == 0 && S_ISDIR(info.st_mode) &&
             info.st_uid == ::geteuid() && (info.st_mode & 077) == 0;
  std::string base = own ? runtime : "/tmp";
  // Private (0700): a control socket lets whoever can reach it run commands as this user there.
  std::string pattern = base + "/nvsmi-ssh.XXXXXX";
  if (!::mkdtemp(pattern.data())) {
    pattern = "/tmp/nvsmi-ssh.XXXXXX";
    if (!::mkdtemp(pattern.data()))
      throw AgentError(exit_io, std::string("cannot make a folder for ssh's control sockets in ") +
                                    "/tmp: " + std::strerror(errno));
  }
  folder_ = pattern;
  for (std::size_t i = 0; i < options_.hosts.size(); ++i) {
    auto host = std::make_unique<Host>(context_);
    host->target = options_.hosts[i];
    host->socket = folder_ + "/" + std::to_string(i);
    hosts_.push_back(std::move(host));
  }
  for (auto &host : hosts_)
    start_host(*host);
}

void SshFleet::start_host(Host &host) {
  StreamSettings settings;
  settings.command = ssh_master_command(options_, host.target, host.socket);
  settings.label = "ssh";
  settings.silence_is_an_answer = true; // -N: it never prints
  settings.first_backoff = milliseconds(1000);
  settings.max_backoff = milliseconds(30000);
  Host *at = &host;
  host.master = std::make_unique<NvidiaSmiStream>(
      context_, settings, std::make_unique<MasterDecoder>(host.master_said),
      [this, at](LogKind kind, const std::string &message) {
        if (kind != LogKind::problem || stopping_)
          return;
        // It ended: its reason is what it said last (auth, host key, refused, timed out).
        at->connected = false;
        ::unlink(at->socket.c_str()); // a socket left by a killed master would refuse the next
        const std::string &said = at->master_said->last();
        at->problem = said.empty()                  ? printable_line(message, said_limit, '?')
                      : said.rfind("ssh: ", 0) == 0 ? said
                                                    : "ssh: " + said;
        at->master_said->forget();
        watch_socket(*at);
        on_change_();
      },
      [](const std::string &) {});
  host.master->start(); // throws exit_not_found where ssh is not there
  watch_socket(host);
}

// Until the master's socket is there: then the connection is up, authenticated.
void SshFleet::watch_socket(Host &host) {
  Host *at = &host;
  host.socket_check.expires_after(milliseconds(50));
  host.socket_check.async_wait([this, at](boost::system::error_code error) {
    if (error || stopping_ || at->connected)
      return;
    if (is_socket(at->socket))
      return connected(*at);
    watch_socket(*at);
  });
}

void SshFleet::connected(Host &host) {
  host.connected = true;
  host.problem.clear(); // what ended the last connection is past
  if (host.sampler || host.gave_up)
    return;
  SamplerOptions sampling;
  sampling.interval_seconds = std::chrono::duration<double>(options_.interval).count();
  sampling.source = Source::csv;
  sampling.command =
      ssh_session_command(options_, host.target, host.socket, remote_nvidia_smi(), true);
  sampling.hold_stdin = true;
  sampling.pmon = PmonMode::off;
  sampling.activity = false;
  sampling.gpm = Gpm::off;
  sampling.host = false; // this machine's /proc is not the host's
  sampling.cpu_budget_percent = std::nullopt;
  Host *at = &host;
  host.sampler = std::make_unique<Sampler>(
      context_, sampling, [this, at](Snapshot snapshot) { sampled(*at, std::move(snapshot)); },
      [this, at](int) {
        at->gave_up = true;
        if (at->problem.empty())
          at->problem = "nvidia-smi refused the query";
        on_change_();
      },
      [this, at](LogKind kind, const std::string &message) {
        if (stopping_)
          return;
        if (kind == LogKind::problem) {
          // "nvidia-smi exited with code 127: sh: 1: nvidia-smi: not found": the stream's words
          // for a run without a sample, shortened for a line per host.
          std::string said = message;
          const std::string before = " before its first sample; on stderr:";
          if (std::size_t at_words = said.find(before); at_words != std::string::npos)
            said.replace(at_words, before.size(), ":");
          at->problem = printable_line(said, said_limit, '?');
          on_change_();
        } else if (kind == LogKind::bad_output) {
          at->bad_output = printable_line(message, said_limit, '?');
        }
      });
  try {
    host.sampler->start();
  } catch (const AgentError &error) {
    host.problem = printable_line(error.what(), said_limit, '?');
  }
  on_change_();
}

void SshFleet::sampled(Host &host, Snapshot snapshot) {
  if (stopping_)
    return;
  host.last_sample = steady_clock::now();
  std::vector<std::int64_t> pids = pids_of(snapshot);
  bool known =
      host.ps_answered && pids == host.ps_pids && steady_clock::now() - host.ps_at < ps_refresh;
  // The newest sample waits here while a ps is out: its answer publishes it.
  host.held = std::move(snapshot);
  if (host.ps_in_flight)
    return;
  if (!pids.empty() && !known)
    return ask_ps(host, std::move(pids));
  publish(host, std::move(*host.held));
}

void SshFleet::ask_ps(Host &host, std::vector<std::int64_t> pids) {
  std::string list;
  for (std::int64_t pid : pids)
    list += (list.empty() ? "" : ",") + std::to_string(pid);
  std::vector<std::string> argv = ssh_session_command(
      options_, host.target, host.socket,
      {"ps", "-ww", "-o", "pid=", "-o", "uid=", "-o", "user:64=", "-o", "args=", "-p", list});
  host.ps_in_flight = true;
  host.ps_pids = std::move(pids);
  if (host.ps_worker.joinable())
    host.ps_worker.join(); // the last run's thread, already past its last step
  CommandLimits limits;
  limits.timeout = options_.timeout;
  limits.max_output_bytes = ps_output_limit;
  std::weak_ptr<bool> alive = alive_;
  Host *at = &host;
  auto answered = [this, alive, at](bool ok, std::string out, std::string why) {
    std::shared_ptr<bool> still = alive.lock();
    if (!still || !*still)
      return;
    at->ps_in_flight = false;
    at->ps_answered = true;
    at->ps_at = steady_clock::now();
    at->owners.clear();
    if (ok)
      for (RemoteProcess &process : read_remote_ps(out, at->ps_pids))
        at->owners[process.pid] = std::move(process);
    else if (!stopping_)
      at->problem = "ps: " + printable_line(why, said_limit, '?');
    if (at->held && !stopping_)
      publish(*at, std::move(*at->held));
  };
  try {
    host.ps_worker = std::thread([this, argv, limits, answered] {
      bool ok = false;
      std::string out, why;
      try {
        CommandResult result = run_bounded(argv, limits);
        // ps exits 1 when none of the pids is there any more: an answer, not a failure.
        ok = result.term_signal == 0 && (result.exit_code == 0 || result.exit_code == 1);
        out = std::move(result.out);
        if (!ok)
          why = result.err.empty() ? "exited with code " + std::to_string(result.exit_code)
                                   : result.err;
      } catch (const std::exception &error) {
        why = error.what();
      }
      asio::post(context_, [answered, ok, out = std::move(out), why = std::move(why)]() mutable {
        answered(ok, std::move(out), std::move(why));
      });
    });
  } catch (const std::system_error &error) {
    answered(false, {}, std::string("no thread for ps: ") + error.what());
  }
}

void SshFleet::publish(Host &host, Snapshot snapshot) {
  host.held.reset();
  for (Gpu &gpu : snapshot.gpus)
    if (gpu.processes)
      for (Process &process : *gpu.processes) {
        auto owner = process.pid ? host.owners.find(*process.pid) : host.owners.end();
        if (owner == host.owners.end())
          continue;
        process.user = owner->second.user;
        process.uid = owner->second.uid;
        process.command = owner->second.command;
      }
  // The machine as it was reached: its own readings (CPU, memory, load) are not read over ssh.
  snapshot.host.emplace();
  snapshot.host->hostname = host.target.label();
  host.last_good = std::move(snapshot);
  host.last_good_at = system_clock::now();
  on_change_();
}

const std::vector<HostReading> &SshFleet::hosts(bool deadline_passed) {
  auto now = steady_clock::now();
  milliseconds stale_after = std::max(options_.interval * 3, options_.timeout);
  readings_.clear();
  for (const auto &host : hosts_) {
    HostReading reading;
    reading.host = host->target;
    reading.last_good = host->last_good;
    reading.last_good_at = host->last_good_at;
    if (host->last_good && host->last_sample && now - *host->last_sample <= stale_after) {
      reading.status = HostStatus::ok;
    } else if (host->last_good) {
      reading.status = HostStatus::stale;
      reading.problem =
          !host->problem.empty() ? host->problem : "no sample for " + seconds_words(stale_after);
    } else if (!host->problem.empty()) {
      reading.status = HostStatus::unreachable;
      reading.problem = host->problem;
    } else if (deadline_passed) {
      reading.status = HostStatus::unreachable;
      reading.problem = "no answer in " + seconds_words(options_.timeout);
      if (!host->bad_output.empty())
        reading.problem += ": " + host->bad_output;
    }
    readings_.push_back(std::move(reading));
  }
  return readings_;
}

bool SshFleet::all_answered() {
  // A sample whose process lists are still to come (its loop's first answer over a new
  // connection can take longer than the sampler waits) is not yet the host's answer.
  return std::all_of(hosts_.begin(), hosts_.end(), [](const auto &host) {
    if (!host->last_good)
      return !host->problem.empty();
    const std::vector<Gpu> &gpus = host->last_good->gpus;
    return std::all_of(gpus.begin(), gpus.end(),
                       [](const Gpu &gpu) { return gpu.processes || gpu.lost_reason; });
  });
}

void SshFleet::stop(std::function<void()> done) {
  if (stopping_)
    return;
  stopping_ = true;
  on_stopped_ = std::move(done);
  stops_left_ = 1; // this call's own, so that streams stopped at once cannot finish early
  auto one_done = [this] {
    if (--stops_left_ == 0)
      finish_stop();
  };
  for (auto &host : hosts_) {
    host->socket_check.cancel();
    // The sessions first, then the connection they run over.
    Host *at = host.get();
    auto stop_master = [at, one_done] {
      if (at->master)
        at->master->stop(one_done);
      else
        one_done();
    };
    ++stops_left_;
    if (host->sampler)
      host->sampler->stop(stop_master);
    else
      stop_master();
  }
  one_done();
}

void SshFleet::finish_stop() {
  remove_files();
  if (std::function<void()> done = std::exchange(on_stopped_, nullptr))
    done();
}

std::vector<HostReading> sample_ssh_hosts_once(const SshFleetOptions &options) {
  asio::io_context context;
  asio::steady_timer deadline(context), stop_deadline(context);
  std::optional<std::vector<HostReading>> readings;
  std::unique_ptr<SshFleet> fleet;
  auto take = [&](bool deadline_passed) {
    if (readings)
      return;
    readings = fleet->hosts(deadline_passed);
    deadline.cancel();
    fleet->stop([&context] { context.stop(); });
    // Each ssh is sent SIGTERM, then SIGKILL after a second; what is left then ends with `fleet`.
    stop_deadline.expires_after(milliseconds(5000));
    stop_deadline.async_wait([&context](boost::system::error_code error) {
      if (!error)
        context.stop();
    });
  };
  fleet = std::make_unique<SshFleet>(context, options, [&] {
    if (!readings && fleet->all_answered())
      asio::post(context, [&] { take(false); });
  });
  fleet->start();
  deadline.expires_after(options.timeout + milliseconds(5000));
  deadline.async_wait([&](boost::system::error_code error) {
    if (!error)
      take(true);
  });
  context.run();
  fleet.reset();
  return readings ? std::move(*readings) : std::vector<HostReading>{};
}

} // namespace nvsmi
