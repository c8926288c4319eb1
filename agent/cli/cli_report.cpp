#include "cli/cli.hpp"
#include "core/exit_codes.hpp"
#include "files/file_io.hpp"
#include "report/report.hpp"

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

SubcommandRun report_options(CLI::App *command) {
  struct Settings {
    ReportOptions options;
    std::string from, to, format = "text";
    std::optional<std::string> output;
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
  command->add_option("--format", settings->format, "text, json (one line) or html (one page)")
      ->check(CLI::IsMember({"text", "json", "html"}))
      ->capture_default_str();
  command
      ->add_option("--output", settings->output, "Replace this file atomically instead of printing")
      ->check(caller_path());
  command
      ->add_option("--interval", options.interval,
                   "Seconds between samples (default: the median spacing of the first samples)")
      ->type_name("SECONDS")
      ->check(finite_range(0.001, 86400.0));

  return {[settings] {
    if (!settings->from.empty())
      settings->options.from = parse_time(settings->from);
    if (!settings->to.empty())
      settings->options.to = parse_time(settings->to);
    if (settings->output) // refuse a device or a FIFO before reading the logs
      output_target(*settings->output);
    Report report = make_report(settings->options);
    std::string text = settings->format == "json"   ? format_report_json(report)
                       : settings->format == "html" ? format_report_html(report)
                                                    : format_report_text(report);
    if (settings->output) {
      replace_file_atomically(*settings->output, text);
    } else if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size() ||
               std::fflush(stdout) != 0) {
      throw AgentError(exit_io,
                       std::string("cannot write to standard output: ") + std::strerror(errno));
    }
    return exit_ok;
  }};
}

} // namespace

Subcommand add_report_command(CLI::App &app) {
  return add_subcommand(
      app, "report",
      "Summarize logs (watch --csv-log or --json-log, or nvidia-smi --query-gpu -l) per "
      "GPU: utilization, idle and starved time, memory, power, energy, temperature, and "
      "a finding; from JSON logs, also a ledger of the GPU-hours each user held.",
      report_options);
}

} // namespace nvsmi
