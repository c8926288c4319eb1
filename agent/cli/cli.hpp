// Each subcommand registers its options on the CLI11 app and returns what runs it once parsed.
#pragma once

#include "fleet/fleet_poller.hpp"
#include "fleet/ssh_fleet.hpp"
#include "formats/format_table.hpp"
#include "jobs/gpu_choice.hpp"
#include "sampling/sampler.hpp"

#include <CLI/CLI.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace nvsmi {

// What a subcommand's options give once parsed.
struct SubcommandRun {
  std::function<int()> run; // returns the exit code; may throw AgentError
  // Set where a bad command line must not end in the usual usage error (check, whose caller
  // reads exit 2 as CRITICAL): says `message` (usage_error's line, without "nvsmi-agent: ") its
  // own way and returns the exit code.
  std::function<int(const std::string &message)> parse_failed = {};
};

struct Subcommand {
  CLI::App *command;
  // Its options are added only when CLI11 enters it, that is when the command line names it: a
  // run builds its own command's options, not all eight (a cron snapshot's cost, docs/
  // PERFORMANCE.md). Filled in then (add_subcommands), so it is set for the chosen command.
  std::shared_ptr<SubcommandRun> chosen;
  std::function<SubcommandRun(CLI::App *command)> add_options;
};

// `name` and its one line on `app` (what `nvsmi-agent --help` lists), with `add_options` to run on
// it when it is chosen.
Subcommand add_subcommand(CLI::App &app, const std::string &name, const std::string &description,
                          std::function<SubcommandRun(CLI::App *command)> add_options);

// Every subcommand, in the order --help lists them, and the one the command line names.
class Subcommands {
public:
  explicit Subcommands(std::vector<Subcommand> all);
  // Each command's callback points at its entry here.
  Subcommands(const Subcommands &) = delete;
  Subcommands &operator=(const Subcommands &) = delete;
  const std::vector<Subcommand> &all() const { return all_; }
  // The one CLI11 entered, its options built, once it has: known even when the parse then fails
  // in its options. Null before, and when the command line names none.
  const Subcommand *chosen() const { return *chosen_; }

private:
  std::vector<Subcommand> all_;
  std::shared_ptr<const Subcommand *> chosen_ = std::make_shared<const Subcommand *>(nullptr);
};

// --help in plain words: SECONDS, N, PATH for an option's value, its default and range after its
// line. Set on the app before its subcommands, which take it from the app.
void use_plain_help(CLI::App &app);
// What --help says an option's value is: its word and range, "SECONDS (0.01 to 86,400 seconds)".
std::string value_words(const CLI::Option *option);

// Every subcommand on `app`, or the one named `only` alone (main's parse of a command line that
// names one subcommand and no other: the nine others' CLI::Apps cost a snapshot 0.17 M of its
// 2.7 M instructions, docs/PERFORMANCE.md).
Subcommands add_subcommands(CLI::App &app, const std::string &only = "");

// The subcommand that a command line (without the program's name) can be parsed with alone: its
// first word, where that names a subcommand and no later word names any. Empty otherwise.
std::optional<std::string> lone_subcommand(const std::vector<std::string> &arguments);

// The one line (after "nvsmi-agent: ") for a command line CLI11 refused: what is wrong in plain
// words, the command or option meant where one is close ("did you mean"), and which --help to
// read. `arguments`: the command line without the program's name.
std::string usage_error(const CLI::App &app, const Subcommands &subcommands,
                        const CLI::ParseError &error, const std::vector<std::string> &arguments);

// The subcommand a command line that names none most likely meant (`chek` for check), else null:
// a misspelt check answers as check does (UNKNOWN, exit 3), since a monitor runs it.
const Subcommand *meant_subcommand(const Subcommands &subcommands,
                                   const std::vector<std::string> &arguments);

Subcommand add_snapshot_command(CLI::App &app);
Subcommand add_watch_command(CLI::App &app);
Subcommand add_report_command(CLI::App &app);
Subcommand add_job_command(CLI::App &app);
Subcommand add_serve_command(CLI::App &app);
Subcommand add_top_command(CLI::App &app);
Subcommand add_pick_command(CLI::App &app);
Subcommand add_run_command(CLI::App &app);
Subcommand add_check_command(CLI::App &app);
Subcommand add_fleet_command(CLI::App &app);

