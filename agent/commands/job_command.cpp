#include "commands/job_command.hpp"

#include "core/exit_codes.hpp"
#include "core/number_text.hpp"
#include "core/privilege.hpp"
#include "core/screen_text.hpp"
#include "files/file_io.hpp"
#include "fleet/fleet_http.hpp"
#include "report/report_json_log.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <sys/stat.h>

namespace nvsmi {
namespace {

// How long the serve may take for its whole history, and how much of it is read: an hour of
// 8 busy GPUs at 1 s is about 60 MB as served.
constexpr std::chrono::seconds serve_timeout{30};
constexpr std::size_t max_history_bytes = 256u << 20;
// Rotated logs looked for beside the default one (watch's --json-keep is at most 1000).
constexpr int max_rotated_logs = 1000;

// The serve to ask: HOST:PORT where HOST is a loopback address written as one, never a name
// (which could resolve off the machine). Throws AgentError(exit_usage) for anything else.
FleetHost loopback_serve(const std::string &text) {
  FleetHost host = parse_fleet_host(text);
  boost::system::error_code error;
  auto address = boost::asio::ip::make_address(host.host, error);
  if (error || !address.is_loopback() || host.tls)
    throw AgentError(exit_usage, "--serve: " + printable_text(text) +
                                     " is not a loopback address and port like 127.0.0.1:9437 "
                                     "(job reads only this machine's serve, over plain HTTP)");
  return host;
}

// The job's entry in `report`, or nullptr.
const BatchJob *find_job(const Report &report, const std::string &job_id) {
  for (const BatchJob &job : report.jobs.jobs)
    if (job.job_id == job_id)
      return &job;
  return nullptr;
}

void print_job(const BatchJob &job, bool json) {
  write_stdout(json ? format_job_json(job) : format_job_text(job));
}

void say(const std::string &line) { std::fprintf(stderr, "nvsmi-agent: %s\n", line.c_str()); }

// What a search of one place found: the report when it could be read, else why not.
struct Looked {
  std::optional<Report> report;
  std::string where;   // "serve's history at http://127.0.0.1:9437/api/v1/history"
  std::string problem; // why it could not be read; empty when it was
};

Looked ask_serve(const JobOptions &options) {
  FleetHost host = loopback_serve(options.serve);
  Looked looked;
  looked.where = "serve's history at http://" + host.label() + "/api/v1/history";
  FleetClientOptions client;
  client.hosts = {host};
  client.timeout = serve_timeout;
  client.max_answer_bytes = max_history_bytes;
  HttpAnswer answer;
  boost::asio::io_context context;
  bounded_get(context, client, nullptr, host, "/api/v1/history",
              [&](HttpAnswer done) { answer = std::move(done); });
  context.run(); // the request ends by its deadline
  if (!answer.failure.empty()) {
    looked.problem = "no serve answered (" + answer.failure + ")";
    return looked;
  }
  if (answer.status != 200) {
    looked.problem = "the serve answered HTTP " + std::to_string(answer.status) +
                     (answer.status == 401   ? " (it asks for credentials)"
                      : answer.status == 503 ? " (it has no fresh sample)"
                                             : "");
    return looked;
  }
  ReportOptions report_options = options.logs;
  report_options.by_job = true;
  ReportBuilder builder(report_options);
  try {
    ServeHistoryRead read =
        read_serve_history(answer.body, [&](Snapshot snapshot) { builder.add(snapshot); });
    if (read.history_seconds)
      looked.where += ", which keeps the last " + seconds_text(to_ms(*read.history_seconds)) + " s";
  } catch (const ParseError &error) {
    looked.problem =
        printable_text(std::string("answered what is not serve's history: ") + error.what());
    return looked;
  }
  try {
    looked.report = builder.finish();
  } catch (const AgentError &) { // no usable sample at all: the job is not in it
    looked.report = Report{};
  }
  return looked;
}

bool exists(const std::string &path) {
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0;
}

Looked read_default_log(const JobOptions &options) {
  std::string path = default_job_log;
  if (std::optional<std::string> named = caller_named_variable("NVSMI_JOB_LOG"))
    path = *named;
  Looked looked;
  looked.where = "the log " + printable_text(path);
  if (!exists(path)) {
    looked.problem = std::strerror(errno);
    return looked;
  }
  ReportOptions report_options = options.logs;
  report_options.by_job = true;
  report_options.files = {path};
  for (int i = 1; i <= max_rotated_logs; ++i) {
    std::string rotated = path + "." + std::to_string(i);
    if (!exists(rotated))
      break;
    report_options.files.push_back(rotated);
  }
  if (report_options.files.size() > 1)
    looked.where += " and " + std::to_string(report_options.files.size() - 1) + " rotated " +
                    (report_options.files.size() == 2 ? "file" : "files");
  try {
    looked.report = make_report(report_options);
  } catch (const AgentError &error) {
    if (error.code() != exit_bad_output) {
      looked.problem = printable_text(error.what());
      return looked;
    }
    looked.report = Report{}; // read, but no usable row
  }
  return looked;
}

} // namespace

int run_job(const JobOptions &options) {
  if (!options.logs.files.empty()) {
    ReportOptions report_options = options.logs;
    report_options.by_job = true;
    Report report = make_report(report_options);
    if (const BatchJob *job = find_job(report, options.job_id)) {
      print_job(*job, options.json);
      return exit_ok;
    }
    throw AgentError(exit_bad_output, "job " + options.job_id + ": no sample of it in " +
                                          std::to_string(report.rows_read) + " rows of " +
                                          std::to_string(report.files.size()) +
                                          " file(s) (is --job-mapping-dir given to watch?)");
  }
  // Without --log: the local serve first (the freshest), then the default log (the longest).
  std::vector<Looked> places;
  for (auto look : {ask_serve, read_default_log}) {
    places.push_back(look(options));
    const Looked &looked = places.back();
    if (!looked.report)
      continue;
    if (const BatchJob *job = find_job(*looked.report, options.job_id)) {
      say("job " + options.job_id + ": from " + looked.where);
      print_job(*job, options.json);
      return exit_ok;
    }
  }
  bool any_read = false;
  std::string said;
  for (const Looked &looked : places) {
    any_read = any_read || looked.report.has_value();
    said += (said.empty() ? "" : "; ") + looked.where + ": " +
            (looked.report ? "no sample of it" : looked.problem);
  }
  throw AgentError(any_read ? exit_bad_output : exit_io, "job " + options.job_id +
                                                             " not found: " + said +
                                                             ". Name its log with --log FILE");
}

} // namespace nvsmi
