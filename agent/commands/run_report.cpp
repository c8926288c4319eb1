#include "commands/run_report.hpp"

#include "core/number_text.hpp"
#include "core/screen_text.hpp"
#include "report/report.hpp"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>

namespace nvsmi {
namespace {

// A name from outside, one line of printable UTF-8.
std::string shown(const std::string &raw) { return printable_text(raw, true); }

std::string joined_command(const std::vector<std::string> &command) {
  std::string out;
  for (const std::string &word : command)
    out += (out.empty() ? "" : " ") + word;
  return shown(out);
}

std::string ending(const JobSummary &job) {
  if (job.signal)
    return "killed by signal " + std::to_string(*job.signal) + " (exit code " +
           std::to_string(job.exit_code) + ")";
  return "exit code " + std::to_string(job.exit_code);
}

long percent_of(long part, long whole) {
  return whole > 0 ? std::lround(100.0 * static_cast<double>(part) / static_cast<double>(whole))
                   : 0;
}

const char *const estimate_caveat =
    "an estimate: it assumes memory grows in proportion to the batch";

// The lines of one GPU, without indentation.
std::vector<std::string> gpu_lines(const JobGpuTally &gpu) {
  std::vector<std::string> lines;
  std::string memory = "peak memory ";
  if (gpu.peak_job_memory_mib) {
    memory += std::to_string(*gpu.peak_job_memory_mib) + " MiB";
    if (gpu.memory_total_mib && *gpu.memory_total_mib > 0)
      memory += " of " + std::to_string(*gpu.memory_total_mib) + " MiB (" +
                fixed_text(100.0 * static_cast<double>(*gpu.peak_job_memory_mib) /
                               static_cast<double>(*gpu.memory_total_mib),
                           1) +
                "%)";
  } else {
    memory += "unknown (no sample showed the job's processes with their memory)";
  }
  if (peak_incomplete(gpu))
    memory += ", perhaps incomplete: it counts only the processes known to be the job's";
  lines.push_back(memory);
  if (RealReading growth = batch_growth_estimate(gpu))
    lines.push_back("a batch about " + fixed_text(*growth, 1) + " times as large might fit (" +
                    estimate_caveat + ")");
  else if (peak_incomplete(gpu))
    lines.push_back("how much larger a batch might fit: unknown (the peak may miss the job's own "
                    "processes)");
  else
    lines.push_back("how much larger a batch might fit: unknown");
  lines.push_back("the job's processes were on it in " + std::to_string(gpu.samples_with_job) +
                  " of " + std::to_string(gpu.samples) + " samples");
  for (const StrangerTally &stranger : gpu.strangers)
    lines.push_back("GPU " + std::to_string(gpu.gpu.index) + " was shared with " +
                    shown(stranger.label) + " for " +
                    std::to_string(percent_of(stranger.samples, gpu.samples)) + "% of the run");
  for (const StrangerTally &unknown : gpu.unknown)
    lines.push_back("GPU " + std::to_string(gpu.gpu.index) + " also had " + shown(unknown.label) +
                    " for " + std::to_string(percent_of(unknown.samples, gpu.samples)) +
                    "% of the run, started while the job ran but outside its processes: the "
                    "job's (a container it asked for?) or another's, it cannot be told");
  return lines;
}

std::string cpu_line(const JobSummary &job) {
  std::string out;
  if (job.cpu_seconds) {
    out = fixed_text(*job.cpu_seconds, 1) + " s of CPU in " + fixed_text(job.seconds, 1) + " s";
    if (job.seconds > 0)
      out += " (" + fixed_text(100.0 * *job.cpu_seconds / job.seconds, 0) + "% of one core)";
    out += ", the job and the children it waited for";
  } else {
    out = "unknown";
  }
  if (job.gpu_process_cpu_mean && job.gpu_process_cpu_peak)
    out += "; its GPU processes: mean " + fixed_text(*job.gpu_process_cpu_mean, 0) + "%, peak " +
           fixed_text(*job.gpu_process_cpu_peak, 0) + "% of one core";
  return out;
}

nlohmann::json optional_number(const RealReading &value) {
  return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}
nlohmann::json optional_number(const Reading &value) {
  return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

std::string left_running_line(const JobSummary &job) {
  std::string out;
  for (const std::string &process : job.left_running)
    out += (out.empty() ? "" : ", ") + shown(process);
  return out;
}

} // namespace

std::string printable_lines(const std::string &text) {
  std::string out;
  for (std::size_t at = 0; at < text.size();) {
    std::size_t end = text.find('\n', at);
    bool last = end == std::string::npos;
    out += shown(text.substr(at, last ? std::string::npos : end - at));
    if (last)
      break;
    out += '\n';
    at = end + 1;
  }
  return out;
}

std::string job_text(const JobSummary &job) {
  std::string out = "\nJob  " + joined_command(job.command) + "\n";
  out += "  ended        " + ending(job) + " after " + fixed_text(job.seconds, 1) + " s\n";
  for (const JobGpuTally &gpu : job.gpus) {
    std::string head = "GPU " + std::to_string(gpu.gpu.index);
    head.resize(std::max<std::size_t>(head.size() + 1, 13), ' ');
    out += "  " + head + gpu.gpu.uuid + "\n";
    for (const std::string &line : gpu_lines(gpu))
      out += std::string(15, ' ') + line + "\n";
  }
  out += "  CPU          " + cpu_line(job) + "\n";
  if (!job.left_running.empty())
    out += "  left running " + left_running_line(job) + "\n";
  for (const std::string &note : job.notes)
    out += "  note         " + shown(note) + "\n";
  return out;
}

std::string add_job_to_json(const std::string &report_json, const JobSummary &job) {
  nlohmann::json report = nlohmann::json::parse(report_json);
  nlohmann::json gpus = nlohmann::json::array();
  for (const JobGpuTally &gpu : job.gpus) {
    nlohmann::json strangers = nlohmann::json::array();
    for (const StrangerTally &stranger : gpu.strangers)
      strangers.push_back({{"who", shown(stranger.label)},
                           {"samples", stranger.samples},
                           {"percent_of_run", percent_of(stranger.samples, gpu.samples)}});
    nlohmann::json unknown = nlohmann::json::array();
    for (const StrangerTally &process : gpu.unknown)
      unknown.push_back({{"who", shown(process.label)},
                         {"samples", process.samples},
                         {"percent_of_run", percent_of(process.samples, gpu.samples)}});
    gpus.push_back({{"index", gpu.gpu.index},
                    {"uuid", gpu.gpu.uuid},
                    {"samples", gpu.samples},
                    {"samples_with_job", gpu.samples_with_job},
                    {"memory_total_mib", optional_number(gpu.memory_total_mib)},
                    {"peak_job_memory_mib", optional_number(gpu.peak_job_memory_mib)},
                    {"peak_incomplete", peak_incomplete(gpu)},
                    {"batch_growth_estimate", optional_number(batch_growth_estimate(gpu))},
                    {"shared_with", strangers},
                    {"not_attributable", unknown}});
  }
  nlohmann::json notes = nlohmann::json::array();
  for (const std::string &note : job.notes)
    notes.push_back(shown(note));
  std::vector<std::string> command, left_running;
  for (const std::string &word : job.command)
    command.push_back(shown(word));
  for (const std::string &process : job.left_running)
    left_running.push_back(shown(process));
  report["job"] = {{"command", command},
                   {"exit_code", job.exit_code},
                   {"signal", job.signal ? nlohmann::json(*job.signal) : nlohmann::json(nullptr)},
                   {"seconds", job.seconds},
                   {"cpu_seconds", optional_number(job.cpu_seconds)},
                   {"gpu_process_cpu_percent_mean", optional_number(job.gpu_process_cpu_mean)},
                   {"gpu_process_cpu_percent_peak", optional_number(job.gpu_process_cpu_peak)},
                   {"gpus", gpus},
                   {"left_running", left_running},
                   {"notes", notes}};
  return report.dump() + "\n";
}

std::string add_job_to_html(const std::string &report_html, const JobSummary &job) {
  std::string section =
      "<section class=\"job\"><h2>Job: " + html_escape(joined_command(job.command)) + "</h2>\n<p>" +
      html_escape(ending(job)) + " after " + fixed_text(job.seconds, 1) + " s</p>\n";
  for (const JobGpuTally &gpu : job.gpus) {
    section += "<h3>GPU " + std::to_string(gpu.gpu.index) + " " + html_escape(gpu.gpu.uuid) +
               "</h3>\n<ul>\n";
    for (const std::string &line : gpu_lines(gpu))
      section += "<li>" + html_escape(line) + "</li>\n";
    section += "</ul>\n";
  }
  section += "<p>CPU: " + html_escape(cpu_line(job)) + "</p>\n";
  if (!job.left_running.empty())
    section += "<p>Left running: " + html_escape(left_running_line(job)) + "</p>\n";
  for (const std::string &note : job.notes)
    section += "<p>Note: " + html_escape(shown(note)) + "</p>\n";
  section += "</section>\n";
  std::size_t end = report_html.rfind("</body>");
  if (end == std::string::npos)
    return report_html + section;
  return report_html.substr(0, end) + section + report_html.substr(end);
}

} // namespace nvsmi
