#include "cli/cli.hpp"
#include "commands/run_command.hpp"
#include "core/exit_codes.hpp"
#include "files/file_io.hpp"

#include <memory>

namespace nvsmi {

namespace {

SubcommandRun run_options(CLI::App *command) {
  struct Settings {
    RunOptions options;
    SamplingCli sampling;
    PickCli pick;
    std::vector<std::string> gpu_ids_alias; // --gpu-ids
  };
  auto settings = std::make_shared<Settings>();
  RunOptions &options = settings->options;

  add_sampling_options(command, settings->sampling);
  add_pick_options(command, settings->pick);
  CLI::Option *count =
      command->add_option("--gpus", options.gpu_count, "How many free GPUs the job gets")
          ->check(whole_range(1, 64))
          ->capture_default_str();
  add_gpu_option(command, options.gpu_ids,
                 "These GPUs, free or not (claimed by another run: exit 9, or wait with --wait; "
                 "one nvidia-smi does not list: exit 2)")
      ->excludes(count);
  // --gpu's name before it was one across commands: scripts that use it keep working, the help
  // shows --gpu alone.
  // Not with --gpu: a message about the GPUs named repeats the one spelling the user typed.
  add_gpu_option(command, settings->gpu_ids_alias, "", "--gpu-ids")
      ->group("")
      ->excludes(count)
      ->excludes("--gpu");
  command
      ->add_option("--report", options.report_file,
                   "Replace this file atomically with the end-of-run report (default: stderr)")
      ->check(caller_path());
  command->add_option("--format", options.format, "Of the end-of-run report: text, json or html")
      ->check(one_of({"text", "json", "html"}))
      ->capture_default_str();
  command->add_flag("--details", options.details,
                    "Text report: the job's samples per GPU, then the report's figures for its "
                    "GPUs (the fleet line, rows, users, each GPU's figures)");
  command
      ->add_option("--log", options.log_file,
                   "Keep the job's samples in this JSON log (watch --json-log's format), for "
                   "`nvsmi-agent report` later")
      ->check(caller_path());
  command->add_option("command", options.command, "The job: COMMAND [ARGS...], after --")
      ->type_name("COMMAND")
      ->required();
  // CLI11 lets a `--` end the values of an option that takes several and eats it there:
  // `--gpu 0 -- sh -c CMD` then left `-c` to be read as an option of run's. One word of values
  // per option (`--gpu 0,4`) keeps the first `--` the job's.
  for (CLI::Option *option : command->get_options())
    if (option->nonpositional())
      option->allow_extra_args(false);
  settings->pick.mig_option->excludes("--gpu")->excludes("--gpu-ids");
  CLI::Option *source = command->get_option("--source");
  return {[settings, source] {
    // Instances are listed by -q -x alone: --mig samples it unless told otherwise, which cannot be.
    if (settings->pick.mig_given()) {
      if (source->count() > 0 && settings->sampling.source == "csv")
        throw AgentError(exit_usage, "run: --mig needs --source xml: the CSV query lists no MIG "
                                     "instances");
      settings->sampling.source = "xml";
    }
    settings->sampling.finish();
    RunOptions &o = settings->options;
    o.sampling = settings->sampling.options;
    o.criteria = settings->pick.criteria;
    if (settings->pick.mig_given())
      o.criteria.mig_profile = settings->pick.mig;
    o.wait_seconds = settings->pick.wait_seconds;
    o.uuid = settings->pick.uuid;
    o.lock_dir = settings->pick.lock_dir;
    if (!settings->gpu_ids_alias.empty()) {
      o.gpu_ids = settings->gpu_ids_alias;
      o.gpu_option = "--gpu-ids";
    }
    // The report is written at the end: a device, a FIFO or a folder that takes no file is
    // refused before the job runs, not after hours of it.
    if (o.report_file)
      check_replaceable(*o.report_file);
    return run_job(o);
  }};
}

} // namespace

Subcommand add_run_command(CLI::App &app) {
  return add_subcommand(
      app, "run",
      "Claim free GPUs (or the ones named, or free MIG instances with --mig), run COMMAND on "
      "them with CUDA_VISIBLE_DEVICES set, sample while it runs, and report what it did there; "
      "exits with its exit code. "
      "Usage: nvsmi-agent run [OPTIONS] -- COMMAND [ARGS...]",
      run_options);
}

} // namespace nvsmi
