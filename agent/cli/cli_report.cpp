#include "cli/cli.hpp"
#include "commands/job_command.hpp"
#include "core/exit_codes.hpp"
#include "files/file_io.hpp"
#include "report/report.hpp"

#include "nvsmi/allocation.hpp"
#include "nvsmi/timestamp.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

namespace nvsmi {
namespace {

// ISO 8601 ("2024-03-14T10:00:00", offset optional) or nvidia-smi's "2024/03/14 10:00:00".
std::optional<Timestamp> parse_time(const std::string &text) {
  if (auto iso = parse_iso8601_timestamp(text))
    return iso;
  return parse_csv_timestamp(text);
}

const CLI::Validator time_validator(
    [](std::string &text) {
      return parse_time(text) ? std::string()
                              : "not a time like 2024-03-14T10:00:00 or 2024/03/14 10:00:00";
    },
    "TIME");

// `text` on stdout, or replacing `output` atomically.
void write_output(const std::string &text, const std::optional<std::string> &output) {
  if (output) {
    replace_file_atomically(*output, text);
  } else if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size() ||
             std::fflush(stdout) != 0) {
    throw AgentError(exit_io,
                     std::string("cannot write to standard output: ") + std::strerror(errno));
  }
}

SubcommandRun report_options(CLI::App *command) {
  struct Settings {
    ReportOptions options;
    std::string from, to, format = "text";
    std::optional<std::string> output;
    bool by_account = false;
  };
  auto settings = std::make_shared<Settings>();
  ReportOptions &options = settings->options;

  command
      ->add_option("files", options.files,
                   "CSV or JSON logs; rotated ones together, in any order (gpu-log.csv.2 "
                   "gpu-log.csv.1 gpu-log.csv)")
      ->required()
      ->check(caller_path());
  command->add_option("--from", settings->from, "Leave out rows before this time")
      ->check(time_validator);
  command->add_option("--to", settings->to, "Leave out rows after this time")
      ->check(time_validator);
  add_gpu_option(command, options.gpus, "Only these GPUs; one with no row in the logs: exit 6");
  command
      ->add_option("--format", settings->format,
                   "text, json (one line), html (one page), or csv with --by-job (a row per job: "
                   "GPU-hours held, used, idle, unused, energy) or --by-account")
      ->check(one_of({"text", "json", "html", "csv"}))
      ->capture_default_str();
  command
      ->add_option("--output", settings->output, "Replace this file atomically instead of printing")
      ->check(caller_path());
  command->add_flag("--by-job", options.by_job,
                    "Add the per-job ledger: each batch job's GPUs, time, utilization, idle and "
                    "allocated-but-unused time, peak memory, energy and a finding (from JSON logs "
                    "of watch with --job-mapping-dir)");
  command->add_flag("--by-account", settings->by_account,
                    "The per-job ledger rolled up per Slurm account (GPU-hours held, used, idle, "
                    "unused); with --format csv a row per account instead of per job");
  command->add_flag("--details", options.details,
                    "Text: after the findings and the users, the files and rows read and each "
                    "GPU's figures (time covered, utilization, memory, power, temperature, "
                    "throttling)");
  command
      ->add_option("--interval", options.interval,
                   "Seconds between samples (default: the median spacing of the first samples)")
      ->type_name("SECONDS")
      ->check(finite_range(0.001, 86400.0, "seconds"));

  return {[settings] {
    if (!settings->from.empty())
      settings->options.from = parse_time(settings->from);
    if (!settings->to.empty())
      settings->options.to = parse_time(settings->to);
    if (settings->by_account)
      settings->options.by_job = true; // the accounts are the jobs' roll-up
    if (settings->format == "csv" && !settings->options.by_job)
      throw AgentError(exit_usage, "--format csv needs --by-job (it is the per-job ledger)");
    if (settings->output) // refuse a device or a FIFO before reading the logs
      output_target(*settings->output);
    Report report = make_report(settings->options);
    std::string text =
        settings->format == "csv"
            ? (settings->by_account ? format_accounts_csv(report) : format_jobs_csv(report))
        : settings->format == "json" ? format_report_json(report)
        : settings->format == "html" ? format_report_html(report)
                                     : format_report_text(report);
    write_output(text, settings->output);
    return exit_ok;
  }};
}

SubcommandRun job_options(CLI::App *command) {
  struct Settings {
    JobOptions options;
    std::string from, to, format = "text";
  };
  auto settings = std::make_shared<Settings>();
  // The value is not repeated back: it may be any bytes, and this message reaches a terminal.
  command
      ->add_option("JOBID", settings->options.job_id,
                   "The batch job's id, as the scheduler numbers it")
      ->required()
      ->check(CLI::Validator(
          [](std::string &text) {
            return is_job_id(text) ? std::string()
                                   : shown_value(text) + " is not a job id (1 to 20 digits)";
          },
          "JOBID", "job id"));
  command
      ->add_option("--log", settings->options.logs.files,
                   "JSON logs of watch --json-log (with --job-mapping-dir); rotated ones together, "
                   "in any order; repeatable. Without it: the local serve's history, else " +
                       std::string(default_job_log) + "* ($NVSMI_JOB_LOG)")
      ->type_name("FILE")
      ->check(caller_path());
  command
      ->add_option("--serve", settings->options.serve,
                   "The local serve asked without --log (a loopback address)")
      ->type_name("HOST:PORT")
      ->capture_default_str();
  command->add_option("--from", settings->from, "Leave out rows before this time")
      ->check(time_validator);
  command->add_option("--to", settings->to, "Leave out rows after this time")
      ->check(time_validator);
  command->add_option("--format", settings->format, "text or json (one line)")
      ->check(one_of({"text", "json"}))
      ->capture_default_str();
  return {[settings] {
    JobOptions &options = settings->options;
    if (!settings->from.empty())
      options.logs.from = parse_time(settings->from);
    if (!settings->to.empty())
      options.logs.to = parse_time(settings->to);
    options.json = settings->format == "json";
    return run_job(options);
  }};
}

} // namespace

Subcommand add_job_command(CLI::App &app) {
  return add_subcommand(app, "job",
                        "What one batch job did with the GPUs it held, from the JSON logs or the "
                        "local serve's history: GPUs, "
                        "time, utilization, idle and allocated-but-unused time, peak memory, "
                        "energy, and a finding with advice.",
                        job_options);
}

Subcommand add_report_command(CLI::App &app) {
  return add_subcommand(
      app, "report",
      "Summarize logs (watch --csv-log or --json-log, or nvidia-smi --query-gpu -l) per "
      "GPU: utilization, idle and starved time, memory, power, energy, temperature, and "
      "a finding; from JSON logs, also a ledger of the GPU-hours each user held.",
      report_options);
}

} // namespace nvsmi
