#include "cli/cli.hpp"
#include "core/exit_codes.hpp"
#include "core/number_text.hpp"
#include "core/privilege.hpp"
#include "host/job_mapping.hpp"
#include "kernel_log/xid_log.hpp"
#include "nvidia_smi/command_line.hpp"

#include "nvsmi/allocation.hpp"
#include "nvsmi/csv_reader.hpp"
#include "nvsmi/gpu_selector.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <sys/ioctl.h>
#include <unistd.h>

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

bool is_field_name(const std::string &name) {
  return !name.empty() && name.find_first_not_of("abcdefghijklmnopqrstuvwxyz"
                                                 "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                                 "0123456789._") == std::string::npos;
}

} // namespace

TableStyle table_style(bool to_terminal) {
  TableStyle style;
  winsize size{};
  if (to_terminal && ::ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 0)
    style.width = std::max<std::size_t>(40, size.ws_col);
  const char *no_color = std::getenv("NO_COLOR");
  style.colour = to_terminal && (no_color == nullptr || *no_color == '\0');
  return style;
}

CLI::Option *add_gpu_option(CLI::App *command, std::vector<std::string> &target,
                            const std::string &help, const std::string &name) {
  // Refused before anything is sampled (check would otherwise judge "1.5" CRITICAL as a GPU not
  // listed); the value repeated printable and cut, since it may be any bytes.
  CLI::Validator selector(
      [](std::string &text) -> std::string {
        return valid_gpu_selector(text)
                   ? std::string()
                   : shown_value(text) + " is not a GPU's index (0), UUID (GPU-5c1a...) "
                                         "or PCI bus id (00000000:19:00.0)";
      },
      "", "GPU selector");
  return command
      ->add_option(name, target,
                   help + ". ID: an index, a UUID or a PCI bus id, as nvidia-smi -i takes; "
                          "repeatable or comma-separated")
      ->type_name("ID")
      ->delimiter(',')
      ->check(selector);
}

CLI::Validator caller_path(std::vector<std::string> harmless) {
  return CLI::Validator(
      [harmless](std::string &value) -> std::string {
        std::optional<std::string> why = elevated_privilege();
        if (!why || std::find(harmless.begin(), harmless.end(), value) != harmless.end())
          return {};
        return "refused " + *why +
               ": it names what to run, read or write with the rights of another user; " +
               privilege_advice;
      },
      "", "caller's path");
}

void add_nvidia_smi_option(CLI::App *command, std::optional<std::string> &target,
                           CLI::Option *fixture) {
  command
      ->add_option("--nvidia-smi", target,
                   "nvidia-smi command to run, with arguments (default: $NVIDIA_SMI, else "
                   "nvidia-smi on PATH; under sudo or setuid neither may be given, and nvidia-smi "
                   "is looked up in the system folders only)")
      ->excludes(fixture)
      ->check(caller_path());
}

void add_timeout_option(CLI::App *command, double &target, const std::string &help) {
  command->add_option("--timeout", target, help)
      ->type_name("SECONDS")
      ->check(finite_range(0.001, 86400.0, "seconds"))
      ->default_str("10");
}

void add_source_option(CLI::App *command, std::string &target, const std::string &help) {
  command->add_option("--source", target, help)
      ->check(one_of({"xml", "csv"}))
      ->capture_default_str();
}

std::optional<std::string> KernelLogCli::resolve(bool recording) const {
  if (path)
    return *path == "none" ? std::nullopt : path;
  // A recording's GPUs, or those of another machine, are not the ones this kernel logs.
  if (recording)
    return std::nullopt;
  return std::string(default_kernel_log);
}

void add_kernel_log_option(CLI::App *command, KernelLogCli &target) {
  command
      ->add_option("--kernel-log", target.path,
                   "Count NVIDIA Xid errors in this kernel log: /dev/kmsg, or a file another "
                   "program appends to (a forwarded syslog); none to not look. Default: "
                   "/dev/kmsg when nvidia-smi runs here; none with --fixture or --no-host (the "
                   "GPUs are not this kernel's). See docs/XID.md")
      ->type_name("PATH|none")
      ->check(caller_path({"none", std::string(default_kernel_log)}));
}

