#include "commands/check_command.hpp"

#include "core/exit_codes.hpp"
#include "core/local_time.hpp"
#include "core/number_text.hpp"
#include "files/file_io.hpp"
#include "nvidia_smi/stop_signals.hpp"

#include "nvsmi/gpu_selector.hpp"
#include "nvsmi/gpu_state.hpp"
#include "nvsmi/pci_address.hpp"
#include "nvsmi/utf8.hpp"
#include "nvsmi/xid.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <exception>

namespace nvsmi {
namespace {

// What a status is to Nagios: its word, its exit code, and its rank in the order a monitoring
// operator acts on (CRITICAL, WARNING, UNKNOWN, OK: a real problem on one GPU is not hidden behind
// another that could not be judged). The one place they are written.
struct NagiosStatus {
  const char *name;
  int exit_code, rank;
};

NagiosStatus nagios(CheckStatus status) {
  const NagiosStatus unknown{"UNKNOWN", 3, 1};
  if (!status.severity())
    return unknown;
  switch (*status.severity()) {
  case Severity::ok:
    return {"OK", 0, 0};
  case Severity::warning:
    return {"WARNING", 1, 2};
  case Severity::critical:
    return {"CRITICAL", 2, 3};
  }
  return unknown;
}

int rank(CheckStatus status) { return nagios(status).rank; }

Severity level(double value, const Limits &limits) {
  if (limits.critical && value >= *limits.critical)
    return Severity::critical;
  if (limits.warning && value >= *limits.warning)
    return Severity::warning;
  return Severity::ok;
}

bool active(const Limits &limits) { return limits.warning || limits.critical; }

// 85, 97.5, 0.01: no exponent, no trailing zeros, so that every grapher reads it.
std::string number(double value) {
  if (std::isnan(value) || std::isinf(value))
    return "U";
  return trimmed_text(value, 2);
}

std::string optional_number(const std::optional<double> &value) {
  return value ? number(*value) : "";
}

// 'label'=value[uom];warn;crit;min;max with the empty fields at the end left off.
std::string perf(const std::string &label, const std::optional<double> &value,
                 const std::string &uom, const Limits &limits, std::optional<double> min = {},
                 std::optional<double> max = {}) {
  std::vector<std::string> fields = {
      value ? number(*value) + uom : "U", optional_number(limits.warning),
      optional_number(limits.critical), optional_number(min), optional_number(max)};
  while (fields.size() > 1 && fields.back().empty())
    fields.pop_back();
  std::string out = "'" + label + "'=" + fields[0];
  for (std::size_t i = 1; i < fields.size(); ++i)
    out += ";" + fields[i];
  return out;
}

std::string plural(std::int64_t count, const std::string &one, const std::string &many) {
  return std::to_string(count) + " " + (count == 1 ? one : many);
}

// "45 s", "12 min", "3 h 5 min", "2 d 4 h": the largest unit and the next, enough for an operator.
std::string duration(std::int64_t seconds) {
  static const std::int64_t sizes[] = {86400, 3600, 60, 1};
  static const char *names[] = {"d", "h", "min", "s"};
  std::size_t first = 3;
  for (std::size_t i = 0; i < 3; ++i)
    if (seconds >= sizes[i]) {
      first = i;
      break;
    }
  std::string out = std::to_string(seconds / sizes[first]) + " " + names[first];
  if (first < 3) {
    std::int64_t next = seconds % sizes[first] / sizes[first + 1];
    if (next > 0)
      out += " " + std::to_string(next) + " " + names[first + 1];
  }
  return out;
}

// "0000:3B:00.0" from nvidia-smi's "00000000:3B:00.0": the form lspci and the kernel print.
std::optional<std::string> short_bus_id(const Text &bus_id) {
  if (!bus_id)
    return std::nullopt;
  std::optional<PciAddress> address = parse_pci_address(*bus_id);
  if (!address)
    return plugin_text(*bus_id, 40);
  char text[32];
  std::snprintf(text, sizeof text, "%04X:%02X:%02X.%X", address->domain, address->bus,
                address->device, address->function.value_or(0));
  return std::string(text);
}

// A concern of one GPU, of one PCI device in the kernel log, or of the whole sample.
struct CheckFinding {
  CheckStatus status;
  std::string text;
};

struct Subject {
  std::string name; // "GPU 3 (0000:3B:00.0)"; empty for the sample as a whole
  std::vector<CheckFinding> findings;
  std::size_t order = 0;

