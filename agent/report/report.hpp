// `nvsmi-agent report`: per-GPU figures and a finding from one or more CSV logs.
#pragma once

#include "report/report_log.hpp"
#include "report/report_stats.hpp"

#include <optional>
#include <string>
#include <vector>

namespace nvsmi {

struct ReportOptions {
  std::vector<std::string> files;
  std::optional<Timestamp> from, to; // rows outside are left out
  std::optional<std::string> gpu;    // an index or a uuid
  std::optional<double> interval;    // seconds between samples; inferred when not given
};

struct Report {
  ReportOptions options;
  std::vector<std::string> files; // in the order read
  std::int64_t rows_read = 0, rows_used = 0, rows_outside_time = 0, rows_other_gpus = 0;
  BadRows bad;
  std::vector<GpuSummary> gpus; // in the order first seen
};

// At most this many GPUs are told apart; rows of more are counted as bad.
constexpr std::size_t report_max_gpus = 64;

// Throws AgentError: exit_io when a file cannot be read, exit_bad_output when no row is usable.
Report make_report(const ReportOptions &options);

// The one-line plain-language finding for a GPU (README "report" has the rules).
std::string report_finding(const GpuSummary &gpu);

// The report as text, as one line of JSON ("nvsmi-agent.report/1"), or as a self-contained HTML
// page with the series drawn in inline SVG.
std::string format_report_text(const Report &report);
std::string format_report_json(const Report &report);
std::string format_report_html(const Report &report);

} // namespace nvsmi