// What a numeric option takes: a whole number or any finite one, in decimal digits, from `min`
// to `max`, or one of `words` ("none"). Every numeric option of every subcommand is checked by
// number_check (through finite_range and whole_range), so that its refusal says the option, the
// value and the range in words: "--min-free-mib: 'lots' is not a whole number from 0 to
// 10,000,000 MiB".
struct NumberRule {
  bool whole = false;
  double min = 0, max = 0;
  std::string unit;               // after the range: "seconds", "MiB", "%"; empty for a count
  std::vector<std::string> words; // also taken as they are
  // `text` as CLI11 is to convert it ("010" as "10", "-0" as "0"), or nullopt where the rule
  // refuses it: not decimal digits (hex, inf, nan, spaces), a fraction where whole, out of range.
  std::optional<std::string> accept(const std::string &text) const;
  std::string range() const; // "0.01 to 86,400 seconds", "0 to 100% or none"
  // "'lots' is not a whole number from 0 to 10,000,000 MiB"
  std::string refusal(const std::string &text) const;
};
CLI::Validator number_check(NumberRule rule);
// Lets every number_check of `command`'s options hand CLI11 the text it converts ("10" for "010",
// which CLI11 reads as octal 8): Option::check makes a validator non-modifying. Run once a
// command's options are added (add_subcommands), so that an option added later is covered.
void read_numbers_as_checked(CLI::App *command);
// The check of every floating-point option: a finite number from `min` to `max` (CLI::Range alone
// let nan through, every comparison with it being false, and inf where max was not finite).
CLI::Validator finite_range(double min, double max, std::string unit = "");
// The check of every whole-number option.
CLI::Validator whole_range(long long min, long long max, std::string unit = "");
// Whether `text` reads as a finite number from `min` to `max`, as finite_range takes it.
bool is_finite_in(const std::string &text, double min, double max);
// The check of every option that takes one of a few words (--format, --source): "--format: 'yaml'
// is not table, legacy, json or csv". Its description, "{table,legacy,json,csv}", is what --help
// shows as table|legacy|json|csv.
CLI::Validator one_of(std::vector<std::string> words);
// The check of `--mig PROFILE`: a MIG profile as nvidia-smi -L prints one ("3g.40gb",
// "1g.10gb+me"): lower-case letters, digits, '.' and '+', at most 32. A bare number is refused with
// where it belongs (`pick --mig 2` means `pick 2 --mig`).
CLI::Validator mig_profile_check();
// A number as a range says it: 0.01, 4096, 86,400, 1,000,000,000.
std::string range_number(double value);
// A value from the command line as a message repeats it: quoted, printable (a control or a
// byte that is no UTF-8 as U+FFFD), and cut where long, with its length: '99999999…' (10,000
// bytes).
std::string shown_value(std::string_view text);

// The check of every option that names a program, a file or a folder: under sudo or setuid
// (core/privilege.hpp) it is refused, with why and what to do instead, since the caller would
// choose what the agent runs, reads or writes with rights the caller has not. `harmless`: values
// that name nothing of the caller's choosing (--kernel-log none, --fixture - for stdin).
CLI::Validator caller_path(std::vector<std::string> harmless = {});

// The table's style for stdout: the terminal's width (at least 40 columns), else 80; colour on a
// terminal unless NO_COLOR is set and not empty (https://no-color.org).
TableStyle table_style(bool to_terminal);

// --nvidia-smi, which every sampling subcommand has; it cannot go with --fixture.
void add_nvidia_smi_option(CLI::App *command, std::optional<std::string> &target,
                           CLI::Option *fixture);
// --source csv|xml into `target` ("csv" or "xml").
void add_source_option(CLI::App *command, std::string &target, const std::string &help);

// --gpu ID, the one way every command that chooses GPUs names them (check, report, run): an
// index, a UUID or a PCI bus id (nvsmi/gpu_selector.hpp, as nvidia-smi -i), repeatable and
// comma-separated, into `target`. `help` says what the command does with them; `name` is for an
// older spelling kept as a hidden alias.
CLI::Option *add_gpu_option(CLI::App *command, std::vector<std::string> &target,
                            const std::string &help, const std::string &name = "--gpu");

// --kernel-log PATH|none into `target` once parsed: PATH, else /dev/kmsg when nvidia-smi runs
// here, else (a recording, --fixture) none. `fixture` is the command's --fixture option.
struct KernelLogCli {
  std::optional<std::string> path; // as given
  // The log to read, given whether the command reads a recording.
  std::optional<std::string> resolve(bool recording) const;
};
// --timeout SECONDS (default 10): how long one run of nvidia-smi may take before it is killed.
void add_timeout_option(CLI::App *command, double &target, const std::string &help);
void add_kernel_log_option(CLI::App *command, KernelLogCli &target);