std::optional<std::string> JobMappingCli::resolve(bool recording) const {
  if (path)
    return *path == "none" ? std::nullopt : path;
  // A recording's GPUs, or another machine's, are not those this machine's prolog records.
  if (recording)
    return std::nullopt;
  return std::string(default_job_mapping_dir);
}

void add_job_mapping_option(CLI::App *command, JobMappingCli &target) {
  command
      ->add_option("--job-mapping-dir", target.path,
                   "Read which batch job holds each GPU from this folder, as the shipped Slurm "
                   "prolog writes it (the DCGM exporter's --hpc-job-mapping-dir files); none to "
                   "not look. Default: " +
                       std::string(default_job_mapping_dir) +
                       " when nvidia-smi runs here; none with --fixture or --no-host. See "
                       "docs/SLURM.md")
      ->type_name("DIR|none")
      ->check(caller_path({"none", std::string(default_job_mapping_dir)}));
}

namespace {

// Each reading of NVLink's counters starts nvidia-smi (about 14-22 ms of CPU on a real GPU,
// docs/PERFORMANCE.md): not more often than this.
constexpr double nvlink_counters_minimum_seconds = 10;

// A number of seconds the tests may lower (they would otherwise wait minutes): what the variable
// `name` says, held to [lowest, usual]; `usual` where it is unset or no finite number, and under
// sudo or setuid, where the caller's environment chooses nothing.
double lowered_for_tests(const char *name, double lowest, double usual) {
  const char *lowered = std::getenv(name);
  if (lowered == nullptr || elevated_privilege())
    return usual;
  char *end = nullptr;
  double seconds = std::strtod(lowered, &end);
  if (end == lowered || *end != '\0' || !std::isfinite(seconds))
    return usual;
  return std::clamp(seconds, lowest, usual);
}

// The shortest --nvlink-counters allowed: 10 s; for the tests,
// NVSMI_TEST_NVLINK_COUNTERS_MIN_SECONDS down to 0.5 s.
double nvlink_counters_minimum() {
  return lowered_for_tests("NVSMI_TEST_NVLINK_COUNTERS_MIN_SECONDS", 0.5,
                           nvlink_counters_minimum_seconds);
}

// --cpu-budget judges a minute at a time; for the tests, NVSMI_TEST_BUDGET_WINDOW_SECONDS down to
// 2 s.
std::chrono::milliseconds budget_window() {
  return to_ms(lowered_for_tests("NVSMI_TEST_BUDGET_WINDOW_SECONDS", 2, 60));
}

} // namespace

void SamplingCli::finish() {
  if (options.nvlink_counters_seconds)
    if (double minimum = nvlink_counters_minimum(); *options.nvlink_counters_seconds < minimum)
      throw AgentError(exit_usage, "--nvlink-counters " +
                                       range_number(*options.nvlink_counters_seconds) +
                                       ": at least " + range_number(minimum) +
                                       " seconds (each reading starts nvidia-smi once)");
  options.source = source == "xml" ? Source::xml : Source::csv;
  options.gpm = gpm == "on" ? Gpm::on : gpm == "off" ? Gpm::off : Gpm::automatic;
  options.pmon = pmon == "on" ? PmonMode::on : pmon == "off" ? PmonMode::off : PmonMode::automatic;
  if (cpu_budget == "off")
    options.cpu_budget_percent.reset();
  else
    options.cpu_budget_percent = std::stod(cpu_budget); // checked by its validator
  options.budget_window = budget_window();
  options.job_mapping_dir = job_mapping.resolve(options.fixture || !options.host);
  options.say_job_mapping_problems = job_mapping.path.has_value();
  if (options.source == Source::xml && !options.fields.empty())
    throw AgentError(exit_usage, "--fields needs --source csv (it adds query fields)");
  drop_known_fields(options.fields);
  if (on_unhealthy) {
    try {
      hook.command = split_command(*on_unhealthy);
    } catch (const std::invalid_argument &error) {
      throw AgentError(exit_usage, std::string("--on-unhealthy: ") + error.what());
    }
    if (hook.command.empty())
      throw AgentError(exit_usage, "--on-unhealthy is empty");
    hook.timeout = std::chrono::milliseconds(std::llround(hook_timeout_seconds * 1000));
    options.on_unhealthy = hook;
  }
}

