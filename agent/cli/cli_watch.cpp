#include "cli/cli.hpp"
#include "commands/watch_command.hpp"
#include "core/exit_codes.hpp"

#include <memory>

namespace nvsmi {

namespace {

// The largest --csv-max-bytes and --json-max-bytes: a terabyte.
constexpr long long max_log_bytes = 1000LL * 1000 * 1000 * 1000;

SubcommandRun watch_options(CLI::App *command) {
  struct Settings {
    WatchOptions options;
    SamplingCli sampling;
    KernelLogCli kernel_log;
    std::string format;
  };
  auto settings = std::make_shared<Settings>();
  WatchOptions &options = settings->options;

  add_sampling_options(command, settings->sampling);
  add_kernel_log_option(command, settings->kernel_log);
  command
      ->add_option("--format", settings->format,
                   "What stdout gets per sample: legacy, json (one line each) or csv. Default: "
                   "legacy, or nothing when --csv-log or --json-log is given. (table is refused: "
                   "`nvsmi-agent top` is the table that refreshes)")
      ->check(one_of({"legacy", "json", "csv", "table"}));
  command
      ->add_option("--csv-log", options.csv_log,
                   "Append each sample's rows to this CSV file (header when new)")
      ->check(caller_path());
  command
      ->add_option("--csv-max-bytes", options.csv_rotation.max_bytes,
                   "Rotate the CSV log before it passes this size (0: never)")
      ->type_name("BYTES")
      ->check(whole_range(0, max_log_bytes, "bytes"))
      ->capture_default_str();
  command->add_option("--csv-keep", options.csv_rotation.keep, "Rotated CSV logs kept (FILE.1 ...)")
      ->check(whole_range(0, 1000))
      ->capture_default_str();
  command
      ->add_option("--json-log", options.json_log,
                   "Append each sample's typed snapshot to this file, one JSON line each; "
                   "gzip-compressed, a member per line, where the name ends in .gz")
      ->check(caller_path());
  command
      ->add_option("--json-max-bytes", options.json_rotation.max_bytes,
                   "Rotate the JSON log before it passes this size (0: never)")
      ->type_name("BYTES")
      ->check(whole_range(0, max_log_bytes, "bytes"))
      ->capture_default_str();
  command
      ->add_option("--json-keep", options.json_rotation.keep, "Rotated JSON logs kept (FILE.1 ...)")
      ->check(whole_range(0, 1000))
      ->capture_default_str();
  command->add_option("--count", options.count, "Stop after this many samples")
      ->check(whole_range(1, 1000000000));
  command
      ->add_option("--cost-every", options.cost_every_seconds,
                   "Seconds between the samples whose JSON carries the monitor's own cost (its "
                   "`agent` object: CPU and memory of the agent and of each nvidia-smi it runs); "
                   "0: never")
      ->type_name("SECONDS")
      ->check(finite_range(0, 86400.0, "seconds"))
      ->capture_default_str();
  return {[settings] {
    settings->sampling.finish();
    settings->sampling.options.kernel_log = settings->kernel_log.resolve(
        settings->sampling.options.fixture || !settings->sampling.options.host);
    settings->options.sampling = settings->sampling.options;
    const WatchOptions &o = settings->options;
    if (o.csv_log && o.json_log && *o.csv_log == *o.json_log)
      throw AgentError(exit_usage, "--csv-log and --json-log name the same file");
    if (settings->format == "table") // accepted by the check only to say where it is
      throw AgentError(exit_usage,
                       "watch --format table: watch writes a line per sample for "
                       "programs (legacy, json or csv); for a table that refreshes, run "
                       "`nvsmi-agent top`");
    if (!settings->format.empty())
      settings->options.format = format_from_name(settings->format);
    return run_watch(settings->options);
  }};
}

} // namespace

Subcommand add_watch_command(CLI::App &app) {
  return add_subcommand(
      app, "watch",
      "Sample continuously from one long-lived nvidia-smi: a line per sample on stdout "
      "(NDJSON), and/or a CSV log, and/or a JSON log.",
      watch_options);
}

} // namespace nvsmi
