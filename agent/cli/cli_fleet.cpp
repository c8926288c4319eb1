#include "cli/cli.hpp"
#include "commands/fleet_command.hpp"
#include "core/exit_codes.hpp"
#include "core/number_text.hpp"
#include "fleet/fleet_hosts.hpp"
#include "fleet/fleet_prometheus.hpp"

#include <memory>
#include <unistd.h>

namespace nvsmi {

bool FleetClientCli::given() const {
  return hosts_option->count() > 0 || hosts_file_option->count() > 0;
}

FleetClientOptions FleetClientCli::finish(const std::string &command) const {
  FleetClientOptions client;
  try {
    if (hosts_option->count() > 0)
      client.hosts = parse_fleet_hosts(hosts);
    else if (hosts_file_option->count() > 0)
      client.hosts = read_fleet_hosts_file(hosts_file);
  } catch (const AgentError &error) {
    // The list's reader names the options as fleet and top spell them; serve's are
    // --fleet-hosts and --fleet-hosts-file.
    std::string message = error.what();
    if (message.rfind("--hosts", 0) == 0)
      message.replace(0, 7, hosts_option->get_name());
    throw AgentError(error.code(), message);
  }
  if (client.hosts.empty())
    throw AgentError(exit_usage, command + ": name the agents with " + hosts_option->get_name() +
                                     " or " + hosts_file_option->get_name());
  FleetClientOptions with_hosts = connection();
  with_hosts.hosts = std::move(client.hosts);
  return with_hosts;
}

FleetClientOptions FleetClientCli::connection() const {
  FleetClientOptions client;
  if (user_option->count() > 0)
    client.credentials = read_fleet_credentials(user, password_file);
  client.timeout = to_ms(timeout_seconds);
  client.ca_file = ca_file;
  return client;
}

void add_fleet_client_options(CLI::App *command, FleetClientCli &target,
                              const std::string &prefix) {
  target.hosts_option =
      command
          ->add_option(prefix + "hosts", target.hosts,
                       "The agents to ask, HOST:PORT,... of their serve (https://HOST:PORT "
                       "for one serving TLS; [ADDRESS]:PORT for IPv6)")
          ->type_name("LIST");
  target.hosts_file_option =
      command
          ->add_option(prefix + "hosts-file", target.hosts_file,
                       "The agents to ask, one HOST:PORT a line (# starts a comment)")
          ->type_name("FILE")
          ->check(caller_path());
  target.hosts_option->excludes(target.hosts_file_option);
  target.hosts_file_option->excludes(target.hosts_option);
  command
      ->add_option(prefix + "timeout", target.timeout_seconds,
                   "Seconds each host has to answer, connection and TLS included; a host that "
                   "takes longer is shown as unreachable")
      ->type_name("SECONDS")
      ->check(finite_range(0.1, 600.0, "seconds"))
      ->default_str("3");
  command
      ->add_option("--fleet-ca", target.ca_file,
                   "Check https:// hosts' certificates against these certificate authorities "
                   "(PEM) rather than the system's")
      ->type_name("FILE")
      ->check(caller_path());
  target.user_option =
      command->add_option("--fleet-user", target.user, "Send basic auth as this user to every host")
          ->type_name("NAME");
  CLI::Option *password =
      command
          ->add_option("--fleet-password-file", target.password_file,
                       "The basic-auth password: the first line of this file (never on the "
                       "command line, where ps shows it)")
          ->type_name("FILE")
          ->check(caller_path());
  target.user_option->needs(password);
  password->needs(target.user_option);
}

bool SshCli::given() const { return hosts_option->count() > 0 || hosts_file_option->count() > 0; }

SshFleetOptions SshCli::finish(double interval_seconds, double timeout_seconds) const {
  SshFleetOptions options;
  options.hosts =
      hosts_option->count() > 0 ? parse_ssh_hosts(hosts) : read_ssh_hosts_file(hosts_file);
  if (!config.empty())
    options.ssh_config = config;
  options.interval = to_ms(interval_seconds);
  options.timeout = timeout_option && timeout_option->count() > 0
                        ? to_ms(timeout_seconds)
                        : std::chrono::milliseconds(10000);
  return options;
}

void add_ssh_options(CLI::App *command, SshCli &target, const FleetClientCli *serve_hosts) {
  target.hosts_option =
      command
          ->add_option("--ssh", target.hosts,
                       "Sample these machines over ssh, [USER@]HOST[:PORT],... with your own ssh "
                       "config, keys and known_hosts; nothing to install there but nvidia-smi")
          ->type_name("LIST");
  target.hosts_file_option =
      command
          ->add_option("--ssh-hosts-file", target.hosts_file,
                       "The machines to sample over ssh, one [USER@]HOST[:PORT] a line (# starts a "
                       "comment)")
          ->type_name("FILE")
          ->check(caller_path());
  command
      ->add_option("--ssh-config", target.config,
                   "ssh reads this config file (ssh -F) rather than ~/.ssh/config")
      ->type_name("FILE")
      ->check(caller_path());
  target.hosts_option->excludes(target.hosts_file_option);
  target.hosts_file_option->excludes(target.hosts_option);
  target.timeout_option = command->get_option_no_throw("--timeout");
  if (serve_hosts)
    for (CLI::Option *ssh : {target.hosts_option, target.hosts_file_option})
      for (CLI::Option *hosts : {serve_hosts->hosts_option, serve_hosts->hosts_file_option}) {
        ssh->excludes(hosts);
        hosts->excludes(ssh);
      }
}

namespace {

SubcommandRun fleet_options(CLI::App *command) {
  struct Settings {
    FleetOptions options;
    FleetClientCli client;
    SshCli ssh;
    std::string format = "text";
    std::string prometheus;
  };
  auto settings = std::make_shared<Settings>();
  add_fleet_client_options(command, settings->client, "--");
  add_ssh_options(command, settings->ssh, &settings->client);
  CLI::Option *prometheus =
      command
          ->add_option("--prometheus", settings->prometheus,
                       "Read the fleet from this Prometheus' HTTP API (http(s)://HOST:PORT"
                       "[/PREFIX]) rather than asking each agent: every instance it scrapes")
          ->type_name("URL");
  prometheus->excludes(settings->client.hosts_option);
  prometheus->excludes(settings->client.hosts_file_option);
  settings->client.hosts_option->excludes(prometheus);
  settings->client.hosts_file_option->excludes(prometheus);
  for (CLI::Option *ssh : {settings->ssh.hosts_option, settings->ssh.hosts_file_option}) {
    prometheus->excludes(ssh);
    ssh->excludes(prometheus);
  }
  command->add_option("--format", settings->format, "text (for people) or json")
      ->check(one_of({"text", "json"}))
      ->capture_default_str();
  return {[settings] {
    FleetOptions &options = settings->options;
    if (settings->ssh.given()) {
      options.ssh = settings->ssh.finish(1, settings->client.timeout_seconds);
    } else if (!settings->prometheus.empty()) {
      options.prometheus = parse_prometheus_url(settings->prometheus);
      options.client = settings->client.connection();
    } else {
      options.client = settings->client.finish("fleet");
    }
    options.json = settings->format == "json";
    options.table_style = table_style(::isatty(STDOUT_FILENO) == 1);
    return run_fleet(options);
  }};
}

} // namespace

Subcommand add_fleet_command(CLI::App &app) {
  return add_subcommand(app, "fleet",
                        "Many hosts at once: asks each agent's serve for its latest sample, all "
                        "at once with a deadline (or reads them from a Prometheus, or samples each "
                        "machine over ssh with nothing installed there), and shows every "
                        "host's GPUs with the fleet's summary line; an unreachable or stale host "
                        "is said to be.",
                        fleet_options);
}

} // namespace nvsmi
