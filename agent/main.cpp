// nvsmi-agent: runs nvidia-smi, reads what it prints into typed records, and hands them on.
#include "exit_codes.hpp"
#include "snapshot_command.hpp"
#include "watch_command.hpp"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <optional>
#include <string>

namespace {

// --nvidia-smi, which snapshot and watch share; it cannot go with --fixture.
void add_nvidia_smi_option(CLI::App *command, std::optional<std::string> &target,
                           CLI::Option *fixture) {
  command
      ->add_option("--nvidia-smi", target,
                   "nvidia-smi command to run, with arguments (default: $NVIDIA_SMI, else "
                   "nvidia-smi on PATH)")
      ->excludes(fixture);
}

void report(const std::string &message) {
  std::fprintf(stderr, "nvsmi-agent: %s\n", message.c_str());
}

} // namespace

int main(int argc, char **argv) {
  using namespace nvsmi;
  CLI::App app{"nvsmi-agent: reads nvidia-smi into typed records and hands them on as the legacy "
               "UI's JSON, typed JSON or CSV."};
  app.set_version_flag("--version", "nvsmi-agent 0.1.0");
  app.require_subcommand(1);

  SnapshotOptions snapshot;
  CLI::App *snapshot_command =
      app.add_subcommand("snapshot", "Read the GPUs' state once and print it.");
  std::string source_name = "xml", format_name = "legacy";
  snapshot_command
      ->add_option("--source", source_name,
                   "What to ask nvidia-smi for: xml (-q -x) or csv "
                   "(--query-gpu); a fixture is told apart by content")
      ->check(CLI::IsMember({"xml", "csv"}))
      ->capture_default_str();
  snapshot_command->add_option("--format", format_name, "legacy (the UI's document), json or csv")
      ->check(CLI::IsMember({"legacy", "json", "csv"}))
      ->capture_default_str();
  CLI::Option *fixture = snapshot_command->add_option(
      "--fixture", snapshot.fixture,
      "Read this recorded nvidia-smi output (XML or CSV) instead of running it; - for stdin");
  add_nvidia_smi_option(snapshot_command, snapshot.nvidia_smi, fixture);
  snapshot_command
      ->add_option("--timeout", snapshot.timeout_seconds,
                   "Seconds nvidia-smi may take before it is killed")
      ->check(CLI::Range(0.001, 86400.0))
      ->default_str("10");
  snapshot_command->add_option("--output", snapshot.output,
                               "Replace this file atomically instead of printing");
  snapshot_command->add_option("--lock", snapshot.lock,
                               "Exit at once (code 8) if another run holds this lock file");

  WatchOptions watch;
  std::string watch_source = "csv", watch_format;
  CLI::App *watch_command = app.add_subcommand(
      "watch", "Sample continuously from one long-lived nvidia-smi: a line per sample on stdout "
               "(NDJSON), and/or a CSV log.");
  watch_command->add_option("--interval", watch.interval_seconds, "Seconds between samples")
      ->check(CLI::Range(0.01, 86400.0))
      ->capture_default_str();
  watch_command
      ->add_option("--source", watch_source, "csv (--query-gpu, cheap) or xml (-q -x, complete)")
      ->check(CLI::IsMember({"xml", "csv"}))
      ->capture_default_str();
  watch_command
      ->add_option("--format", watch_format,
                   "What stdout gets per sample: legacy, json (one line each) or csv. Default: "
                   "legacy, or nothing when --csv-log is given")
      ->check(CLI::IsMember({"legacy", "json", "csv"}));
  watch_command->add_option("--csv-log", watch.csv_log,
                            "Append each sample's rows to this CSV file (header when new)");
  watch_command->add_option("--csv-max-bytes", watch.csv_max_bytes,
                            "Rotate the CSV log before it passes this size (0: never)");
  watch_command->add_option("--csv-keep", watch.csv_keep, "Rotated CSV logs kept (FILE.1 ...)")
      ->check(CLI::Range(0, 1000))
      ->capture_default_str();
  watch_command->add_option("--count", watch.count, "Stop after this many samples")
      ->check(CLI::PositiveNumber);
  CLI::Option *watch_fixture = watch_command->add_option(
      "--fixture", watch.fixture, "Replay this recording at the interval instead of nvidia-smi");
  add_nvidia_smi_option(watch_command, watch.nvidia_smi, watch_fixture);
  watch_command
      ->add_option("--stall-timeout", watch.stall_timeout_seconds,
                   "Kill and restart nvidia-smi after this many seconds without a whole sample "
                   "(default: max(3 x interval, 10))")
      ->check(CLI::Range(0.01, 86400.0));

  try {
    app.parse(argc, argv);
  } catch (const CLI::Success &done) {
    return app.exit(done);
  } catch (const CLI::ParseError &error) {
    app.exit(error);
    return exit_usage;
  }

  snapshot.source = source_name == "csv" ? SourceKind::csv : SourceKind::xml;
  snapshot.format = *format_from_name(format_name);
  watch.source = watch_source == "xml" ? SourceKind::xml : SourceKind::csv;
  if (!watch_format.empty())
    watch.format = format_from_name(watch_format);

  try {
    if (snapshot_command->parsed())
      run_snapshot(snapshot);
    if (watch_command->parsed())
      return run_watch(watch);
    return exit_ok;
  } catch (const AgentError &error) {
    report(error.what());
    return error.code();
  } catch (const std::exception &error) {
    report(std::string("internal error: ") + error.what());
    return exit_internal;
  }
}
