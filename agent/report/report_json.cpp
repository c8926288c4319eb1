// `report --format json`: the text report's figures for scripts, null where unknown.
#include "report/report.hpp"
#include "report/report_job.hpp"

#include "nvsmi/gpu_fields.hpp"
#include "nvsmi/timestamp.hpp"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

namespace nvsmi {
namespace {

using OrderedJson = nlohmann::ordered_json;

OrderedJson rounded(const std::optional<double> &value, int decimals = 2) {
  if (!value)
    return nullptr;
  double scale = std::pow(10.0, decimals);
  return std::round(*value * scale) / scale;
}
template <typename T> OrderedJson maybe(const std::optional<T> &value) {
  return value ? OrderedJson(*value) : OrderedJson(nullptr);
}

// Who held the GPU at `position`: null where the log has no process list for it.
OrderedJson holders_json(const Report &report, std::size_t position) {
  const std::vector<double> &listed = report.users.gpu_listed_seconds;
  if (position >= listed.size() || listed[position] <= 0)
    return nullptr;
  OrderedJson out = OrderedJson::array();
  for (const auto &[user, seconds] : gpu_holders(report.users, position))
    out.push_back({{"user", maybe(user)}, {"held_gpu_hours", rounded(seconds / 3600, 3)}});
  return out;
}

OrderedJson gpu_json(const Report &report, std::size_t position) {
  const GpuSummary &gpu = report.gpus[position];
  std::optional<double> peak_percent, headroom_percent;
  Reading headroom;
  if (gpu.memory_peak_mib && gpu.memory_total_mib && *gpu.memory_total_mib > 0) {
    double total = static_cast<double>(*gpu.memory_total_mib);
    headroom = *gpu.memory_total_mib - *gpu.memory_peak_mib;
    peak_percent = 100 * static_cast<double>(*gpu.memory_peak_mib) / total;
    headroom_percent = 100 * static_cast<double>(*headroom) / total;
  }
  OrderedJson out;
  out["index"] = gpu.index;
  out["uuid"] = maybe(gpu.uuid);
  out["name"] = maybe(gpu.name);
  out["time"] = {{"first", to_iso8601(gpu.first)},
                 {"last", to_iso8601(gpu.last)},
                 {"samples", gpu.samples},
                 {"interval_s", rounded(gpu.interval, 3)},
                 {"covered_s", rounded(gpu.covered_seconds, 3)},
                 {"gaps", gpu.gaps},
                 {"gap_s", rounded(gpu.gap_seconds, 3)},
                 {"longest_gap_s", rounded(gpu.longest_gap_seconds, 3)}};
  out["utilization_percent"] = {{"mean", rounded(gpu.utilization_mean)},
                                {"median", maybe(gpu.utilization_median)},
                                {"p95", maybe(gpu.utilization_p95)},
                                {"max", maybe(gpu.utilization_max)},
                                {"known_s", rounded(gpu.utilization_known_seconds, 3)},
                                {"counted_mean", rounded(gpu.counted_utilization_mean)},
                                {"counted_s", rounded(gpu.counted_seconds, 3)},
                                {"counted_agrees", maybe(counted_agrees(gpu))}};
  out["idle_percent"] = rounded(gpu.idle.percent());
  out["starved_percent"] = rounded(gpu.starved.percent());
  out["starved_memory_mean_mib"] = rounded(gpu.starved_memory_mean_mib, 0);
  out["idle_held_percent"] = rounded(gpu.idle_held.percent());
  out["idle_held_memory_mean_mib"] = rounded(gpu.idle_held_memory_mean_mib, 0);
  out["memory_mib"] = {{"peak_used", maybe(gpu.memory_peak_mib)},
                       {"total", maybe(gpu.memory_total_mib)},
                       {"peak_used_percent", rounded(peak_percent)},
                       {"headroom", maybe(headroom)},
                       {"headroom_percent", rounded(headroom_percent)}};
  out["power_w"] = {{"mean", rounded(gpu.power_mean_w)},
                    {"max", rounded(gpu.power_max_w)},
                    {"energy_wh", rounded(gpu.energy_wh, 3)},
                    {"known_s", rounded(gpu.power_known_seconds, 3)}};
  out["temperature_c"] = {{"mean", rounded(gpu.temperature_mean_c)},
                          {"max", maybe(gpu.temperature_max_c)}};
  OrderedJson &fields = out["health"] = OrderedJson::object();
  for (const GpuField &field : gpu_fields())
    if (field.settled_health())
      fields[std::string(field.json_key)] = field.kind == FieldKind::integer
                                                ? maybe(gpu.latest_fields.*field.health_integer)
                                                : maybe(gpu.latest_fields.*field.health_text);
  out["throttled_percent"] = rounded(gpu.throttled.percent());
  out["power_limit_percent"] = rounded(gpu.power_capped.percent());
  out["slow_pstate_percent"] = rounded(gpu.slow_pstate.percent());
  if (gpu.starved.seconds > 0 && gpu.starved_host_cpu_mean) {
    double starved = gpu.starved.seconds;
    out["starved_host_cpu"] = {
        {"mean_busy_percent", rounded(gpu.starved_host_cpu_mean)},
        {"busy_percent", rounded(100 * gpu.starved_host_busy_seconds / starved)},
        {"idle_percent", rounded(100 * gpu.starved_host_idle_seconds / starved)},
        {"known_percent", rounded(100 * gpu.starved_host_known_seconds / starved)}};
  } else {
    out["starved_host_cpu"] = nullptr;
  }
  // The host's disk reads and network receives while starved, in bytes a second (null: unknown).
  if (gpu.starved.seconds > 0)
    out["starved_host_io"] = {
        {"disk_read_bytes_per_second", rounded(gpu.starved_disk_read_mean)},
        {"network_receive_bytes_per_second", rounded(gpu.starved_network_receive_mean)}};
  else
    out["starved_host_io"] = nullptr;
  out["holders"] = holders_json(report, position);
  out["finding"] = gpu.finding;
  out["severity"] = severity_name(gpu.finding_severity);
  return out;
}

// Hours of GPU time; a difference of sums that should be 0 never prints as -0.
double gpu_hours(double seconds) { return std::max(0.0, seconds / 3600); }

OrderedJson user_json(const Report &report, const UserSummary &user) {
  OrderedJson out;
  out["user"] = maybe(user.user);
  out["gpus"] = user.gpus;
  OrderedJson held = OrderedJson::array();
  for (const auto &[slot, seconds] : user.gpu_seconds)
    held.push_back({{"index", slot < report.gpus.size() ? OrderedJson(report.gpus[slot].index)
                                                        : OrderedJson()},
                    {"held_gpu_hours", rounded(seconds / 3600, 3)}});
  out["held_gpus"] = held;
  out["held_gpu_hours"] = rounded(gpu_hours(user.held_seconds), 3);
  out["idle_gpu_hours"] =
      user.idle_known_seconds > 0 ? rounded(gpu_hours(user.idle_seconds), 3) : OrderedJson(nullptr);
  out["idle_percent"] = rounded(user.idle_percent());
  out["idle_unknown_gpu_hours"] =
      rounded(gpu_hours(user.held_seconds - user.idle_known_seconds), 3);
  out["memory_gib_hours"] = rounded(user.memory_gib_hours(), 3);
  out["memory_unknown_gpu_hours"] = rounded(gpu_hours(user.memory_unknown_seconds), 3);
  out["energy_wh"] = rounded(user.energy_wh(), 3);
  out["energy_unknown_gpu_hours"] =
      rounded(gpu_hours(user.held_seconds - user.energy_known_seconds), 3);
  out["finding"] = user.finding;
  out["severity"] = severity_name(user.finding_severity);
  return out;
}

OrderedJson tallies_json(const std::vector<StrangerTally> &tallies, long gpu_samples) {
  OrderedJson out = OrderedJson::array();
  for (const StrangerTally &tally : tallies)
    out.push_back({{"who", job_shown(tally.label)},
                   {"samples", tally.samples},
                   {"percent_of_run", job_percent_of(tally.samples, gpu_samples)}});
  return out;
}

OrderedJson job_json(const JobSummary &job) {
  OrderedJson gpus = OrderedJson::array();
  for (const JobGpuTally &gpu : job.gpus)
    gpus.push_back({{"index", gpu.gpu.index},
                    {"uuid", job_shown(gpu.gpu.uuid)},
                    {"mig_device", maybe(gpu.gpu.mig_device)},
                    {"samples", gpu.samples},
                    {"samples_with_job", gpu.samples_with_job},
                    {"memory_total_mib", maybe(gpu.memory_total_mib)},
                    {"peak_job_memory_mib", maybe(gpu.peak_job_memory_mib)},
                    {"peak_incomplete", peak_incomplete(gpu)},
                    {"batch_growth_estimate", maybe(batch_growth_estimate(gpu))},
                    {"shared_with", tallies_json(gpu.strangers, gpu.samples)},
                    {"not_attributable", tallies_json(gpu.unknown, gpu.samples)}});
  OrderedJson command = OrderedJson::array(), left_running = OrderedJson::array(),
              notes = OrderedJson::array();
  for (const std::string &word : job.command)
    command.push_back(job_shown(word));
  for (const std::string &process : job.left_running)
    left_running.push_back(job_shown(process));
  for (const std::string &note : job.notes)
    notes.push_back(job_shown(note));
  return {{"command", command},
          {"exit_code", job.exit_code},
          {"signal", maybe(job.signal)},
          {"seconds", job.seconds},
          {"cpu_seconds", maybe(job.cpu_seconds)},
          {"gpu_process_cpu_percent_mean", maybe(job.gpu_process_cpu_mean)},
          {"gpu_process_cpu_percent_peak", maybe(job.gpu_process_cpu_peak)},
          {"gpus", gpus},
          {"left_running", left_running},
          {"notes", notes}};
}

} // namespace

OrderedJson batch_job_json(const BatchJob &job) {
  OrderedJson gpus = OrderedJson::array();
  for (const BatchJobGpu &gpu : job.gpus)
    gpus.push_back({{"index", gpu.index},
                    // Where the job held one MIG instance of the GPU: its index and profile.
                    {"mig_device", maybe(gpu.mig_index)},
                    {"profile", maybe(gpu.mig_profile)},
                    {"held_gpu_hours", rounded(gpu.seconds / 3600, 3)},
                    {"peak_memory_mib", maybe(gpu.peak_memory_mib)},
                    {"memory_total_mib", maybe(gpu.memory_total_mib)}});
  auto hours = [](const TimeShare &share) -> OrderedJson {
    return share.known_seconds > 0 ? rounded(share.seconds / 3600, 3) : OrderedJson(nullptr);
  };
  // SM and tensor activity while its GPUs were not idle, as the GPUs' activity findings take it.
  ActivityFigures activity = job.activity.figures();
  return {
      {"scheduler", job.scheduler},
      {"job_id", job.job_id},
      {"user", maybe(job.user)},
      {"account", maybe(job.account)},
      {"first", job.first ? OrderedJson(to_iso8601(*job.first)) : OrderedJson(nullptr)},
      {"last", job.last ? OrderedJson(to_iso8601(*job.last)) : OrderedJson(nullptr)},
      {"wall_hours", rounded(job.wall_seconds() / 3600, 3)},
      {"gpus", gpus},
      {"held_gpu_hours", rounded(job.held_seconds / 3600, 3)},
      {"utilization_percent", rounded(job.utilization_percent())},
      {"idle_percent", rounded(job.idle.percent())},
      {"idle_gpu_hours", hours(job.idle)},
      {"unused_percent", rounded(job.unused.percent())},
      {"unused_gpu_hours", hours(job.unused)},
      {"energy_wh", rounded(job.energy_wh(), 3)},
      {"energy_partly_unknown", job.energy_known_seconds < job.held_seconds * (1 - 1e-9)},
      {"sm_active_percent", rounded(activity.sm_active_mean)},
      {"tensor_active_percent", rounded(activity.tensor_active_mean)},
      {"activity_known_gpu_hours", activity.known_seconds > 0
                                       ? OrderedJson(rounded(activity.known_seconds / 3600, 3))
                                       : OrderedJson(nullptr)},
      {"finding", {{"severity", severity_name(job.finding.severity)}, {"text", job.finding.text}}},
      {"advice", job.advice.empty() ? OrderedJson(nullptr) : OrderedJson(job.advice)},
      {"activity_finding",
       job.activity_finding
           ? OrderedJson({{"severity", severity_name(job.activity_finding->severity)},
                          {"text", job.activity_finding->text}})
           : OrderedJson(nullptr)}};
}

std::string format_job_json(const BatchJob &job) {
  OrderedJson out;
  out["schema"] = "nvsmi-agent.job/1";
  out["job"] = batch_job_json(job);
  return out.dump(-1, ' ', false, OrderedJson::error_handler_t::replace) + "\n";
}

std::string format_report_json(const Report &report) {
  OrderedJson out;
  out["schema"] = "nvsmi-agent.report/1";
  if (report.job && report.rows_used == 0) { // no sample of the job's GPUs: the job alone
    out["job"] = job_json(*report.job);
    return out.dump(-1, ' ', false, OrderedJson::error_handler_t::replace) + "\n";
  }
  out["files"] = report.files;
  OrderedJson bad = {{"total", report.bad.total()}};
  for (int k = 0; k < BadRows::kind_count; ++k)
    bad[BadRows::name(static_cast<BadRows::Kind>(k))] =
        report.bad.counts[static_cast<std::size_t>(k)];
  bad["examples"] = report.bad.examples;
  out["rows"] = {{"read", report.rows_read},
                 {"used", report.rows_used},
                 {"outside_time", report.rows_outside_time},
                 {"other_gpus", report.rows_other_gpus},
                 {"bad", bad}};
  if (report.last_sample) {
    const FleetSummary &fleet = report.last_sample->fleet;
    OrderedJson states = OrderedJson::object();
    for (std::size_t s = 0; s <= static_cast<std::size_t>(GpuState::unknown); ++s)
      states[std::string(gpu_state_key(static_cast<GpuState>(s)))] = fleet.count[s];
    out["last_sample"] = {{"time", to_iso8601(report.last_sample->time)},
                          {"gpus", fleet.gpus},
                          // Where the log has MIG instances, the states count them in place of
                          // their GPUs (fleet_summary).
                          {"mig_instances", fleet.mig_instances},
                          {"states", states},
                          {"idle_holders", fleet.idle_holders},
                          {"summary", last_sample_text(*report.last_sample)}};
  }
  out["gpus"] = OrderedJson::array();
  for (std::size_t i = 0; i < report.gpus.size(); ++i)
    out["gpus"].push_back(gpu_json(report, i));
  if (report.options.by_job) {
    out["jobs"] = OrderedJson::array();
    for (const BatchJob &job : report.jobs.jobs)
      out["jobs"].push_back(batch_job_json(job));
    out["jobs_left_out"] = report.jobs.left_out;
    out["accounts"] = OrderedJson::array();
    auto hours = [](std::optional<double> seconds) {
      return seconds ? OrderedJson(rounded(*seconds / 3600, 3)) : OrderedJson(nullptr);
    };
    for (const BatchAccount &account : roll_up_accounts(report.jobs.jobs))
      out["accounts"].push_back({{"account", maybe(account.account)},
                                 {"jobs", account.jobs},
                                 {"held_gpu_hours", hours(account.held_seconds)},
                                 {"used_gpu_hours", hours(account.used_seconds)},
                                 {"idle_gpu_hours", hours(account.idle_seconds)},
                                 {"unused_gpu_hours", hours(account.unused_seconds)}});
  }
  const UserLedgerSummary &ledger = report.users;
  out["users"] = OrderedJson::array();
  for (const UserSummary &user : ledger.users)
    out["users"].push_back(user_json(report, user));
  out["users_totals"] = {
      {"process_list_gpu_hours", rounded(gpu_hours(ledger.listed_seconds), 3)},
      {"no_process_list_gpu_hours", rounded(gpu_hours(ledger.unlisted_seconds), 3)},
      {"unsplit_energy_wh", rounded(ledger.unsplit_joules / 3600, 3)},
      {"no_process_energy_wh", rounded(ledger.no_process_joules / 3600, 3)},
      {"left_out_gpu_hours", rounded(gpu_hours(ledger.left_out_seconds), 3)}};
  if (report.job)
    out["job"] = job_json(*report.job);
  return out.dump(-1, ' ', false, OrderedJson::error_handler_t::replace) + "\n";
}

} // namespace nvsmi