void add_sampling_options(CLI::App *command, SamplingCli &sampling) {
  SamplerOptions &options = sampling.options;
  add_job_mapping_option(command, sampling.job_mapping);
  command->add_option("--interval", options.interval_seconds, "Seconds between samples")
      ->type_name("SECONDS")
      ->check(finite_range(0.01, 86400.0, "seconds"))
      ->capture_default_str();
  add_source_option(command, sampling.source, "csv (--query-gpu, cheap) or xml (-q -x, complete)");
  command
      ->add_option("--fields", options.fields,
                   "More --query-gpu fields, comma-separated (csv source): extra keys in json, "
                   "extra columns in csv")
      ->delimiter(',')
      ->check(CLI::Validator(
          [](std::string &name) {
            return is_field_name(name) ? std::string() : "not a query field name: \"" + name + "\"";
          },
          "FIELD", "field name"));
  CLI::Option *fixture =
      command
          ->add_option("--fixture", options.fixture,
                       "Replay this recording at the interval instead of nvidia-smi")
          ->check(caller_path());
  add_nvidia_smi_option(command, options.nvidia_smi, fixture);
  command
      ->add_option("--stall-timeout", options.stall_timeout_seconds,
                   "Kill and restart nvidia-smi after this many seconds without a whole sample "
                   "(default: max(3 x interval, 10))")
      ->type_name("SECONDS")
      ->check(finite_range(0.01, 86400.0, "seconds"));
  CLI::Option *no_processes = command->add_flag(
      "--no-processes", [&options](std::int64_t) { options.processes = false; },
      "Do not run --query-compute-apps and pmon beside the GPU query (the csv source then has "
      "no processes; the xml source keeps its own list)");
  command
      ->add_option("--process-interval", options.process_interval_seconds,
                   "Seconds between nvidia-smi's listings of the processes, in its own loop "
                   "(default: max(interval, 1)); pmon's interval is this, rounded to 1..10 s "
                   "(5 s at the least with --pmon auto)")
      ->type_name("SECONDS")
      ->check(finite_range(0.1, 86400.0, "seconds"))
      ->excludes(no_processes);
  command
      ->add_option("--pmon", sampling.pmon,
                   "When pmon (each process's share of the SMs and memory bandwidth) runs: auto "
                   "only while a GPU has a process, every max(process interval, 5 s); on all "
                   "along, at the process interval (also lists graphics processes with the csv "
                   "source); off never. Shares older than the sample say their age")
      ->check(one_of({"auto", "on", "off"}))
      ->type_name("auto|on|off")
      ->capture_default_str()
      ->excludes(no_processes);
  command
      ->add_option("--cpu-budget", sampling.cpu_budget,
                   "Share of one core, in percent, for the agent and its nvidia-smi together, "
                   "judged a minute at a time: over it, pmon, dmon and the process list are "
                   "slowed then stopped and then the sample interval lengthened, a step a minute, "
                   "each logged; they come back once there is room. The GPU query always runs. "
                   "off: no budget. See docs/PERFORMANCE.md")
      ->check(CLI::Validator(
          [](std::string &value) -> std::string {
            if (value == "off")
              return {};
            char *end = nullptr;
            double percent = std::strtod(value.c_str(), &end);
            if (value.empty() || *end != '\0' || !std::isfinite(percent) || percent < 0.01 ||
                percent > 1600)
              return "a percent of one core from 0.01 to 1600, or off; not \"" + value + "\"";
            return {};
          },
          "PERCENT|off", "cpu budget"))
      ->type_name("PERCENT|off")
      ->capture_default_str();
  command
      ->add_option("--gpm", sampling.gpm,
                   "Ask dmon for the GPU's SM, tensor and DRAM activity (GPM, Hopper and newer): "
                   "auto leaves it off where DCGM's nv-hostengine runs, since both read the same "
                   "counters. dmon runs beside the GPU query for these and PCIe traffic either way")
      ->check(one_of({"auto", "on", "off"}))
      ->type_name("auto|on|off")
      ->capture_default_str();
  command
      ->add_option("--nvlink-counters", options.nvlink_counters_seconds,
                   "NVLink receive and transmit on GPUs whose dmon gives none (before Hopper: "
                   "V100, A100): read nvidia-smi nvlink -gt d's counters every SECONDS (at least "
                   "10), only while a GPU with an active link lacks dmon's figures. Each reading "
                   "starts nvidia-smi once, so it is off by default. See docs/ACTIVITY.md")
      ->type_name("SECONDS")
      ->check(finite_range(0.01, 86400.0, "seconds"));
  CLI::Option *hook =
      command
          ->add_option("--on-unhealthy", sampling.on_unhealthy,
                       "Run this command (words split as --nvidia-smi's, no shell) once for each "
                       "new fault of a GPU: lost, failing (ECC, row remap, recovery action) or an "
                       "Xid that needs a reset; NVSMI_GPU_INDEX, NVSMI_GPU_UUID, "
                       "NVSMI_GPU_PCI_BUS_ID, NVSMI_REASON, NVSMI_ACTION and NVSMI_HOSTNAME in its "
                       "environment; under sudo or setuid it may not be given. See docs/SLURM.md")
          ->type_name("COMMAND")
          ->check(caller_path());
  command
      ->add_option("--on-unhealthy-timeout", sampling.hook_timeout_seconds,
                   "Kill a run of the --on-unhealthy command (and what it started) after this "
                   "many seconds")
      ->type_name("SECONDS")
      ->check(finite_range(0.1, 3600.0, "seconds"))
      ->capture_default_str()
      ->needs(hook);
  command
      ->add_option("--on-unhealthy-max", sampling.hook.max_running,
                   "Runs of the --on-unhealthy command at once, at most; a fault found beyond "
                   "them waits for the next sample")
      ->type_name("N")
      ->check(whole_range(1, 64))
      ->capture_default_str()
      ->needs(hook);
  command->add_flag(
      "--no-host", [&options](std::int64_t) { options.host = false; },
      "nvidia-smi runs on another machine (--nvidia-smi \"ssh gpu7 nvidia-smi\"): do not read "
      "this machine's /proc, so host and the processes' users and commands stay null");
}

