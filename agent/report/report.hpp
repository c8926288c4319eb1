// `nvsmi-agent report`: per-GPU figures and a finding, and a per-user ledger, from one or more
// CSV or JSON logs.
#pragma once

#include "core/job_summary.hpp"
#include "report/report_log.hpp"
#include "report/report_stats.hpp"
#include "report/report_users.hpp"

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
};

struct Report {
  ReportOptions options;
  std::vector<std::string> files; // in the order read
  std::int64_t rows_read = 0, rows_used = 0, rows_outside_time = 0, rows_other_gpus = 0;
  BadRows bad;
  std::vector<GpuSummary> gpus; // in the order first seen
  UserLedgerSummary users;      // from the JSON logs' process lists; empty for CSV logs
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
  Report report_;
  std::vector<std::unique_ptr<GpuStats>> stats_;
  std::map<std::string, std::size_t> by_key_;
  UserLedger ledger_;
  std::int64_t samples_ = 0;
  std::vector<bool> selector_matched_; // per options.gpus: whether a row of it was seen
};

// Throws AgentError: exit_io when a file cannot be read, exit_bad_output when no row is usable.
Report make_report(const ReportOptions &options);

// The one-line plain-language finding for a GPU, and for a user of the ledger (README "report"
// has the rules).
Finding report_finding(const GpuSummary &gpu);
Finding report_user_finding(const UserSummary &user);
// What the host's CPUs did while the GPU was starved, the figures behind the CPU-bound rule, in
// words; empty when the log has no host CPU reading for that time.
std::string describe_starved_host_cpus(const GpuSummary &gpu);

// A length of time as the report writes it: "42 s", "30 min 0 s", "2 h 5 min", "3 d 1 h 0 min".
std::string describe_duration(double seconds);

// The report as text, as one line of JSON ("nvsmi-agent.report/1"), or as a self-contained HTML
// page with the series drawn in inline SVG.
std::string format_report_text(const Report &report);
std::string format_report_json(const Report &report);
std::string format_report_html(const Report &report);
// `text` safe inside HTML text and double-quoted attributes (& < > " escaped).
std::string html_escape(const std::string &text);

} // namespace nvsmi
