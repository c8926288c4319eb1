#include "report/report.hpp"

#include "core/exit_codes.hpp"

#include "nvsmi/gpu_selector.hpp"
#include "nvsmi/gpu_state.hpp"

#include <algorithm>
#include <map>
#include <memory>
#include <set>

namespace nvsmi {
namespace {

std::optional<int> pstate_number(const Text &pstate) {
  if (!pstate || pstate->size() < 2 || pstate->size() > 3 || (*pstate)[0] != 'P')
    return std::nullopt;
  int number = 0;
  for (std::size_t i = 1; i < pstate->size(); ++i) {
    char c = (*pstate)[i];
    if (c < '0' || c > '9')
      return std::nullopt;
    number = number * 10 + (c - '0');
  }
  if (number > 15)
    return std::nullopt;
  return number;
}

std::string gpu_key(const Gpu &gpu) {
  if (gpu.uuid)
    return *gpu.uuid;
  if (gpu.pci_bus_id)
    return *gpu.pci_bus_id;
  return "index " + std::to_string(gpu.index);
}

// The cores a process used: its share of one core, as the host observer writes it, over 100.
std::optional<double> cores_of(const Process &process) {
  if (!process.pid || !process.cpu_percent)
    return std::nullopt;
  return *process.cpu_percent / 100;
}

std::string describe_filters(const ReportOptions &options) {
  std::string out;
  for (std::size_t i = 0; i < options.gpus.size(); ++i)
    out +=
        (i == 0 ? (options.gpus.size() == 1 ? " for GPU " : " for GPUs ") : ", ") + options.gpus[i];
  if (options.from || options.to)
    out += " in the time asked for (--from/--to)";
  return out;
}

} // namespace

ReportBuilder::ReportBuilder(const ReportOptions &options) {
  static_assert(report_max_gpus <= UserLedger::max_gpus, "the ledger tells every GPU apart");
  report_.options = options;
  selector_matched_.assign(options.gpus.size(), false);
}

ReportBuilder::~ReportBuilder() = default;

// The cores every GPU process of the sample used, each pid once, in all and by user (the first
// 64 users): read once
// for the sample, not once for each of its GPUs. Unknown where a process has no CPU share (the
// first sample, a pid from another namespace, an older log) or a GPU no process list.
void ReportBuilder::read_sample_cpus(const LogRow &log) {
  if (sample_cpus_.gpus == log.sample_gpus && sample_cpus_.file == &log.file &&
      sample_cpus_.line == log.line)
    return;
  sample_cpus_ = {log.sample_gpus, &log.file, log.line, 0.0, {}};
  std::set<std::int64_t> counted;
  for (const Gpu &gpu : *log.sample_gpus) {
    if (!gpu.processes) {
      sample_cpus_.cores.reset();
      return;
    }
    for (const Process &process : *gpu.processes) {
      std::optional<double> cores = cores_of(process);
      if (!cores) {
        sample_cpus_.cores.reset();
        return;
      }
      if (counted.insert(*process.pid).second) {
        *sample_cpus_.cores += *cores;
        // Named for at most this many users, so that each GPU's row of a sample of thousands of
        // users costs the same: the others' cores still count in all.
        constexpr std::size_t users_named = 64;
        auto user = sample_cpus_.by_user.find(process.user);
        if (user != sample_cpus_.by_user.end())
          user->second += *cores;
        else if (sample_cpus_.by_user.size() < users_named)
          sample_cpus_.by_user.emplace(process.user, *cores);
      }
    }
  }
}

// Whose processes kept the host's CPUs busy in the row's sample (Sample::host_busy_cores and
// after): all of them, this GPU's, and the other GPUs' by user.
void ReportBuilder::attribute_host_cpus(const LogRow &log, Sample &sample) {
  if (!log.host.cpu_percent || !log.host.cpu_count || !log.sample_gpus || !log.gpu.processes)
    return;
  sample.host_busy_cores = *log.host.cpu_percent / 100 * static_cast<double>(*log.host.cpu_count);
  std::set<std::int64_t> counted;
  std::map<Text, double> own_by_user;
  double own = 0;
  for (const Process &process : *log.gpu.processes) {
    std::optional<double> cores = cores_of(process);
    if (!cores)
      return;
    if (counted.insert(*process.pid).second) {
      own += *cores;
      own_by_user[process.user] += *cores;
    }
  }
  sample.own_cpu_cores = own;
  read_sample_cpus(log);
  if (!sample_cpus_.cores)
    return;
  sample.other_gpus_cpu_cores = std::max(0.0, *sample_cpus_.cores - own);
  for (const auto &[user, cores] : sample_cpus_.by_user) {
    auto mine = own_by_user.find(user);
    double others = cores - (mine == own_by_user.end() ? 0 : mine->second);
    if (others > 1e-9)
      sample.other_gpus_cpu_by_user.emplace_back(user, others);
  }
}

void ReportBuilder::add(const LogRow &log) {
  const ReportOptions &options = report_.options;
  const Timestamp &stamp = log.timestamp;
  if ((options.from && earlier(stamp, *options.from)) ||
      (options.to && earlier(*options.to, stamp))) {
    ++report_.rows_outside_time;
    return;
  }
  bool wanted = options.gpus.empty();
  for (std::size_t i = 0; i < options.gpus.size(); ++i)
    if (selects_gpu(options.gpus[i], log.gpu))
      wanted = selector_matched_[i] = true;
  if (!wanted) {
    ++report_.rows_other_gpus;
    return;
  }
  std::string where = log.file + ":" + std::to_string(log.line);
  const Gpu &gpu = log.gpu;
  if (gpu.utilization_gpu_percent && *gpu.utilization_gpu_percent > 100) {
    report_.bad.add(BadRows::unparsable, where,
                    "utilization.gpu " + std::to_string(*gpu.utilization_gpu_percent) +
                        " is over 100 %");
    return;
  }
  if (log.host.cpu_percent && *log.host.cpu_percent > 100) {
    report_.bad.add(BadRows::unparsable, where, "host.cpu is over 100 %");
    return;
  }
  std::string key = gpu_key(gpu);
  auto found = by_key_.find(key);
  if (found == by_key_.end()) {
    if (stats_.size() >= report_max_gpus) {
      report_.bad.add(BadRows::too_many_gpus, where,
                      "more than " + std::to_string(report_max_gpus) + " GPUs; " + key +
                          " left out");
      return;
    }
    found = by_key_.emplace(key, stats_.size()).first;
    stats_.push_back(
        std::make_unique<GpuStats>(key, options.interval, ledger_, jobs_, stats_.size()));
  }
  Sample sample;
  sample.time = instant_seconds(stamp);
  sample.stamp = stamp;
  sample.utilization = gpu.utilization_gpu_percent;
  sample.memory_used = gpu.memory_used_mib;
  sample.memory_total = gpu.memory_total_mib;
  sample.temperature = gpu.temperature_c;
  sample.power = gpu.power_draw_w;
  sample.power_limit = gpu.power_limit_w;
  sample.pstate = pstate_number(gpu.pstate);
  sample.host_cpu = log.host.cpu_percent;
  attribute_host_cpus(log, sample);
  sample.host_disk_read = log.host.disk_read_bytes_per_second;
  sample.host_network_receive = log.host.network_receive_bytes_per_second;
  sample.users = gpu_users(gpu);
  sample.sm_active = gpu.sm_active_percent;
  sample.tensor_active = gpu.tensor_active_percent;
  sample.dram_active = gpu.dram_active_percent;
  sample.fp32_active = gpu.fp32_active_percent;
  sample.pcie_rx_bytes_per_second = gpu.pcie_rx_bytes_per_second;
  sample.pcie_tx_bytes_per_second = gpu.pcie_tx_bytes_per_second;
  sample.nvlink_rx_bytes_per_second = gpu.nvlink_rx_bytes_per_second;
  sample.nvlink_tx_bytes_per_second = gpu.nvlink_tx_bytes_per_second;
  sample.nvlink_bandwidth_bytes_per_second = gpu.nvlink_bandwidth_bytes_per_second;
  sample.allocation = gpu.allocation;
  sample.compute_process = held_for_compute(gpu);
  if (gpu.mig_devices)
    for (const MigDevice &device : *gpu.mig_devices) {
      if (!device.allocation || !device.index)
        continue; // no job, or no name that stays the same across samples
      std::optional<bool> compute;
      if (std::optional<std::vector<const Process *>> on = instance_processes(gpu, device))
        compute =
            std::any_of(on->begin(), on->end(), [](const Process *p) { return for_compute(*p); });
      sample.instances.push_back({*device.index, device.profile, *device.allocation,
                                  device.memory_used_mib, device.memory_total_mib, compute});
    }
  if (gpu.counters && gpu.counters->busy_seconds && gpu.counters->sampled_seconds) {
    sample.counted_busy_seconds = gpu.counters->busy_seconds;
    sample.counted_sampled_seconds = gpu.counters->sampled_seconds;
  }
  if (gpu_state(gpu) == GpuState::allocated_idle)
    sample.allocated_idle = gpu.allocation;
  if (!stats_[found->second]->add(sample, gpu)) {
    report_.bad.add(BadRows::out_of_order, where,
                    "not later than the previous row of GPU " + std::to_string(gpu.index));
    return;
  }
  latest_.resize(stats_.size());
  latest_[found->second] = gpu;
  if (!newest_ || earlier(*newest_, stamp))
    newest_ = stamp;
  ++report_.rows_used;
}

void ReportBuilder::add(const Snapshot &snapshot) {
  // Named as a log's line would be ("sample:12"), for the bad rows' examples.
  static const std::string source = "sample";
  LogTotals totals;
  take_sample(snapshot, source, ++samples_, report_.bad, totals,
              [this](const LogRow &row) { add(row); });
  report_.rows_read += totals.rows;
}

void ReportBuilder::read_files(const LogTotals &totals) {
  report_.files.insert(report_.files.end(), totals.files.begin(), totals.files.end());
  report_.rows_read += totals.rows;
}

Report ReportBuilder::finish(std::optional<JobSummary> job) {
  Report report = report_;
  report.job = std::move(job);
  if (report.rows_used == 0) {
    if (report.job) {
      report.job->notes.push_back("no sample of the job's GPUs was taken while it ran");
      return report;
    }
    std::string message = "no usable rows" + describe_filters(report.options) + " in " +
                          std::to_string(report.rows_read) + " rows of " +
                          std::to_string(report.files.size()) + " file(s)";
    if (!report.bad.examples.empty())
      message += "; first problem: " + report.bad.examples.front();
    throw AgentError(exit_bad_output, message);
  }
  // One GPU asked for and not there is as wrong as none: a summary of the others alone would
  // read as if it were all.
  for (std::size_t i = 0; i < selector_matched_.size() && !report.job; ++i)
    if (!selector_matched_[i])
      throw AgentError(exit_bad_output, "no rows for GPU " + report.options.gpus[i] + " in " +
                                            std::to_string(report.rows_read) + " rows of " +
                                            std::to_string(report.files.size()) + " file(s)");
  for (const auto &gpu : stats_)
    report.gpus.push_back(gpu->finish());
  // The report's GPUs are the job's in `run`, and in `report` those its --gpu chose (all the log's
  // without): the NVLink finding weighs each against the others busy beside it.
  std::size_t busy_gpus = nvlink_busy_gpus(report.gpus);
  for (GpuSummary &gpu_summary : report.gpus) {
    Finding finding = report_finding(gpu_summary, busy_gpus);
    gpu_summary.finding = finding.text;
    gpu_summary.finding_severity = finding.severity;
  }
  report.users = ledger_.finish();
  report.jobs = jobs_.finish();
  if (newest_) {
    Snapshot last;
    last.gpus = latest_;
    report.last_sample = LastSample{*newest_, fleet_summary(last)};
  }
  for (UserSummary &user : report.users.users) {
    Finding finding = report_user_finding(user);
    user.finding = finding.text;
    user.finding_severity = finding.severity;
  }
  return report;
}

Report make_report(const ReportOptions &options) {
  ReportBuilder builder(options);
  builder.read_files(
      read_logs(options.files, builder.bad(), [&](const LogRow &row) { builder.add(row); }));
  return builder.finish();
}

} // namespace nvsmi