// --job-mapping-dir DIR|none into `target` once parsed (host/job_mapping.hpp): DIR, else the
// shipped prolog's folder when nvidia-smi runs here, else (a recording, --no-host) none.
struct JobMappingCli {
  std::optional<std::string> path; // as given
  std::optional<std::string> resolve(bool recording) const;
};
void add_job_mapping_option(CLI::App *command, JobMappingCli &target);

// The options of a long-running sampler (watch, serve): --interval, --source, --fields,
// --fixture, --nvidia-smi, --stall-timeout, --job-mapping-dir, --on-unhealthy (the drain hook).
// `finish` completes `options` once
// parsed.
struct SamplingCli {
  SamplerOptions options;
  std::string source = "csv";
  std::string gpm = "auto";     // --gpm auto|on|off
  std::string pmon = "auto";    // --pmon auto|on|off
  std::string cpu_budget = "1"; // --cpu-budget PERCENT|off
  JobMappingCli job_mapping;
  // --on-unhealthy COMMAND, its --on-unhealthy-timeout and --on-unhealthy-max
  std::optional<std::string> on_unhealthy;
  UnhealthyHookOptions hook;
  double hook_timeout_seconds = 30;
  // throws AgentError for --fields with --source xml, and for an --on-unhealthy command that is
  // empty or has an unclosed quote
  void finish();
};
void add_sampling_options(CLI::App *command, SamplingCli &sampling);

// The options that name other agents' serve and how to ask them, one set for fleet, top --hosts
// and serve's /fleet: `prefix` "--" gives --hosts, --hosts-file and --timeout (fleet, top),
// "--fleet-" gives --fleet-hosts, --fleet-hosts-file and --fleet-timeout (serve, whose --timeout
// would read as its own); --fleet-ca, --fleet-user and --fleet-password-file keep their names.
struct FleetClientCli {
  std::string hosts, hosts_file, user, password_file, ca_file;
  double timeout_seconds = 3;
  CLI::Option *hosts_option = nullptr, *hosts_file_option = nullptr, *user_option = nullptr;
  bool given() const; // a host list was named
  // The hosts read and checked, the password read: throws AgentError as parse_fleet_hosts,
  // read_fleet_hosts_file and read_fleet_credentials do, exit_usage where no list was named.
  FleetClientOptions finish(const std::string &command) const;
  // What every request is asked with, without hosts: the deadline, the CA file and the password
  // read (fleet --prometheus asks a Prometheus with them).
  FleetClientOptions connection() const;
};
void add_fleet_client_options(CLI::App *command, FleetClientCli &target, const std::string &prefix);

// --ssh, --ssh-hosts-file and --ssh-config: machines sampled over OpenSSH (fleet, top, pick),
// instead of agents' serve; each excludes --hosts and --hosts-file, added before.
struct SshCli {
  std::string hosts, hosts_file, config;
  CLI::Option *hosts_option = nullptr, *hosts_file_option = nullptr;
  CLI::Option *timeout_option = nullptr; // --timeout, where the command has one
  bool given() const;
  // The hosts read and checked (throws as parse_ssh_hosts and read_ssh_hosts_file do); the
  // timeout --timeout's where given, else 10 s: a connection and its first sample.
  SshFleetOptions finish(double interval_seconds, double timeout_seconds) const;
};
void add_ssh_options(CLI::App *command, SshCli &target, const FleetClientCli *serve_hosts);

// The options that say which GPUs a job may have, shared by pick and run: --min-free-mib,
// --max-utilization, --wait, --uuid, --lock-dir.
struct PickCli {
  PickCriteria criteria;
  std::optional<double> wait_seconds; // sample until enough are free, at most this long
  bool uuid = false;                  // name GPUs by UUID instead of index
  std::optional<std::string> lock_dir;
  // --mig [PROFILE]: free MIG instances instead of whole GPUs; its profile in `mig`.
  std::string mig;
  CLI::Option *mig_option = nullptr;
  bool mig_given() const { return mig_option && mig_option->count() > 0; }
};
void add_pick_options(CLI::App *command, PickCli &pick);

} // namespace nvsmi