  CheckStatus worst() const {
    CheckStatus out = CheckStatus::ok;
    for (const CheckFinding &finding : findings)
      out = worse(out, finding.status);
    return out;
  }
  void add(CheckStatus status, std::string text) {
    if (status != CheckStatus::ok)
      findings.push_back({status, std::move(text)});
  }
};

std::string gpu_name(const Gpu &gpu) {
  std::string name = "GPU " + std::to_string(gpu.index);
  if (std::optional<std::string> bus = short_bus_id(gpu.pci_bus_id))
    name += " (" + *bus + ")";
  return name;
}

// Nothing at all read: the GPU is listed, but no figure says how it is.
bool no_readings(const Gpu &gpu) {
  return !gpu.temperature_c && !gpu.memory_used_mib && !gpu.memory_total_mib &&
         !gpu.utilization_gpu_percent && !gpu.power_draw_w && !gpu.clocks.graphics_mhz;
}

struct XidCounts {
  std::int64_t reset = 0, other = 0;
  std::vector<const XidTally *> reset_tallies, other_tallies;
};

void count_xid(XidCounts &counts, const XidTally &tally) {
  bool reset = xid_needs_reset(tally.xid);
  (reset ? counts.reset : counts.other) += tally.count;
  (reset ? counts.reset_tallies : counts.other_tallies).push_back(&tally);
}

// "Xid 79 x1 needs a reset: GPU has fallen off the bus." or "Xid 13 x2, 31 x1".
std::string xid_text(const std::vector<const XidTally *> &tallies, bool reset) {
  std::string text = "Xid ";
  for (std::size_t i = 0; i < tallies.size(); ++i)
    text += (i ? ", " : "") + std::to_string(tallies[i]->xid) + " x" +
            std::to_string(tallies[i]->count);
  if (reset)
    text += tallies.size() == 1 ? " needs a reset" : " need a reset";
  if (tallies.size() == 1 && !tallies.front()->last_message.empty())
    text += ": " + plugin_text(tallies.front()->last_message, 80);
  return text;
}

void judge_xids(Subject &subject, const XidCounts &counts, const CheckThresholds &thresholds) {
  if (counts.reset > 0)
    subject.add(level(static_cast<double>(counts.reset), thresholds.xid_reset),
                xid_text(counts.reset_tallies, true));
  if (counts.other > 0)
    subject.add(level(static_cast<double>(counts.other), thresholds.xid_other),
                xid_text(counts.other_tallies, false));
}

} // namespace

const char *check_status_name(CheckStatus status) { return nagios(status).name; }

int nagios_exit_code(CheckStatus status) { return nagios(status).exit_code; }

CheckStatus worse(CheckStatus a, CheckStatus b) { return rank(b) > rank(a) ? b : a; }

std::string plugin_text(const std::string &text, std::size_t max_bytes) {
  std::string valid = valid_utf8(text);
  std::string out;
  bool cut = false;
  for (std::size_t at = 0; at < valid.size();) {
    CodePoint point = code_point_at(valid, at);
    std::string piece = valid.substr(at, point.bytes);
    char32_t c = point.value;
    if (c < 0x20 || c == 0x7f || (c >= 0x80 && c < 0xa0) || c == 0x2028 || c == 0x2029)
      piece = " ";
    else if (c == '|')
      piece = "/";
    if (out.size() + piece.size() > max_bytes) {
      cut = true;
      break;
    }
    out += piece;
    at += point.bytes;
  }
  if (cut) {
    while (!out.empty() && out.size() + 3 > max_bytes) {
      std::size_t last = out.size() - 1;
      while (last > 0 && (static_cast<unsigned char>(out[last]) & 0xc0) == 0x80)
        --last;
      out.erase(last);
    }
    out += "...";
  }
  return out;
}

CheckResult judge_snapshot(const Snapshot &snapshot, const CheckThresholds &thresholds,
                           const std::vector<std::string> &gpus,
                           std::chrono::system_clock::time_point now) {
  std::vector<Subject> subjects;
  Subject sample; // the findings of the sample as a whole
  std::vector<std::string> gpu_perf;

  std::vector<const Gpu *> chosen;
  for (const Gpu &gpu : snapshot.gpus)
    if (gpus.empty() || std::any_of(gpus.begin(), gpus.end(), [&gpu](const std::string &selector) {
          return selects_gpu(selector, gpu);
        }))
      chosen.push_back(&gpu);
  for (const std::string &selector : gpus)
    if (std::none_of(chosen.begin(), chosen.end(),
                     [&selector](const Gpu *gpu) { return selects_gpu(selector, *gpu); }))
      sample.add(CheckStatus::critical, "GPU " + selector + " not listed by nvidia-smi");
  if (thresholds.expected_gpus && snapshot.gpus.size() < *thresholds.expected_gpus)
    sample.add(CheckStatus::critical, std::to_string(snapshot.gpus.size()) + " of " +
                                          std::to_string(*thresholds.expected_gpus) +
                                          " expected GPUs listed");
  if (snapshot.gpus.empty() && !thresholds.expected_gpus)
    sample.add(CheckStatus::unknown, "no GPUs in the sample");

  const KernelLog *kernel_log =
      snapshot.kernel_log && snapshot.kernel_log->readable ? &*snapshot.kernel_log : nullptr;
  if (snapshot.kernel_log && !snapshot.kernel_log->readable)
    sample.findings.push_back(
        {thresholds.kernel_log_unreadable_warns ? CheckStatus::warning : CheckStatus::ok,
         "Xid unknown: kernel log not readable" +
             (snapshot.kernel_log->error ? " (" + plugin_text(*snapshot.kernel_log->error, 80) + ")"
                                         : std::string())});
  std::vector<bool> tally_matched(kernel_log ? kernel_log->xids.size() : 0, false);

  std::int64_t lost = 0, failing = 0, xid_reset = 0, xid_other = 0;
  for (const Gpu *gpu : chosen) {
    lost += gpu->lost_reason ? 1 : 0;
    failing += !gpu->lost_reason && gpu_failure(*gpu) ? 1 : 0;
  }
  CheckStatus lost_status = level(static_cast<double>(lost), thresholds.lost);
  CheckStatus failing_status = level(static_cast<double>(failing), thresholds.failing);

  std::size_t ok = 0;
  for (const Gpu *gpu : chosen) {
    Subject subject{gpu_name(*gpu), {}, subjects.size()};
    const std::string label = "gpu" + std::to_string(gpu->index) + "_";
    std::optional<double> temperature_critical =
        thresholds.temperature_critical_at_slowdown
            ? std::optional<double>(gpu->health.temperature_slowdown_c
                                        ? static_cast<double>(*gpu->health.temperature_slowdown_c)
                                        : thresholds.temperature_critical_fallback_c)
            : thresholds.temperature_c.critical;
    Limits temperature{thresholds.temperature_c.warning, temperature_critical};

    if (gpu->lost_reason) {
      subject.add(lost_status, "lost: " + plugin_text(*gpu->lost_reason, 80));
    } else if (no_readings(*gpu)) {
      subject.add(CheckStatus::unknown, "no readings");
    } else {
      if (gpu->temperature_c) {
        double value = static_cast<double>(*gpu->temperature_c);
        CheckStatus status = level(value, temperature);
        bool at_slowdown = status == CheckStatus::critical &&
                           thresholds.temperature_critical_at_slowdown &&
                           gpu->health.temperature_slowdown_c;
        double limit = status == CheckStatus::critical ? *temperature.critical
                                                       : temperature.warning.value_or(0);
        subject.add(status, "temperature " + number(value) + " C, " +
                                (status == CheckStatus::critical ? "critical" : "warning") +
                                " at " + number(limit) + " C" +
                                (at_slowdown ? " (its slowdown threshold)" : ""));
      } else if (active(temperature)) {
        subject.add(CheckStatus::unknown, "temperature unknown");
      }
      RealReading memory = gpu->memory_used_percent();
      if (memory) {
        CheckStatus status = level(*memory, thresholds.memory_percent);
        subject.add(status, "memory " + number(*memory) + "% used, " +
                                (status == CheckStatus::critical ? "critical" : "warning") +
                                " at " +
                                number(status == CheckStatus::critical
                                           ? *thresholds.memory_percent.critical
                                           : thresholds.memory_percent.warning.value_or(0)) +
                                "%");
      } else if (active(thresholds.memory_percent)) {
        subject.add(CheckStatus::unknown, "memory use unknown");
      }
      const EccErrorCounts &ecc = gpu->health.ecc_volatile;
      // Uncorrectable errors make the GPU failing too, so the failing thresholds judge them as
      // they judge the other reasons, and the `failing` count is the one /metrics shows.
      if (ecc.uncorrected && *ecc.uncorrected > 0)
        subject.add(
            worse(level(static_cast<double>(*ecc.uncorrected), thresholds.ecc_uncorrected),
                  failing_status),
            plural(*ecc.uncorrected, "uncorrectable ECC error", "uncorrectable ECC errors"));
      else if (std::optional<std::string> why = undecided_health(*gpu);
               why && active(thresholds.ecc_uncorrected))
        subject.add(CheckStatus::unknown, *why); // ECC on, its count N/A: not OK either
      if (ecc.corrected && *ecc.corrected > 0)
        subject.add(level(static_cast<double>(*ecc.corrected), thresholds.ecc_corrected),
                    plural(*ecc.corrected, "correctable ECC error", "correctable ECC errors"));
      // 77 bytes: a recovery action keeps 60 of its own after "recovery action: ".
      for (const std::string &words : gpu_failures(*gpu, false))
        subject.add(failing_status, plugin_text(words, 77));
    }

    if (kernel_log) {
      XidCounts counts;
      for (std::size_t i = 0; i < kernel_log->xids.size(); ++i)
        if (gpu->pci_bus_id && same_pci_device(kernel_log->xids[i].pci_device, *gpu->pci_bus_id)) {
          count_xid(counts, kernel_log->xids[i]);
          tally_matched[i] = true;
        }
      judge_xids(subject, counts, thresholds);
      xid_reset += counts.reset;
      xid_other += counts.other;
    }

    if (!gpu->lost_reason) {
      gpu_perf.push_back(perf(label + "temp",
                              gpu->temperature_c
                                  ? std::optional<double>(static_cast<double>(*gpu->temperature_c))
                                  : std::nullopt,
                              "C", temperature));
      gpu_perf.push_back(
          perf(label + "mem", gpu->memory_used_percent(), "%", thresholds.memory_percent, 0, 100));
      const EccErrorCounts &ecc = gpu->health.ecc_volatile;
      if (ecc.uncorrected)
        gpu_perf.push_back(perf(label + "ecc_uncorr", static_cast<double>(*ecc.uncorrected), "",
                                thresholds.ecc_uncorrected, 0));
      if (ecc.corrected)
        gpu_perf.push_back(perf(label + "ecc_corr", static_cast<double>(*ecc.corrected), "",
                                thresholds.ecc_corrected, 0));
    }
    if (subject.findings.empty() && !gpu->lost_reason)
      ++ok;
    subjects.push_back(std::move(subject));
  }

  // Xids of a PCI device nvidia-smi did not list: a GPU that fell off the bus may be one. With
  // --gpu they cannot be told apart from GPUs left out on purpose, so they count only without it.
  if (kernel_log && gpus.empty()) {
    std::vector<std::string> devices;
    for (std::size_t i = 0; i < kernel_log->xids.size(); ++i)
      if (!tally_matched[i] && std::find(devices.begin(), devices.end(),
                                         kernel_log->xids[i].pci_device) == devices.end())
        devices.push_back(kernel_log->xids[i].pci_device);
    for (const std::string &device : devices) {
      XidCounts counts;
      for (const XidTally &tally : kernel_log->xids)
        if (tally.pci_device == device)
          count_xid(counts, tally);
      Subject subject{"PCI " + plugin_text(device, 40) + " (not listed)", {}, subjects.size()};
      judge_xids(subject, counts, thresholds);
      xid_reset += counts.reset;
      xid_other += counts.other;
      if (!subject.findings.empty())
        subjects.push_back(std::move(subject));
    }
  }

  std::optional<double> age;
  if (snapshot.timestamp)
    if (std::optional<double> taken = epoch_seconds(*snapshot.timestamp))
      age = std::max(0.0, std::chrono::duration<double>(now.time_since_epoch()).count() - *taken);
  if (age) {
    CheckStatus status = level(*age, thresholds.age_seconds);
    sample.add(status, "sample is " + duration(static_cast<std::int64_t>(*age)) + " old, " +
                           (status == CheckStatus::critical ? "critical" : "warning") + " at " +
                           duration(static_cast<std::int64_t>(
                               status == CheckStatus::critical
                                   ? *thresholds.age_seconds.critical
                                   : thresholds.age_seconds.warning.value_or(0))));
  } else if (active(thresholds.age_seconds)) {
    sample.add(CheckStatus::unknown, "sample age unknown (no timestamp with its time zone)");
  }

  sample.order = subjects.size();
  subjects.push_back(std::move(sample));
  std::stable_sort(subjects.begin(), subjects.end(), [](const Subject &a, const Subject &b) {
    return rank(a.worst()) > rank(b.worst());
  });

  CheckResult result;
  result.status = CheckStatus::ok;
  std::vector<std::string> parts;
  for (Subject &subject : subjects) {
    std::stable_sort(subject.findings.begin(), subject.findings.end(),
                     [](const CheckFinding &a, const CheckFinding &b) {
                       return rank(a.status) > rank(b.status);
                     });
    for (const CheckFinding &finding : subject.findings)
      result.status = worse(result.status, finding.status);
    if (subject.findings.empty())
      continue;
    std::string part = subject.name.empty() ? "" : subject.name + ": ";
    for (std::size_t i = 0; i < subject.findings.size(); ++i)
      part += (i ? ", " : "") + subject.findings[i].text;
    parts.push_back(std::move(part));
  }
  if (!chosen.empty())
    parts.push_back(std::to_string(ok) + " of " + std::to_string(chosen.size()) + " OK");
  for (std::size_t i = 0; i < parts.size(); ++i)
    result.summary += (i ? "; " : "") + parts[i];
  result.summary = plugin_text(result.summary, 4000);

  std::vector<std::string> perfdata = {
      perf("gpus", static_cast<double>(chosen.size()), "", {}, 0),
      perf("gpus_ok", static_cast<double>(ok), "", {}, 0, static_cast<double>(chosen.size())),
      perf("lost", static_cast<double>(lost), "", thresholds.lost, 0),
      perf("failing", static_cast<double>(failing), "", thresholds.failing, 0),
  };
  if (kernel_log) {
    perfdata.push_back(
        perf("xid_reset", static_cast<double>(xid_reset), "", thresholds.xid_reset, 0));
    perfdata.push_back(
        perf("xid_other", static_cast<double>(xid_other), "", thresholds.xid_other, 0));
  }
  if (age)
    perfdata.push_back(perf("age", std::round(*age), "s", thresholds.age_seconds, 0));
  perfdata.insert(perfdata.end(), gpu_perf.begin(), gpu_perf.end());
  for (std::size_t i = 0; i < perfdata.size(); ++i)
    result.perfdata += (i ? " " : "") + perfdata[i];
  return result;
}

CheckResult check_failure(CheckStatus status, const std::string &reason) {
  CheckResult result;
  result.status = status;
  result.summary = plugin_text(reason, 1000);
  return result;
}

std::string plugin_line(const CheckResult &result) {
  std::string line = std::string("GPU ") + check_status_name(result.status) + " - " +
                     (result.summary.empty() ? "(no summary)" : result.summary);
  if (!result.perfdata.empty())
    line += " | " + result.perfdata;
  return line + "\n";
}

Limits check_age_limits(const CheckOptions &options) {
  bool recording = options.sample.fixture.has_value();
  return Limits{
      options.stale_warning.value_or(recording ? std::optional<double>(300) : std::nullopt),
      options.stale_critical.value_or(recording ? std::optional<double>(900) : std::nullopt)};
}

int write_plugin_line(const CheckResult &result) {
  try {
    write_stdout(plugin_line(result));
  } catch (const std::exception &) {
    return nagios_exit_code(CheckStatus::unknown); // nobody left to read the line
  }
  return nagios_exit_code(result.status);
}

int run_check(const CheckOptions &options) {
  CheckResult result;
  try {
    ignore_write_signals();
    CheckThresholds thresholds = options.thresholds;
    thresholds.age_seconds = check_age_limits(options);
    Snapshot snapshot = read_one_sample(options.sample);
    result = judge_snapshot(snapshot, thresholds, options.gpus, std::chrono::system_clock::now());
  } catch (const AgentError &error) {
    result = check_failure(
        error.code() == exit_timeout ? CheckStatus::critical : CheckStatus::unknown, error.what());
  } catch (const std::exception &error) {
    result = check_failure(CheckStatus::unknown, std::string("internal error: ") + error.what());
  }
  return write_plugin_line(result);
}

} // namespace nvsmi
