#include "cli/cli.hpp"
#include "commands/fleet_command.hpp"
#include "core/exit_codes.hpp"
#include "core/number_text.hpp"
#include "fleet/fleet_hosts.hpp"

#include <memory>
#include <unistd.h>

namespace nvsmi {
namespace {

SubcommandRun fleet_options(CLI::App *command) {
  struct Settings {
    FleetOptions options;
    std::string hosts, hosts_file, user, password_file, format = "text";
    double timeout_seconds = 3;
  };
  auto settings = std::make_shared<Settings>();
  CLI::Option *hosts =
      command
          ->add_option("--hosts", settings->hosts,
                       "The agents to ask, HOST:PORT,... of their serve (https://HOST:PORT "
                       "for one serving TLS; [ADDRESS]:PORT for IPv6)")
          ->type_name("LIST");
  CLI::Option *hosts_file =
      command
          ->add_option("--hosts-file", settings->hosts_file,
                       "The agents to ask, one HOST:PORT a line (# starts a comment)")
          ->type_name("FILE")
          ->check(caller_path());
  hosts->excludes(hosts_file);
  hosts_file->excludes(hosts);
  command->add_option("--format", settings->format, "text (for people) or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  command
      ->add_option("--timeout", settings->timeout_seconds,
                   "Seconds each host has to answer, connection and TLS included; a host that "
                   "takes longer is shown as unreachable")
      ->type_name("SECONDS")
      ->check(finite_range(0.1, 600.0))
      ->default_str("3");
  command
      ->add_option("--fleet-ca", settings->options.client.ca_file,
                   "Check https:// hosts' certificates against these certificate authorities "
                   "(PEM) rather than the system's")
      ->type_name("FILE")
      ->check(caller_path());
  CLI::Option *user =
      command
          ->add_option("--fleet-user", settings->user, "Send basic auth as this user to every host")
          ->type_name("NAME");
  CLI::Option *password =
      command
          ->add_option("--fleet-password-file", settings->password_file,
                       "The basic-auth password: the first line of this file (never on the "
                       "command line, where ps shows it)")
          ->type_name("FILE")
          ->check(caller_path());
  user->needs(password);
  password->needs(user);
  return {[settings, hosts, hosts_file, user] {
    FleetOptions &options = settings->options;
    if (hosts->count() > 0)
      options.client.hosts = parse_fleet_hosts(settings->hosts);
    else if (hosts_file->count() > 0)
      options.client.hosts = read_fleet_hosts_file(settings->hosts_file);
    else
      throw AgentError(exit_usage, "fleet: name the agents with --hosts or --hosts-file");
    if (user->count() > 0)
      options.client.credentials = read_fleet_credentials(settings->user, settings->password_file);
    options.client.timeout = to_ms(settings->timeout_seconds);
    options.json = settings->format == "json";
    options.table_style = table_style(::isatty(STDOUT_FILENO) == 1);
    return run_fleet(options);
  }};
}

} // namespace

Subcommand add_fleet_command(CLI::App &app) {
  return add_subcommand(app, "fleet",
                        "Many hosts at once: asks each agent's serve for its latest sample, all "
                        "at once with a deadline, and shows every host's GPUs with the fleet's "
                        "summary line; an unreachable or stale host is said to be.",
                        fleet_options);
}

} // namespace nvsmi
