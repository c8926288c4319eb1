#include "cli.hpp"
#include "exit_codes.hpp"
#include "watch_command.hpp"

#include "nvsmi/csv_reader.hpp"

#include <algorithm>
#include <memory>

namespace nvsmi {
namespace {

// A field the agent already reads is in the output under its typed name; asking twice would only
// add a second, untyped copy.
void drop_known_fields(std::vector<std::string> &fields) {
  std::vector<std::string> kept;
  for (std::string &field : fields)
    if (!CsvLayout::is_header(field) && std::find(kept.begin(), kept.end(), field) == kept.end())
      kept.push_back(std::move(field));
  fields = std::move(kept);
}

} // namespace

Subcommand add_watch_command(CLI::App &app) {
  struct Settings {
    WatchOptions options;
    std::string source = "csv", format;
  };
  auto settings = std::make_shared<Settings>();
  WatchOptions &options = settings->options;

  CLI::App *command = app.add_subcommand(
      "watch", "Sample continuously from one long-lived nvidia-smi: a line per sample on stdout "
               "(NDJSON), and/or a CSV log.");
  command->add_option("--interval", options.interval_seconds, "Seconds between samples")
      ->check(CLI::Range(0.01, 86400.0))
      ->capture_default_str();
  add_source_option(command, settings->source, "csv (--query-gpu, cheap) or xml (-q -x, complete)");
  command
      ->add_option("--format", settings->format,
                   "What stdout gets per sample: legacy, json (one line each) or csv. Default: "
                   "legacy, or nothing when --csv-log is given")
      ->check(CLI::IsMember({"legacy", "json", "csv"}));
  command->add_option("--csv-log", options.csv_log,
                      "Append each sample's rows to this CSV file (header when new)");
  command->add_option("--csv-max-bytes", options.csv_max_bytes,
                      "Rotate the CSV log before it passes this size (0: never)");
  command->add_option("--csv-keep", options.csv_keep, "Rotated CSV logs kept (FILE.1 ...)")
      ->check(CLI::Range(0, 1000))
      ->capture_default_str();
  command
      ->add_option("--fields", options.fields,
                   "More --query-gpu fields, comma-separated (csv source): extra keys in json, "
                   "extra columns in csv")
      ->delimiter(',')
      ->check(CLI::Validator(
          [](std::string &name) {
            bool ok = !name.empty() && name.find_first_not_of("abcdefghijklmnopqrstuvwxyz"
                                                              "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                                              "0123456789._") == std::string::npos;
            return ok ? std::string() : "not a query field name: \"" + name + "\"";
          },
          "FIELD", "field name"));
  command->add_option("--count", options.count, "Stop after this many samples")
      ->check(CLI::PositiveNumber);
  CLI::Option *fixture = command->add_option(
      "--fixture", options.fixture, "Replay this recording at the interval instead of nvidia-smi");
  add_nvidia_smi_option(command, options.nvidia_smi, fixture);
  command
      ->add_option("--stall-timeout", options.stall_timeout_seconds,
                   "Kill and restart nvidia-smi after this many seconds without a whole sample "
                   "(default: max(3 x interval, 10))")
      ->check(CLI::Range(0.01, 86400.0));

  return {command, [settings] {
            settings->options.source =
                settings->source == "xml" ? SourceKind::xml : SourceKind::csv;
            if (settings->options.source == SourceKind::xml && !settings->options.fields.empty())
              throw AgentError(exit_usage, "--fields needs --source csv (it adds query fields)");
            drop_known_fields(settings->options.fields);
            if (!settings->format.empty())
              settings->options.format = format_from_name(settings->format);
            return run_watch(settings->options);
          }};
}

} // namespace nvsmi
