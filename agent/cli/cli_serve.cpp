#include "cli/cli.hpp"
#include "commands/serve_command.hpp"
#include "formats/prometheus_metrics.hpp"

#include <memory>

namespace nvsmi {

namespace {

SubcommandRun serve_options(CLI::App *command) {
  struct Settings {
    ServeOptions options;
    SamplingCli sampling;
    KernelLogCli kernel_log;
    double request_timeout_seconds = 10;
    std::string metric_names = "nvsmi";
    FleetClientCli fleet;
  };
  auto settings = std::make_shared<Settings>();
  ServeOptions &options = settings->options;

  add_sampling_options(command, settings->sampling);
  add_kernel_log_option(command, settings->kernel_log);
  command
      ->add_option("--listen", options.listen,
                   "HOST:PORT to listen on; 0.0.0.0:PORT or :PORT for every address")
      ->type_name("HOST:PORT")
      ->capture_default_str();
  command
      ->add_option("--expose", options.expose,
                   "Serve more than each GPU process's program name: command-lines (full "
                   "command lines, never in /metrics), users (user names; served by default "
                   "on a loopback --listen). See docs/SERVE.md, Security")
      ->check(one_of({"command-lines", "users"}))
      ->delimiter(',');
  command
      ->add_option("--metric-names", settings->metric_names,
                   "Names of the GPU families in /metrics: nvsmi (the agent's own) or dcgm (the "
                   "DCGM exporter's names, units and labels, for dashboards and alerts written for "
                   "it). See docs/DCGM.md")
      ->check(one_of({"nvsmi", "dcgm"}))
      ->capture_default_str();
  command->add_flag("--metrics-processes", options.metrics.processes,
                    "Per-process series in /metrics (nvsmi_gpu_process_*, labelled pid): a new "
                    "series with every process a user starts. See docs/SERVE.md, How many series");
  command
      ->add_option("--metrics-users", options.metrics.users,
                   "Users named in the per-user series of /metrics, those holding the most GPU "
                   "memory; the others are summed as user=\"(other users)\"; 0: none")
      ->type_name("N")
      ->check(whole_range(0, MetricsSelection::max_metrics_users))
      ->capture_default_str();
  command
      ->add_option("--metrics-include", options.metrics.include,
                   "Only these families in /metrics: names, or prefixes ending in '*' "
                   "(nvsmi_gpu_pcie_*); a name no family has is refused, with the list")
      ->type_name("FAMILY")
      ->delimiter(',')
      ->check(CLI::Validator(metrics_include_problem, "FAMILY", "metric family"));
  command
      ->add_option("--web.config.file", options.web_config_file,
                   "The Prometheus exporters' web config (YAML): TLS (tls_server_config: "
                   "cert_file, key_file) and basic auth (basic_auth_users: user: bcrypt "
                   "hash). See docs/SERVE.md, Security")
      ->check(caller_path()); // under sudo it would read root's files, and echo their keys
  command
      ->add_option("--history", options.history_seconds,
                   "Seconds of samples kept for /api/v1/history and the dashboard")
      ->type_name("SECONDS")
      ->check(finite_range(0.0, 7 * 86400.0, "seconds"))
      ->capture_default_str();
  command
      ->add_option("--history-max-mib", options.history_max_mib,
                   "MiB of memory the history may hold; the oldest samples go first")
      ->type_name("MIB")
      ->check(whole_range(1, 65536, "MiB"))
      ->capture_default_str();
  command
      ->add_option("--max-connections", options.limits.max_connections,
                   "Clients served at once; a new one past it closes the one idle longest")
      ->check(whole_range(1, 100000))
      ->capture_default_str();
  command
      ->add_option("--max-connections-per-address", options.limits.max_connections_per_address,
                   "Connections one remote address (IPv6: its /64) may hold; more are closed at "
                   "once. Loopback's are bounded by --max-connections alone")
      ->check(whole_range(1, 100000))
      ->capture_default_str();
  command
      ->add_option("--request-timeout", settings->request_timeout_seconds,
                   "Seconds a client has to send a whole request, idle time included")
      ->type_name("SECONDS")
      ->check(finite_range(0.1, 3600.0, "seconds"))
      ->capture_default_str();
  add_fleet_client_options(command, settings->fleet, "--fleet-");
  return {[settings] {
    if (settings->fleet.given())
      settings->options.fleet = settings->fleet.finish("serve");
    settings->options.limits.request_timeout =
        std::chrono::milliseconds(static_cast<long long>(settings->request_timeout_seconds * 1000));
    settings->sampling.finish();
    settings->sampling.options.kernel_log = settings->kernel_log.resolve(
        settings->sampling.options.fixture || !settings->sampling.options.host);
    settings->options.sampling = settings->sampling.options;
    settings->options.metrics.names =
        settings->metric_names == "dcgm" ? MetricNames::dcgm : MetricNames::nvsmi;
    return run_serve(settings->options);
  }};
}

} // namespace

Subcommand add_serve_command(CLI::App &app) {
  return add_subcommand(
      app, "serve",
      "Sample in the background and serve Prometheus metrics (/metrics), JSON "
      "(/api/v1/...) and a live dashboard (/) over HTTP; with --fleet-hosts, other "
      "agents' GPUs too (/fleet, /fleet.json).",
      serve_options);
}

} // namespace nvsmi
