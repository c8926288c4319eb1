// nvsmi-agent: runs nvidia-smi, reads what it prints into typed records, and hands them on.
#include "exit_codes.hpp"
#include "snapshot_command.hpp"

#include <CLI/CLI.hpp>

#include <cstdio>

namespace {

void report(const std::string &message) {
  std::fprintf(stderr, "nvsmi-agent: %s\n", message.c_str());
}

} // namespace

int main(int argc, char **argv) {
  using namespace nvsmi;
  CLI::App app{"nvsmi-agent: reads nvidia-smi into typed records and prints them as the legacy "
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
  snapshot_command
      ->add_option("--nvidia-smi", snapshot.nvidia_smi,
                   "nvidia-smi command to run, with arguments (default: $NVIDIA_SMI, else "
                   "nvidia-smi on PATH)")
      ->excludes(fixture);
  snapshot_command
      ->add_option("--timeout", snapshot.timeout_seconds,
                   "Seconds nvidia-smi may take before it is killed")
      ->check(CLI::Range(0.001, 86400.0))
      ->default_str("10");
  snapshot_command->add_option("--output", snapshot.output,
                               "Replace this file atomically instead of printing");

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

  try {
    if (snapshot_command->parsed())
      run_snapshot(snapshot);
    return exit_ok;
  } catch (const AgentError &error) {
    report(error.what());
    return error.code();
  } catch (const std::exception &error) {
    report(std::string("internal error: ") + error.what());
    return exit_internal;
  }
}
