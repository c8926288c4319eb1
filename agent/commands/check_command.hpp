// `check`: one sample judged as a monitoring plugin (Nagios, Icinga, NRPE, Zabbix) reads it: one
// line `GPU <STATUS> - <summary> | <perfdata>` and the status as the exit code. The judgement is a
// pure function of the snapshot, the thresholds and the time, so that every crossing is testable
// without a GPU or a clock.
#pragma once

#include "core/severity.hpp"
#include "sampling/one_sample.hpp"

#include "nvsmi/snapshot.hpp"
#include "nvsmi/thresholds.hpp"

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace nvsmi {

// The plugin's status: a severity on the agent's one scale (core/severity.hpp), the same that
// `report`'s findings use, or unknown: the sample could not be judged (Nagios's UNKNOWN, which is
// no severity).
class CheckStatus {
public:
  static const CheckStatus ok, warning, critical, unknown;

  constexpr CheckStatus(Severity severity) : severity_(severity) {}
  // nullopt: unknown.
  constexpr std::optional<Severity> severity() const { return severity_; }
  constexpr bool operator==(const CheckStatus &other) const { return severity_ == other.severity_; }
  constexpr bool operator!=(const CheckStatus &other) const { return !(*this == other); }

private:
  constexpr CheckStatus() = default;
  std::optional<Severity> severity_;
};

inline const CheckStatus CheckStatus::ok{Severity::ok};
inline const CheckStatus CheckStatus::warning{Severity::warning};
inline const CheckStatus CheckStatus::critical{Severity::critical};
inline const CheckStatus CheckStatus::unknown{};

// "OK", "WARNING", "CRITICAL", "UNKNOWN".
const char *check_status_name(CheckStatus status);

// The exit code Nagios reads the status from: 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN. The one
// place the codes are written.
int nagios_exit_code(CheckStatus status);

// Worse of the two, in the order a monitoring operator acts on: CRITICAL, WARNING, UNKNOWN, OK (a
// real problem on one GPU is not hidden behind another GPU that could not be judged).
CheckStatus worse(CheckStatus a, CheckStatus b);

// A reading at or over `critical` is CRITICAL, else at or over `warning` is WARNING; nullopt
// leaves that level off.
struct Limits {
  std::optional<double> warning, critical;
};

struct CheckThresholds {
  // Warning at the table's hot (nvsmi/thresholds.hpp): time to look at the airflow.
  Limits temperature_c{static_cast<double>(gpu_thresholds::hot_c), std::nullopt};
  // Critical at the GPU's own slowdown threshold when the driver gives it (the GPU is then losing
  // clocks), else at the fallback below; false: at temperature_c.critical.
  bool temperature_critical_at_slowdown = true;
  double temperature_critical_fallback_c = static_cast<double>(gpu_thresholds::too_hot_c);
  // Memory used, percent of total: off unless asked, since a job filling its GPU is normal.
  Limits memory_percent;
  // Volatile (since the driver loaded) ECC error counts. One uncorrectable error is data lost.
  Limits ecc_uncorrected{std::nullopt, 1};
  Limits ecc_corrected;
  // Numbers of GPUs lost (nvidia-smi could not read them) and failing (row remap pending or
  // failed, page retirement pending, a recovery action other than None).
  Limits lost{std::nullopt, 1};
  Limits failing{std::nullopt, 1};
  // Xid errors counted in the kernel log per GPU: those NVIDIA says need a reset, and the rest.
  Limits xid_reset{std::nullopt, 1};
  Limits xid_other{1, std::nullopt};
  // Whether an unreadable kernel log (its Xids unknown) is a WARNING rather than a note.
  bool kernel_log_unreadable_warns = true;
  // The sample's age in seconds: now minus its timestamp.
  Limits age_seconds;
  // Fewer GPUs listed than this is CRITICAL: a GPU that fell off the bus may vanish from the list.
  std::optional<std::size_t> expected_gpus;
};

struct CheckResult {
  CheckStatus status = CheckStatus::unknown;
  std::string summary;  // one line, no '|', valid UTF-8
  std::string perfdata; // 'label'=value[UOM];[warn];[crit];[min];[max], space-separated
};

// Judges `snapshot` (only the GPUs that one of `gpus` selects, nvsmi/gpu_selector.hpp; all when
// empty) at `now`. A selector that selects none is CRITICAL: the GPU meant is gone.
CheckResult judge_snapshot(const Snapshot &snapshot, const CheckThresholds &thresholds,
                           const std::vector<std::string> &gpus,
                           std::chrono::system_clock::time_point now);

// A check that could not judge: `reason` as the summary, no perfdata.
CheckResult check_failure(CheckStatus status, const std::string &reason);

// "GPU <STATUS> - <summary>[ | <perfdata>]\n".
std::string plugin_line(const CheckResult &result);

// `text` made safe for the one line: valid UTF-8, control characters and line separators as
// spaces, '|' (where Nagios splits off the perfdata) as '/', at most `max_bytes` bytes (cut at a
// character, with "..." when cut).
std::string plugin_text(const std::string &text, std::size_t max_bytes = 200);

struct CheckOptions {
  OneSampleOptions sample;
  CheckThresholds thresholds;
  std::vector<std::string> gpus; // --gpu: index, UUID or PCI bus id each
  // The sample's age limits in seconds as given (an inner nullopt: "none"); an outer nullopt takes
  // the default for where the sample comes from: off for nvidia-smi run now, which is never old;
  // 300 s warning, 900 s critical for --fixture, a file that cron may have stopped writing.
  std::optional<std::optional<double>> stale_warning, stale_critical;
};

// The age limits `options` resolves to (see CheckOptions::stale_warning).
Limits check_age_limits(const CheckOptions &options);

// Prints plugin_line(result) on stdout; returns the exit code, the status (UNKNOWN when stdout
// cannot be written).
int write_plugin_line(const CheckResult &result);

// Samples, judges, prints the line; returns the exit code (the status). Never throws: nvidia-smi
// missing, failing or unreadable is UNKNOWN, nvidia-smi past its --timeout CRITICAL (a GPU that
// hangs the driver is what a check exists to catch).
int run_check(const CheckOptions &options);

} // namespace nvsmi
