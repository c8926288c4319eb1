// `fleet --ssh`, `top --ssh` and `pick --ssh`: machines with nothing installed but nvidia-smi and
// sshd, each sampled through OpenSSH's own client as the user runs it (their config, agent, keys
// and known_hosts; BatchMode, so that nothing ever asks a question). Per host: one connection
// (`ssh -M -N`, its control socket in a private folder), and over it the sampler's two
// long-lived nvidia-smi loops (the GPU query and the compute processes, read by the same readers
// as locally) and, when the processes on its GPUs change, one `ps` of their pids for who runs
// them. What a host prints is hostile input: the readers' limits, a bounded ps, printable text.
#pragma once

#include "fleet/fleet_poller.hpp"

#include <boost/asio/io_context.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace nvsmi {

struct SshFleetOptions {
  std::vector<FleetHost> hosts;          // parse_ssh_hosts's, at most max_ssh_hosts
  std::optional<std::string> ssh_config; // ssh -F FILE; none: the user's own (~/.ssh/config)
  std::chrono::milliseconds interval{1000};
  // How long a connection may take (ssh's ConnectTimeout, rounded up to whole seconds), and a ps.
  std::chrono::milliseconds timeout{10000};
  std::string ssh = "ssh"; // the client, looked up on PATH
};

// The words of the ssh command that runs `remote` on `host` over the connection whose control
// socket is `socket` (without a master there, ssh connects on its own). Every remote word is
// shell-safe or one single-quoted word: ssh joins them with spaces for the remote shell.
// `stdin_held`: ssh's stdin is the caller's pipe, forwarded to the remote command (else -n).
std::vector<std::string> ssh_session_command(const SshFleetOptions &options, const FleetHost &host,
                                             const std::string &socket,
                                             const std::vector<std::string> &remote,
                                             bool stdin_held = false);
// What runs nvidia-smi on the host, the sampler's arguments after it: a POSIX shell that ends it
// when its session ends, whatever it prints.
std::vector<std::string> remote_nvidia_smi();
// The master: `ssh -M -N` holding the connection open and its control socket.
std::vector<std::string> ssh_master_command(const SshFleetOptions &options, const FleetHost &host,
                                            const std::string &socket);

// One ps line, "  PID   UID USER ARGS...", as `ps -o pid=,uid=,user:64=,args=` prints it.
struct RemoteProcess {
  std::int64_t pid = 0;
  std::int64_t uid = 0;
  std::string user;    // printable, at most 64 bytes
  std::string command; // valid UTF-8, at most 4096 bytes
};
// What a host's ps printed: the lines naming a pid that was asked for, read as above; any other
// line is skipped. Pure, for the tests.
std::vector<RemoteProcess> read_remote_ps(std::string_view out,
                                          const std::vector<std::int64_t> &asked);

class SshFleet {
public:
  // `on_change`: a host's reading changed (a sample, a problem), on the context's thread.
  SshFleet(boost::asio::io_context &context, SshFleetOptions options,
           std::function<void()> on_change);
  ~SshFleet();
  SshFleet(const SshFleet &) = delete;
  SshFleet &operator=(const SshFleet &) = delete;

  // Makes the private folder and starts every host's connection. Throws AgentError: exit_io
  // where the folder cannot be made, exit_not_found where ssh cannot be run at all.
  void start();
  // Ends every ssh it started, reaps them, removes the folder, then calls `done`.
  void stop(std::function<void()> done);

  // Each host as of `now` (system clock for ages, steady for staleness): ok while its samples are
  // fresh; stale once none came for 3 intervals (at least the timeout), with its last; unreachable
  // with ssh's or nvidia-smi's own words while it has never answered and said why; waiting
  // before that, or, past `deadline_passed`, unreachable "no answer in N s".
  const std::vector<HostReading> &hosts(bool deadline_passed = false);
  // Every host has answered (a sample with its process lists, and who runs those processes) or
  // said why not.
  bool all_answered();

  struct Host;

private:
  void start_host(Host &host);
  void watch_socket(Host &host);
  void connected(Host &host);
  void sampled(Host &host, Snapshot snapshot);
  void ask_ps(Host &host, std::vector<std::int64_t> pids);
  void publish(Host &host, Snapshot snapshot);
  void finish_stop();
  // Joins the ps threads, removes the sockets and the folder: at the end of stop, or at the end.
  void remove_files();

  boost::asio::io_context &context_;
  SshFleetOptions options_;
  std::function<void()> on_change_;
  std::string folder_;
  std::vector<std::unique_ptr<Host>> hosts_;
  std::vector<HostReading> readings_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
  bool stopping_ = false;
  std::size_t stops_left_ = 0;
  std::function<void()> on_stopped_;
};

// `fleet --ssh` and `pick --ssh`: each host's first sample with its process lists (and who runs
// those processes), or why it has none, once every host has answered or at the timeout and 5 s
// more (then a host still silent is unreachable, "no answer in N s"). Every ssh it started is
// ended and reaped before it returns, within 5 s more. Throws as SshFleet::start.
std::vector<HostReading> sample_ssh_hosts_once(const SshFleetOptions &options);

} // namespace nvsmi
