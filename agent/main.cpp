// nvsmi-agent: runs nvidia-smi, reads what it prints into typed records, and hands them on.
#include "exit_codes.hpp"
#include "snapshot_command.hpp"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <map>

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
  snapshot_command
      ->add_option("--source", snapshot.source, "What to ask nvidia-smi for: -q -x, or --query-gpu")
      ->transform(CLI::CheckedTransformer(
          std::map<std::string, SourceKind>{{"xml", SourceKind::xml}, {"csv", SourceKind::csv}}))
      ->default_str("xml");
  snapshot_command
      ->add_option("--format", snapshot.format, "legacy (the UI's document), json or csv")
      ->transform(CLI::CheckedTransformer(std::map<std::string, Format>{
          {"legacy", Format::legacy}, {"json", Format::json}, {"csv", Format::csv}}))
      ->default_str("legacy");
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
