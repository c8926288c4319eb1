// `nvsmi-agent report`: per-GPU figures and a finding, and a per-user ledger, from one or more
// CSV or JSON logs.
#pragma once

#include "core/job_summary.hpp"
#include "report/report_jobs.hpp"
#include "report/report_log.hpp"
#include "report/report_stats.hpp"
#include "report/report_users.hpp"

#include "nvsmi/gpu_state.hpp"

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace nvsmi {

struct ReportOptions {
  std::vector<std::string> files;
  std::optional<Timestamp> from, to; // rows outside are left out
  std::vector<std::string> gpus;     // only these (nvsmi/gpu_selector.hpp); empty: every GPU
  std::optional<double> interval;    // seconds between samples; inferred when not given
  bool by_job = false;               // --by-job: the jobs' section in every format
  bool details = false; // --details: the text report's files, rows and each GPU's figures
};

// The GPUs as each was in its latest usable row, by fleet_summary: what the report says first.
struct LastSample {
  Timestamp time; // the newest of those rows
  FleetSummary fleet;
};

struct Report {
  ReportOptions options;
  std::vector<std::string> files; // in the order read
  std::int64_t rows_read = 0, rows_used = 0, rows_outside_time = 0, rows_other_gpus = 0;
  BadRows bad;
  std::vector<GpuSummary> gpus;          // in the order first seen
  UserLedgerSummary users;               // from the JSON logs' process lists; empty for CSV logs
  BatchJobLedgerSummary jobs;            // from the JSON logs' allocations; empty for CSV logs
  std::optional<LastSample> last_sample; // nullopt when no row was usable
  // `run`'s job, a section of its own in every format. With it, rows_used may be 0: no sample of
  // the job's GPUs was taken while it ran, and the report is the job's section alone.
  std::optional<JobSummary> job;
};

// At most this many GPUs are told apart; rows of more are counted as bad.
constexpr std::size_t report_max_gpus = 64;

// A report made one GPU reading at a time, from the logs (make_report) or from the samples a
// command takes (`run`, without writing them anywhere): the same figures in the same bounded
// memory, however long it runs (report_series.hpp).
class ReportBuilder {
public:
  explicit ReportBuilder(const ReportOptions &options);
  ReportBuilder(const ReportBuilder &) = delete;
  ReportBuilder &operator=(const ReportBuilder &) = delete;
  ~ReportBuilder();

  // One GPU's reading of a log, or counted among the rows left out or bad.
  void add(const LogRow &row);
  // A sample taken in memory, as a JSON log's line is read (take_sample): one row per GPU.
  void add(const Snapshot &snapshot);
  BadRows &bad() { return report_.bad; }
  // The files read_logs read, and their rows.
  void read_files(const LogTotals &totals);
  // The figures so far, findings included. Throws AgentError exit_bad_output when no row was
  // usable, or none of a GPU that options.gpus names, unless `job` is given: then the report is the
  // job's section alone, with a note that says so.
  Report finish(std::optional<JobSummary> job = std::nullopt);

private:
  void read_sample_cpus(const LogRow &log);
  void attribute_host_cpus(const LogRow &log, Sample &sample);

  Report report_;
  // The cores the processes of the sample being read used, in all (nullopt: not known) and by
  // user, and which sample that is (LogRow::sample_gpus, file and line).
  struct SampleCpus {
    const std::vector<Gpu> *gpus = nullptr;
    const std::string *file = nullptr;
    std::int64_t line = -1;
    std::optional<double> cores;
    std::map<Text, double> by_user;
  } sample_cpus_;
  std::vector<std::unique_ptr<GpuStats>> stats_;
  std::map<std::string, std::size_t> by_key_;
  UserLedger ledger_;
  BatchJobLedger jobs_;
  std::vector<Gpu> latest_; // each GPU's latest usable row, in the order of stats_
  std::optional<Timestamp> newest_;
  std::int64_t samples_ = 0;
  std::vector<bool> selector_matched_; // per options.gpus: whether a row of it was seen
};

// Throws AgentError: exit_io when a file cannot be read, exit_bad_output when no row is usable.
Report make_report(const ReportOptions &options);

// How many of the report's GPUs had their SMs busy while NVLink's traffic was known: more than
// one is a job across GPUs, whose NVLink the finding judges.
std::size_t nvlink_busy_gpus(const std::vector<GpuSummary> &gpus);
// The one-line plain-language finding for a GPU (`busy_gpus`: nvlink_busy_gpus of its report),
// and for a user of the ledger (README "report" and docs/ACTIVITY.md have the rules).
Finding report_finding(const GpuSummary &gpu, std::size_t busy_gpus);
// Whether `covered_seconds` of samples are enough for advice on how a GPU is used (starved,
// CPU-bound, room for more work, a larger batch): gpu_thresholds::advice_min_window_s.
bool enough_for_advice(double covered_seconds);
// What a GPU's finding says instead of that advice from less: "advice needs 5 min of samples;
// these cover 1 min"; and what a report says once when its whole log is that short: "advice
// needs 5 min of samples; this log covers 1 min".
std::string short_window_finding(double covered_seconds);
std::string short_log_text(double covered_seconds);
Finding report_user_finding(const UserSummary &user);
// What the host's CPUs did while the GPU was starved, the figures behind the CPU-bound rule, in
// words; empty when the log has no host CPU reading for that time.
std::string describe_starved_host_cpus(const GpuSummary &gpu);

// What every format says first, from the report's figures (report_glance.cpp). "At the last
// sample (2024-03-12T14:03:27.000+01:00): 8 GPUs: 3 free · ...": each GPU as its latest row had it.
std::string last_sample_text(const LastSample &last);
// "findings: 1 critical, 2 warning, 5 ok": the GPUs' and the users' findings by severity.
std::string findings_count_text(const Report &report);
// Who held the GPU at `position` in report.gpus, from the users ledger: "alice 2.00 h, bob
// 0.50 h" (hours on that GPU, most first); "no process in the lists (2.00 h)" when the
// lists name none; "unknown (no process lists)" when the log has none for it (a CSV log); with
// "; process lists for 1.00 of 2.00 h" when they cover only part of its time. Names as the log
// has them: the caller makes them safe for its format.
std::string gpu_holders_text(const Report &report, std::size_t position);
// The GPUs a user held, by index: "GPU 0 1.50 h, GPU 3 0.20 h".
std::string user_gpus_text(const Report &report, const UserSummary &user);

// GPU-seconds as the text and HTML reports write GPU-hours: "1.50", "unknown" where no sample
// knew them.
std::string gpu_hours_text(std::optional<double> seconds);
// A length of time as the report writes it: "42 s", "30 min 0 s", "2 h 5 min", "3 d 1 h 0 min".
std::string describe_duration(double seconds);
// The time a finding's figures cover, as its window: describe_duration's words, in whole seconds
// from 10 s ("12 s", not "12.04 s"; "2.5 s").
std::string describe_window(double seconds);

// The report as text, as one line of JSON ("nvsmi-agent.report/1"), or as a self-contained HTML
// page with the series drawn in inline SVG.
std::string format_report_text(const Report &report);
std::string format_report_json(const Report &report);
std::string format_report_html(const Report &report);
// One job of the per-job ledger (`job JOBID`, and each of `report --by-job`'s): as text, and as
// one line of JSON ("nvsmi-agent.job/1").
std::string format_job_text(const BatchJob &job);
std::string format_job_json(const BatchJob &job);
// The per-job ledger as CSV, a row per job (report_csv.cpp): the accounting export.
std::string format_jobs_csv(const Report &report);
// The jobs rolled up per Slurm account as CSV, a row per account (`report --by-account`).
std::string format_accounts_csv(const Report &report);
// `text` safe inside HTML text and double-quoted attributes (& < > " escaped).
std::string html_escape(const std::string &text);

} // namespace nvsmi
