#include "cli/cli.hpp"
#include "commands/check_command.hpp"
#include "commands/snapshot_command.hpp"

#include "nvsmi/thresholds.hpp"

#include <cstdlib>
#include <map>
#include <memory>

namespace nvsmi {
namespace {

// A threshold as given: a number at or over which the level applies, "none" to leave it off, or
// (temperature critical only) "slowdown".
std::optional<double> limit_value(const std::string &text) {
  if (text == "none" || text == "slowdown")
    return std::nullopt;
  return std::strtod(text.c_str(), nullptr);
}

// What a threshold in `unit` (its word in --help: CELSIUS, PERCENT, N, SECONDS) takes: a number
// at or over which the level applies, none, and slowdown where `slowdown_allowed`. The text is kept
// as the rule gives it back, which limit_value reads.
NumberRule threshold_rule(const std::string &unit, bool slowdown_allowed) {
  NumberRule rule{false, 0, 1e12, "", {}};
  if (unit == "CELSIUS")
    rule.max = 1000, rule.unit = "C";
  else if (unit == "PERCENT")
    rule.max = 100, rule.unit = "%";
  else if (unit == "SECONDS")
    rule.max = 1e9, rule.unit = "seconds";
  if (slowdown_allowed)
    rule.words.push_back("slowdown");
  rule.words.push_back("none");
  return rule;
}

// One threshold option, its text kept in `texts` under its name until the run reads it.
// `unit`: the word for its value in --help (CELSIUS, PERCENT, N).
void add_threshold(CLI::App *command, std::map<std::string, std::string> &texts,
                   const std::string &name, const std::string &unit, const std::string &fallback,
                   const std::string &help, bool slowdown_allowed = false) {
  texts[name] = fallback;
  command->add_option(name, texts[name], help)
      ->type_name(unit + (slowdown_allowed ? "|slowdown|none" : "|none"))
      ->check(number_check(threshold_rule(unit, slowdown_allowed)))
      ->default_str(fallback);
}

Limits limits(const std::map<std::string, std::string> &texts, const std::string &stem) {
  return Limits{limit_value(texts.at("--" + stem + "-warning")),
                limit_value(texts.at("--" + stem + "-critical"))};
}

SubcommandRun check_options(CLI::App *command) {
  struct Settings {
    CheckOptions options;
    std::string source = "xml";
    KernelLogCli kernel_log;
    std::map<std::string, std::string> thresholds;
    std::string unreadable_log = "warning";
    CLI::Option *stale_warning = nullptr, *stale_critical = nullptr;
  };
  auto settings = std::make_shared<Settings>();
  CheckOptions &options = settings->options;
  auto &texts = settings->thresholds;

  add_source_option(command, settings->source,
                    "What to ask nvidia-smi for: xml (-q -x, every health reading: ECC, row "
                    "remapping, slowdown threshold) or csv (--query-gpu: temperature and memory "
                    "only)");
  CLI::Option *fixture =
      command
          ->add_option("--fixture", options.sample.fixture,
                       "Judge this recorded nvidia-smi output instead of running it, e.g. a file "
                       "cron writes with `nvidia-smi -q -x`; - for stdin. Its age then counts "
                       "(--stale-*)")
          ->check(caller_path({"-"}));
  add_nvidia_smi_option(command, options.sample.nvidia_smi, fixture);
  add_timeout_option(command, options.sample.timeout_seconds,
                     "Seconds nvidia-smi may take before it is killed and the check is CRITICAL");
  add_kernel_log_option(command, settings->kernel_log);
  add_gpu_option(command, options.gpus, "Judge only these GPUs; one not listed is CRITICAL");
  command
      ->add_option("--expected-gpus", options.thresholds.expected_gpus,
                   "CRITICAL when nvidia-smi lists fewer GPUs (one that fell off the bus may "
                   "vanish from its list). Default: not checked")
      ->check(whole_range(1, 1 << 20));

  add_threshold(command, texts, "--temperature-warning", "CELSIUS",
                std::to_string(gpu_thresholds::hot_c),
                "WARNING at this GPU temperature, C: a few degrees under where H100 and A100 "
                "slow down");
  add_threshold(command, texts, "--temperature-critical", "CELSIUS", "slowdown",
                "CRITICAL at this GPU temperature, C; slowdown: the GPU's own slowdown threshold "
                "(it is losing clocks), else " +
                    std::to_string(gpu_thresholds::too_hot_c) +
                    " where the driver does not give it",
                true);
  add_threshold(command, texts, "--memory-warning", "PERCENT", "none",
                "WARNING at this memory use, percent of total (off by default: a job filling its "
                "GPU is normal)");
  add_threshold(command, texts, "--memory-critical", "PERCENT", "none",
                "CRITICAL at this memory use, percent of total");
  add_threshold(command, texts, "--ecc-uncorrected-warning", "N", "none",
                "WARNING at this many uncorrectable ECC errors since the driver loaded");
  add_threshold(command, texts, "--ecc-uncorrected-critical", "N", "1",
                "CRITICAL at this many uncorrectable ECC errors since the driver loaded: one is "
                "data lost");
  add_threshold(command, texts, "--ecc-corrected-warning", "N", "none",
                "WARNING at this many correctable ECC errors since the driver loaded (corrected: "
                "no harm done, a rising count is a trend to watch)");
  add_threshold(command, texts, "--ecc-corrected-critical", "N", "none",
                "CRITICAL at this many correctable ECC errors since the driver loaded");
  add_threshold(command, texts, "--lost-warning", "N", "none",
                "WARNING at this many GPUs nvidia-smi lists but cannot read");
  add_threshold(command, texts, "--lost-critical", "N", "1",
                "CRITICAL at this many GPUs nvidia-smi lists but cannot read (\"GPU is lost\")");
  add_threshold(command, texts, "--failing-warning", "N", "none",
                "WARNING at this many failing GPUs (row remap pending or failed, page retirement "
                "pending, a recovery action other than None)");
  add_threshold(command, texts, "--failing-critical", "N", "1",
                "CRITICAL at this many failing GPUs: each needs a reset or more before it can be "
                "trusted");
  add_threshold(command, texts, "--xid-reset-warning", "N", "none",
                "WARNING at this many Xid errors on one GPU that need a reset (79 fallen off the "
                "bus, 48 double-bit ECC, ...)");
  add_threshold(command, texts, "--xid-reset-critical", "N", "1",
                "CRITICAL at this many Xid errors on one GPU that need a reset");
  add_threshold(command, texts, "--xid-other-warning", "N", "1",
                "WARNING at this many other Xid errors on one GPU (13, 31, 43: mostly an "
                "application's fault, worth a look)");
  add_threshold(command, texts, "--xid-other-critical", "N", "none",
                "CRITICAL at this many other Xid errors on one GPU");
  command
      ->add_option("--kernel-log-unreadable", settings->unreadable_log,
                   "When the kernel log cannot be read, its Xids are unknown: warning, or ok (a "
                   "note in the summary only)")
      ->check(one_of({"warning", "ok"}))
      ->capture_default_str();
  settings->stale_warning = command
                                ->add_option("--stale-warning", texts["--stale-warning"],
                                             "WARNING when the sample is this many seconds old. "
                                             "Default: 300 with --fixture, else none (nvidia-smi "
                                             "has just been run)")
                                ->type_name("SECONDS|none")
                                ->check(number_check(threshold_rule("SECONDS", false)));
  settings->stale_critical =
      command
          ->add_option("--stale-critical", texts["--stale-critical"],
                       "CRITICAL when the sample is this many seconds old. Default: 900 with "
                       "--fixture, else none")
          ->type_name("SECONDS|none")
          ->check(number_check(threshold_rule("SECONDS", false)));

  SubcommandRun subcommand{[settings] {
    CheckOptions &run_options = settings->options;
    const auto &given = settings->thresholds;
    run_options.sample.source = settings->source == "csv" ? Source::csv : Source::xml;
    run_options.sample.host = false; // who runs the processes is not judged
    run_options.sample.kernel_log =
        settings->kernel_log.resolve(run_options.sample.fixture.has_value());
    CheckThresholds &t = run_options.thresholds;
    t.temperature_c = limits(given, "temperature");
    t.temperature_critical_at_slowdown = given.at("--temperature-critical") == "slowdown";
    t.memory_percent = limits(given, "memory");
    t.ecc_uncorrected = limits(given, "ecc-uncorrected");
    t.ecc_corrected = limits(given, "ecc-corrected");
    t.lost = limits(given, "lost");
    t.failing = limits(given, "failing");
    t.xid_reset = limits(given, "xid-reset");
    t.xid_other = limits(given, "xid-other");
    t.kernel_log_unreadable_warns = settings->unreadable_log == "warning";
    if (settings->stale_warning->count())
      run_options.stale_warning = limit_value(given.at("--stale-warning"));
    if (settings->stale_critical->count())
      run_options.stale_critical = limit_value(given.at("--stale-critical"));
    return run_check(run_options);
  }};
  // Nagios reads exit 2 as CRITICAL: a bad command line is the plugin's failure, UNKNOWN (3), and
  // said on stdout, where the monitoring shows it, in the words every command's refusal has.
  subcommand.parse_failed = [](const std::string &message) {
    return write_plugin_line(check_failure(CheckStatus::unknown, "nvsmi-agent: " + message));
  };
  return subcommand;
}

} // namespace

Subcommand add_check_command(CLI::App &app) {
  return add_subcommand(
      app, "check",
      "Judge the GPUs once as a Nagios/Icinga/Zabbix plugin: one line `GPU OK|WARNING|CRITICAL|"
      "UNKNOWN - summary | perfdata` and exit 0/1/2/3. Each threshold is a value at or over "
      "which the level applies; none leaves it off. Any failure to sample or a bad option is "
      "UNKNOWN (3); nvidia-smi past --timeout is CRITICAL (a hung driver).",
      check_options);
}

} // namespace nvsmi