void add_pick_options(CLI::App *command, PickCli &pick) {
  // Inside a Slurm job, the GPUs allocated to it are the caller's to pick; anything else in the
  // variable is no job id, and then every allocated GPU is another job's.
  if (const char *job = std::getenv("SLURM_JOB_ID"); job != nullptr && is_job_id(job))
    pick.criteria.own_job_id = job;
  command
      ->add_option("--min-free-mib", pick.criteria.min_free_mib,
                   "Only GPUs with at least this much memory free")
      ->type_name("MIB")
      ->check(whole_range(0, 10000000, "MiB"))
      ->capture_default_str();
  command
      ->add_option("--max-utilization", pick.criteria.max_utilization_percent,
                   "Only GPUs whose utilization is under this percentage (and no compute process)")
      ->type_name("PERCENT")
      ->check(finite_range(0.0, 100.0, "%"))
      ->capture_default_str();
  command
      ->add_option("--wait", pick.wait_seconds,
                   "Sample until enough GPUs are free, at most this many seconds (default: decide "
                   "on one sample)")
      ->type_name("SECONDS")
      ->check(finite_range(0.0, 31.0 * 86400, "seconds"));
  command->add_flag("--uuid", pick.uuid,
                    "Name GPUs by UUID (they survive a reordering) instead of by index");
  command
      ->add_option("--lock-dir", pick.lock_dir,
                   "Folder of the claims run holds (default: $NVSMI_LOCK_DIR, else "
                   "/run/lock/nvsmi-agent)")
      ->check(caller_path());
  pick.mig_option = command
                        ->add_option("--mig", pick.mig,
                                     "Free MIG instances instead of whole GPUs (their MIG-... "
                                     "UUIDs, from nvidia-smi -L), of PROFILE (3g.40gb) if given, "
                                     "else of any; needs --source xml")
                        ->expected(0, 1)
                        ->type_name("[PROFILE]")
                        ->check(mig_profile_check());
}

} // namespace nvsmi
