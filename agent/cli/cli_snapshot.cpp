#include "cli/cli.hpp"
#include "commands/snapshot_command.hpp"
#include "core/exit_codes.hpp"
#include "files/file_io.hpp"

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <unistd.h>

namespace nvsmi {
namespace {

SubcommandRun snapshot_options(CLI::App *command) {
  struct Settings {
    SnapshotOptions options;
    std::string source = "xml", format; // format empty: not given
    KernelLogCli kernel_log;
    JobMappingCli job_mapping;
  };
  auto settings = std::make_shared<Settings>();
  SnapshotOptions &options = settings->options;

  add_source_option(command, settings->source,
                    "What to ask nvidia-smi for: xml (-q -x) or csv (--query-gpu); a fixture is "
                    "told apart by content");
  command
      ->add_option("--format", settings->format,
                   "table (one screen for people: a line per GPU, coloured on a terminal unless "
                   "NO_COLOR is set), legacy (the UI's document), json or csv. Default: table "
                   "when stdout is a terminal and there is no --output, else legacy")
      ->check(one_of({"table", "legacy", "json", "csv"}));
  CLI::Option *fixture = command
                             ->add_option("--fixture", options.fixture,
                                          "Read this recorded nvidia-smi output (XML or CSV) "
                                          "instead of running it; - for stdin")
                             ->check(caller_path({"-"}));
  add_nvidia_smi_option(command, options.nvidia_smi, fixture);
  add_timeout_option(command, options.timeout_seconds,
                     "Seconds nvidia-smi may take before it is killed");
  command
      ->add_option("--output", options.output, "Replace this file atomically instead of printing")
      ->check(caller_path());
  command
      ->add_option("--lock", options.lock,
                   "Exit at once (code 8) if another run holds this lock file")
      ->check(caller_path());
  command->add_flag(
      "--no-processes", [&options](std::int64_t) { options.processes = false; },
      "Do not run --query-compute-apps after the csv query (processes are then null)");
  command->add_flag(
      "--no-host", [&options](std::int64_t) { options.host = false; },
      "nvidia-smi runs on another machine (--nvidia-smi \"ssh gpu7 nvidia-smi\"): do not read "
      "this machine's /proc, so host and the processes' users and commands stay null");
  add_kernel_log_option(command, settings->kernel_log);
  add_job_mapping_option(command, settings->job_mapping);

  return {[settings] {
    settings->options.job_mapping_dir =
        settings->job_mapping.resolve(settings->options.fixture || !settings->options.host);
    settings->options.say_job_mapping_problems = settings->job_mapping.path.has_value();
    settings->options.kernel_log =
        settings->kernel_log.resolve(settings->options.fixture || !settings->options.host);
    settings->options.say_kernel_log_problems = settings->kernel_log.path.has_value();
    settings->options.source = settings->source == "csv" ? Source::csv : Source::xml;
    bool to_terminal = ::isatty(STDOUT_FILENO) == 1 && !settings->options.output;
    // The table for people at a terminal; a pipe, a file and --output keep the legacy
    // document that the UI and cron read, byte for byte as before the table existed.
    if (settings->format.empty())
      settings->options.format = to_terminal ? Format::table : Format::legacy;
    else
      settings->options.format = *format_from_name(settings->format);
    settings->options.table_style = table_style(to_terminal);
    if (settings->options.output) // refuse a device or a FIFO before nvidia-smi runs
      output_target(*settings->options.output);
    run_snapshot(settings->options);
    return exit_ok;
  }};
}

} // namespace

Subcommand add_snapshot_command(CLI::App &app) {
  return add_subcommand(app, "snapshot", "Read the GPUs' state once and print it.",
                        snapshot_options);
}

} // namespace nvsmi
