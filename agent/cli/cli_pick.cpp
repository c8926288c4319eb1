#include "cli/cli.hpp"
#include "commands/pick_command.hpp"
#include "core/exit_codes.hpp"
#include "jobs/gpu_claims.hpp"

#include <memory>

namespace nvsmi {

namespace {

SubcommandRun pick_options(CLI::App *command) {
  struct Settings {
    PickOptions options;
    PickCli pick;
    JobMappingCli job_mapping;
    SshCli ssh;
    std::string source = "xml", format = "list";
  };
  auto settings = std::make_shared<Settings>();
  PickOptions &options = settings->options;

  command->add_option("N", options.count, "How many GPUs")
      ->check(whole_range(1, 4096))
      ->capture_default_str();
  add_pick_options(command, settings->pick);
  command->add_option("--interval", options.interval_seconds, "Seconds between samples with --wait")
      ->type_name("SECONDS")
      ->check(finite_range(0.01, 86400.0, "seconds"))
      ->capture_default_str();
  command
      ->add_option("--format", settings->format,
                   "list (0,3), env (export CUDA_DEVICE_ORDER=PCI_BUS_ID "
                   "CUDA_VISIBLE_DEVICES=0,3, for eval) or json")
      ->check(one_of({"list", "env", "json"}))
      ->capture_default_str();
  add_source_option(command, settings->source,
                    "What to ask nvidia-smi for: xml (-q -x) or csv (--query-gpu, then "
                    "--query-compute-apps)");
  CLI::Option *fixture =
      command
          ->add_option(
              "--fixture", options.sample.fixture,
              "Decide on this recorded nvidia-smi output (XML or CSV) instead of running it")
          ->check(caller_path());
  add_nvidia_smi_option(command, options.sample.nvidia_smi, fixture);
  add_job_mapping_option(command, settings->job_mapping);
  add_timeout_option(command, options.sample.timeout_seconds,
                     "Seconds nvidia-smi may take before it is killed (with --ssh: a connection "
                     "and its first sample, 10 by default)");
  add_ssh_options(command, settings->ssh, nullptr);
  for (const char *local : {"--fixture", "--nvidia-smi", "--wait", "--lock-dir", "--mig"})
    for (CLI::Option *ssh : {settings->ssh.hosts_option, settings->ssh.hosts_file_option})
      if (CLI::Option *option = command->get_option_no_throw(local))
        ssh->excludes(option);

  return {[settings] {
    PickOptions &run_options = settings->options;
    run_options.sample.source = settings->source == "csv" ? Source::csv : Source::xml;
    run_options.sample.host = false; // who runs the processes does not decide
    // Which batch job holds each GPU does: another job's GPU is never handed out.
    run_options.sample.job_mapping_dir =
        settings->job_mapping.resolve(run_options.sample.fixture.has_value());
    run_options.sample.say_job_mapping_problems = settings->job_mapping.path.has_value();
    run_options.criteria = settings->pick.criteria;
    if (settings->pick.mig_given()) {
      if (run_options.sample.source == Source::csv)
        throw AgentError(exit_usage, "pick: --mig needs --source xml: the CSV query lists no MIG "
                                     "instances");
      run_options.criteria.mig_profile = settings->pick.mig;
    }
    run_options.wait_seconds = settings->pick.wait_seconds;
    run_options.uuid = settings->pick.uuid;
    run_options.claims_folder = claims_folder(settings->pick.lock_dir);
    run_options.format = settings->format == "json"  ? PickFormat::json
                         : settings->format == "env" ? PickFormat::env
                                                     : PickFormat::list;
    if (settings->ssh.given()) {
      if (run_options.format == PickFormat::env)
        throw AgentError(exit_usage, "pick: --format env sets this machine's CUDA_VISIBLE_DEVICES; "
                                     "with --ssh use list (HOST GPUS) or json");
      run_options.ssh = settings->ssh.finish(1, run_options.sample.timeout_seconds);
      run_pick_ssh(run_options);
      return exit_ok;
    }
    run_pick(run_options);
    return exit_ok;
  }};
}

} // namespace

Subcommand add_pick_command(CLI::App &app) {
  return add_subcommand(
      app, "pick",
      "Print N free GPUs (no process, idle, enough memory, not claimed by run, not allocated "
      "to another batch job), most free "
      "memory first, then coolest, for CUDA_VISIBLE_DEVICES; with --ssh, which machines have "
      "them. A GPU with MIG on is never offered whole: --mig picks its free instances.",
      pick_options);
}

} // namespace nvsmi
