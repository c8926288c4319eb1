#include "sampling/sampler.hpp"

#include "core/exit_codes.hpp"
#include "core/number_text.hpp"
#include "files/file_io.hpp"
#include "host/job_mapping.hpp"
#include "host/running_program.hpp"
#include "nvidia_smi/bounded_command.hpp"
#include "nvidia_smi/said_line.hpp"
#include "nvidia_smi/source.hpp"

#include "nvsmi/gpu_listing.hpp"
#include "nvsmi/nvidia_smi_output.hpp"
#include "nvsmi/quantity.hpp"

#include <boost/asio/post.hpp>

#include <algorithm>
#include <cmath>

namespace nvsmi {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

// GPU indexes dmon's rows may name: a row beyond is not kept (a garbled index must not grow the
// table without bound).
constexpr std::size_t max_dmon_gpus = 1024;

// A zero interval or timeout would spin: a millisecond at the least.
milliseconds at_least_1ms(double seconds) { return std::max(milliseconds(1), to_ms(seconds)); }

// A loop of whole seconds, 1 to 10 (pmon's and dmon's -d), near `every`.
milliseconds whole_seconds_near(milliseconds every) {
  return std::chrono::seconds(std::clamp<long>((every.count() + 500) / 1000, 1, 10));
}

// Every whole sample in a recording: one document or CSV sample, or several recorded from a loop.
std::vector<Snapshot> fixture_samples(const std::string &path,
                                      const std::vector<std::string> &extra_fields) {
  std::string origin = path == "-" ? "standard input" : path;
  try {
    return read_nvidia_smi_recording(read_capped(path, max_input_bytes).view(), extra_fields);
  } catch (const ParseError &error) {
    throw bad_output(origin, error);
  }
}

// What a one-shot nvidia-smi answers (`nvlink -s`, `-L`): its stdout, or nullopt where it could
// not be run, was killed, exited non-zero or ran past `timeout`, which `notice` says once as
// `unknown` (what stays unknown) and why.
std::optional<std::string>
run_one_shot(std::vector<std::string> argv, const std::vector<std::string> &arguments,
             milliseconds timeout, std::size_t max_bytes, const std::string &unknown,
             const std::function<void(std::string)> &notice, std::shared_ptr<RunCost> cost) {
  argv.insert(argv.end(), arguments.begin(), arguments.end());
  std::string what = "nvidia-smi";
  for (const std::string &argument : arguments)
    what += " " + argument;
  try {
    CommandLimits limits;
    limits.timeout = timeout;
    limits.max_output_bytes = max_bytes;
    limits.cost = std::move(cost);
    CommandResult result = run_bounded(argv, limits);
    if (result.term_signal != 0 || result.exit_code != 0) {
      notice(unknown + what + " " +
             (result.term_signal != 0 ? "was killed by signal " + std::to_string(result.term_signal)
                                      : "exited with code " + std::to_string(result.exit_code)) +
             ": " + first_message_line(result));
      return std::nullopt;
    }
    return std::move(result.out);
  } catch (const AgentError &error) {
    // nvidia-smi that cannot be started: the GPU stream says so as the command's failure.
    if (error.code() != exit_not_found)
      notice(unknown + what + ": " + error.what());
  }
  return std::nullopt;
}

// `nvidia-smi nvlink -s` prints a few lines per link, `-L` a line per GPU and MIG device: 1 MiB is
// far more than any machine's.
constexpr std::size_t max_one_shot_bytes = 1u << 20;
// Both answer at once where the driver is loaded; past this what they give stays unknown.
constexpr milliseconds one_shot_timeout{5000};

// Each GPU's NVLink capacity, from one bounded run of `nvidia-smi nvlink -s`; a failure, a
// refusal or output not understood is said once through `notice` and leaves it unknown, as does
// what nvidia-smi says under one GPU's line for that GPU alone.
std::vector<NvlinkCapacity> read_nvlink_capacity(std::vector<std::string> argv,
                                                 const std::function<void(std::string)> &notice,
                                                 std::shared_ptr<RunCost> cost) {
  std::string unknown = "NVLink capacity unknown: ";
  std::optional<std::string> out =
      run_one_shot(std::move(argv), {"nvlink", "-s"}, one_shot_timeout, max_one_shot_bytes, unknown,
                   notice, std::move(cost));
  if (!out)
    return {};
  try {
    // A GPU nvidia-smi gives no figures for (a GPU in MIG mode) is said; the others are read.
    std::vector<NvlinkCapacity> capacity = read_nvlink_status(*out);
    for (const std::string &line : nvlink_capacity_notices(capacity))
      notice(unknown + line);
    return capacity;
  } catch (const ParseError &error) {
    notice(unknown + error.what());
  }
  return {};
}

// The MIG devices of each GPU as the sample lays them out ("GPU-x:0/1/0,1/2/0;"): empty where no
// GPU has any. A new layout (the first, or instances made or destroyed) is when -L is read again.
std::string mig_layout(const Snapshot &snapshot) {
  std::string layout;
  auto number = [](const Reading &reading) {
    return reading ? std::to_string(*reading) : std::string("?");
  };
  for (const Gpu &gpu : snapshot.gpus) {
    if (!gpu.mig_devices || gpu.mig_devices->empty())
      continue;
    layout += gpu.uuid.value_or(std::to_string(gpu.index)) + ":";
    for (const MigDevice &device : *gpu.mig_devices)
      layout += number(device.index) + "/" + number(device.gpu_instance_id) + "/" +
                number(device.compute_instance_id) + ",";
    layout += ";";
  }
  return layout;
}

} // namespace

milliseconds first_sample_wait(const SamplerOptions &options) {
  return std::max(at_least_1ms(options.interval_seconds), milliseconds(2000));
}

milliseconds pmon_interval(const SamplerOptions &options) {
  milliseconds every = process_interval(options);
  if (options.pmon == PmonMode::automatic)
    every = std::max(every, milliseconds(5000));
  return whole_seconds_near(every);
}

std::string budget_step_text(BudgetStep step, milliseconds to) {
  std::string every = seconds_text(to) + " s";
  switch (step) {
  case BudgetStep::pmon_slower:
    return "pmon every " + every;
  case BudgetStep::pmon_off:
    return "pmon stopped";
  case BudgetStep::dmon_slower:
    return "dmon every " + every;
  case BudgetStep::dmon_off:
    return "dmon stopped (GPU activity and PCIe traffic unknown)";
  case BudgetStep::processes_slower:
    return "process list every " + every;
  case BudgetStep::interval_longer:
    return "a sample every " + every;
  }
  return {};
}

milliseconds process_interval(const SamplerOptions &options) {
  return options.process_interval_seconds
             ? at_least_1ms(*options.process_interval_seconds)
             : std::max(at_least_1ms(options.interval_seconds), milliseconds(1000));
}

Sampler::Sampler(boost::asio::io_context &context, const SamplerOptions &options,
                 SampleHandler on_sample, FatalHandler on_fatal, LogHandler log)
    : options_(options), context_(context), on_sample_(std::move(on_sample)),
      on_fatal_(std::move(on_fatal)), log_(std::move(log)), replay_(context),
      query_(options.fields), held_check_(context), budget_timer_(context),
      interval_(at_least_1ms(options.interval_seconds)), dmon_every_(whole_seconds_near(interval_)),
      process_every_(process_interval(options)) {
  if (options.fixture)
    fixture_ = fixture_samples(*options.fixture, options.fields);
  // Through the command's own handler (top keeps messages while its screen is up), as notices: a
  // hook that fails is no cause for stale GPU data, which is what that handler tells a problem by.
  if (options.on_unhealthy)
    unhealthy_hook_ = std::make_unique<UnhealthyHook>(
        context, *options.on_unhealthy,
        [this](LogKind, const std::string &message) { log_(LogKind::notice, message); });
}

Sampler::~Sampler() = default;

milliseconds Sampler::interval() const { return interval_; }

StreamSettings Sampler::gpu_settings() const {
  StreamSettings settings;
  settings.command =
      options_.command.empty() ? nvidia_smi_argv(options_.nvidia_smi) : options_.command;
  settings.hold_stdin = options_.hold_stdin;
  settings.arguments = loop_arguments(options_.source, interval(), query_);
  settings.refused = [](const std::string &message) {
    return refused_query_field(message).has_value();
  };
  settings.interval = interval();
  settings.cost = costs_.gpu_query;
  settings.stall_timeout = options_.stall_timeout_seconds
                               ? at_least_1ms(*options_.stall_timeout_seconds)
                               : std::max(settings.interval * 3, milliseconds(10000));
  return settings;
}

void Sampler::start() {
  if (!fixture_.empty()) {
    replay_next();
    return;
  }
  StreamSettings settings = gpu_settings();
  if (options_.host)
    host_.emplace();
  // Once, before the stream: link speeds do not change while the GPUs run. Beside dmon's traffic,
  // which is all it is weighed against.
  if (options_.activity) {
    nvlink_capacity_ = read_nvlink_capacity(
        settings.command, [this](const std::string &message) { log_(LogKind::notice, message); },
        costs_.nvlink);
    // Beside dmon too: its counters stand in only where dmon gives no NVLink figure.
    if (options_.nvlink_counters_seconds)
      nvlink_counters_ = std::make_unique<NvlinkCounterReader>(
          context_, settings.command, at_least_1ms(*options_.nvlink_counters_seconds),
          nvlink_capacity_, log_, costs_.nvlink);
  }
  stream_ = std::make_unique<NvidiaSmiStream>(
      context_, settings, gpu_decoder(), log_,
      [this](const std::string &message) { query_refused(message); });
  stream_->start();
  // The process and dmon streams start with the first GPU sample (deliver): they are of use only
  // beside one, and a nvidia-smi that goes between the two starts is their failure, not the
  // agent's.
  if (options_.processes || options_.activity)
    process_settings_ = settings;
}

std::unique_ptr<StreamDecoder> Sampler::gpu_decoder() {
  return snapshot_decoder(
      options_.source, query_, [this](Snapshot s) { deliver(std::move(s)); }, interval());
}

void Sampler::query_refused(const std::string &message) {
  std::optional<std::string> dropped = query_.drop_refused(message);
  if (!dropped) {
    log_(LogKind::problem, message);
    on_fatal_(exit_smi_failed);
    return;
  }
  log_(LogKind::notice, "nvidia-smi does not know the field " + *dropped +
                            " (an older driver): asking without it; that reading stays unknown");
  // Not from within the stream's own handler, which called this.
  boost::asio::post(context_, [this] {
    if (!stopped_ && stream_)
      stream_->restart_with(loop_arguments(options_.source, interval(), query_), gpu_decoder());
  });
}

namespace {

// Who uses the GPUs and what their units do are secondary to the GPUs themselves: their failures,
// a first start that fails included, are logged at the rate of bad output and retried with
// backoff, never stop sampling, and are not what serve shows as the cause of stale data.
void log_secondary(LogKind, const std::string &message) {
  log_stream_message(LogKind::bad_output, message);
}

NvidiaSmiStream::RejectHandler give_up(const std::string &what) {
  return [what](const std::string &message) {
    log_stream_message(LogKind::notice, message + "; going on without " + what);
  };
}

// What nvidia-smi says when a monitor (pmon, dmon) or one of its options is not for this GPU:
// "Not supported on the device(s)" then, alone on its line, "Failed to process command line"
// (driver 415's dmon and pmon), which running it again cannot change.
bool monitor_refused(const std::string &message) {
  return message.find("ot supported") != std::string::npos ||
         message.find("nvalid") != std::string::npos ||
         message.find("Failed to process command line") != std::string::npos;
}

// dmon's GPM metrics: SM activity (2), SM occupancy (3), any tensor pipe (5), DRAM (10), the
// FP64, FP32 and FP16 pipes (11-13), NVLink receive and transmit (60, 61); `dmon -h` of driver
// 580 (fixtures/recorded/nvidia-h200__580.159.04/dmon-help.txt).
constexpr const char *gpm_metric_ids = "2,3,5,10,11,12,13,60,61";

} // namespace

void Sampler::start_secondary_streams(const StreamSettings &gpu_settings) {
  StreamSettings secondary = gpu_settings;
  secondary.first_start_fatal = false;
  if (options_.processes)
    start_process_streams(secondary);
  if (!options_.activity)
    return;
  bool gpm = options_.gpm == Gpm::on;
  if (options_.gpm == Gpm::automatic) {
    gpm = !program_runs("nv-hostengine");
    if (!gpm)
      log_(LogKind::notice,
           "DCGM's nv-hostengine runs here: GPM metrics (SM, tensor and DRAM activity) stay off, "
           "since they read the counters DCGM's profiling uses; --gpm on reads them anyway");
  }
  start_dmon_stream(secondary, gpm);
}

void Sampler::start_dmon_stream(const StreamSettings &secondary, bool gpm) {
  StreamSettings dmon = secondary;
  milliseconds every = dmon_every_;
  dmon.label = "nvidia-smi dmon";
  dmon.arguments = {"dmon", "-s", "t"};
  if (gpm)
    dmon.arguments.insert(dmon.arguments.end(), {"--gpm-metrics", gpm_metric_ids});
  dmon.arguments.insert(dmon.arguments.end(), {"-d", std::to_string(every.count() / 1000)});
  dmon.interval = every;
  dmon.stall_timeout = std::max(4 * every, milliseconds(10000));
  dmon.refused = monitor_refused;
  dmon.cost = costs_.dmon;
  dmon.max_backoff = milliseconds(300000);
  dmon_fresh_for_ = 3 * every + milliseconds(2000);
  dmon_settings_ = secondary;
  dmon_gpm_ = gpm;
  dmon_stream_ = std::make_unique<NvidiaSmiStream>(
      context_, dmon, dmon_decoder([this](DmonRow row) {
        auto index = static_cast<std::size_t>(*row.gpu_index);
        // dmon_off_: a last row of the run the budget stopped is not shown as new.
        if (*row.gpu_index < 0 || index >= max_dmon_gpus || dmon_off_)
          return;
        if (dmon_.size() <= index)
          dmon_.resize(index + 1);
        dmon_[index] = {std::move(row), steady_clock::now()};
      }),
      log_secondary, [this](const std::string &message) { dmon_refused(message); });
  dmon_stream_->start();
}

void Sampler::dmon_refused(const std::string &message) {
  if (!dmon_gpm_) {
    give_up("GPU activity and PCIe traffic from dmon")(message);
    dmon_given_up_ = true;
    return;
  }
  log_(LogKind::notice, message + "; asking dmon again without GPM metrics: SM, tensor and "
                                  "DRAM activity stay unknown");
  // Not from within the stream's own handler, which called this. The budget may have replaced
  // or stopped dmon meanwhile: then its own start (GPM again) is what runs.
  dmon_gpm_ = false;
  boost::asio::post(context_, [this] {
    if (stopped_ || !dmon_settings_ || !dmon_stream_ || dmon_off_)
      return;
    StreamSettings settings = *dmon_settings_;
    retire(std::move(dmon_stream_));
    start_dmon_stream(settings, false);
  });
}

void Sampler::start_process_streams(const StreamSettings &secondary) {
  if (options_.source == Source::csv) { // -q -x lists the processes itself
    apps_settings_ = secondary;
    start_apps_stream();
  }

  if (options_.pmon == PmonMode::off)
    return;
  StreamSettings pmon = secondary;
  pmon.label = "nvidia-smi pmon";
  pmon.interval = pmon_interval(options_);
  pmon.refused = monitor_refused;
  pmon.cost = costs_.pmon;
  pmon.max_backoff = milliseconds(300000);
  pmon_settings_ = pmon;
  set_pmon_interval(pmon.interval);
  // --pmon auto: from the first sample with a process on (keep_pmon_while_used).
  if (options_.pmon == PmonMode::on)
    start_pmon_stream();
}

void Sampler::set_pmon_interval(milliseconds every) {
  pmon_settings_->interval = every;
  pmon_settings_->arguments = {"pmon", "-s", "um", "-d", std::to_string(every.count() / 1000)};
  // A pmon sample is known complete only when the next begins.
  pmon_settings_->stall_timeout = std::max(4 * every, milliseconds(10000));
  pmon_fresh_for_ = 3 * every + milliseconds(2000);
  pmon_hold_ = 2 * every;
}

void Sampler::start_apps_stream() {
  StreamSettings apps = *apps_settings_;
  milliseconds every = process_every_;
  apps.label = "nvidia-smi --query-compute-apps";
  apps.arguments = compute_apps_loop_arguments(every);
  apps.interval = every;
  apps.silence_is_an_answer = true;
  apps.cost = costs_.processes;
  apps_loop_ = std::make_shared<ComputeAppsLoop>(every);
  apps_stream_ = std::make_unique<NvidiaSmiStream>(
      context_, apps, ComputeAppsLoop::decoder(apps_loop_), log_secondary,
      [this, said = give_up("processes")](const std::string &message) {
        said(message);
        apps_refused_ = true; // a first sample waiting for it goes out at its next look
      });
  apps_stream_->start();
}

void Sampler::start_pmon_stream() {
  pmon_stream_ = std::make_unique<NvidiaSmiStream>(
      context_, *pmon_settings_, pmon_decoder([this](std::vector<PmonRow> rows) {
        if (!pmon_off_) // a last sample of the run the budget stopped is not shown as new
          pmon_ = {std::move(rows), steady_clock::now()};
      }),
      log_secondary, [this, said = give_up("per-process utilization")](const std::string &message) {
        said(message);
        pmon_refused_ = true; // never started again
      });
  pmon_stopped_ = false;
  pmon_stream_->start();
}

void Sampler::keep_pmon_while_used(const Snapshot &snapshot, steady_clock::time_point now) {
  // Where compute-apps was refused, pmon's rows are the only list of processes there is.
  bool used = apps_refused_ ||
              std::any_of(snapshot.gpus.begin(), snapshot.gpus.end(),
                          [](const Gpu &gpu) { return gpu.processes && !gpu.processes->empty(); });
  if (used) {
    pmon_last_used_ = now;
    // One this stopped is started again once its child is reaped (the handler below).
    if (!pmon_refused_ && !pmon_off_ && (!pmon_stream_ || pmon_stopped_))
      start_pmon_stream();
    return;
  }
  if (!pmon_stream_ || pmon_stopping_ || pmon_stopped_ || now - pmon_last_used_ < pmon_hold_)
    return;
  // No process for two of its intervals: its shares are of no one; the next process starts it.
  pmon_stopping_ = true;
  pmon_.value.reset();
  // Sampler::stop's own handler replaces this one where sampling ends first, so that `this` is
  // never called after it.
  pmon_stream_->stop([this] {
    pmon_stopping_ = false;
    pmon_stopped_ = true;
  });
}

void Sampler::deliver(Snapshot snapshot) {
  // A stream the budget replaced may still hand on its last sample while sampling stops.
  if (stopped_)
    return;
  if (process_settings_) {
    // Not from within the GPU stream's own handler, which called this.
    boost::asio::post(context_, [this, settings = std::move(*process_settings_)] {
      if (!stopped_)
        start_secondary_streams(settings);
    });
    process_settings_.reset();
  }
  if (first_out_) {
    complete(std::move(snapshot));
    return;
  }
  // The first sample is the one people act on: it waits for the process list, the newest GPU
  // reading taking the place of an older one meanwhile, so that what goes out is fresh.
  bool waiting = held_.has_value();
  held_ = std::move(snapshot);
  if (!waiting) {
    held_deadline_ = steady_clock::now() + first_sample_wait(options_);
    wait_for_processes();
  }
}

bool Sampler::processes_pending(steady_clock::time_point now) {
  // The XML lists the processes itself; pmon only adds to a list.
  if (!options_.processes || options_.source != Source::csv || apps_refused_)
    return false;
  // Its stream starts with the first GPU sample, just posted.
  return !apps_loop_ || !apps_loop_->settle(now);
}

void Sampler::wait_for_processes() {
  auto now = steady_clock::now();
  if (!processes_pending(now)) {
    release_held(apps_refused_ ? "nvidia-smi refused the compute-apps query" : "");
    return;
  }
  if (now >= held_deadline_) {
    release_held("nvidia-smi --query-compute-apps gave no process list within " +
                 seconds_text(first_sample_wait(options_)) + " s");
    return;
  }
  // settle() takes an iteration a tenth of its interval after its rows: a look this often keeps
  // the wait within a few tens of milliseconds of it.
  held_check_.expires_after(
      std::min(milliseconds(40),
               std::chrono::duration_cast<milliseconds>(held_deadline_ - now) + milliseconds(1)));
  held_check_.async_wait([this](boost::system::error_code error) {
    if (!error && !stopped_ && held_)
      wait_for_processes();
  });
}

void Sampler::release_held(const std::string &reason) {
  first_out_ = true;
  start_budget();
  held_check_.cancel();
  Snapshot snapshot = std::move(*held_);
  held_.reset();
  complete(std::move(snapshot), reason);
}

void Sampler::complete(Snapshot snapshot, const std::string &processes_unknown_reason) {
  auto now = steady_clock::now();
  if (apps_loop_) {
    std::optional<std::vector<ComputeApp>> apps = apps_loop_->settle(now);
    if (apps)
      previous_apps_.value.reset();
    else if (previous_apps_.value && now - previous_apps_.at <= budget_slow_stream)
      apps = previous_apps_.value;
    if (apps)
      attach_compute_apps(snapshot, *apps);
  }
  if (options_.pmon == PmonMode::automatic && pmon_settings_ && !pmon_stopping_)
    keep_pmon_while_used(snapshot, now);
  // pmon prints a sample's rows at once and the reader knows it whole when the next begins, one
  // interval later: the shares are that much older than their arrival.
  if (pmon_.value && now - pmon_.at <= pmon_fresh_for_)
    attach_pmon(
        snapshot, *pmon_.value,
        std::round(
            std::chrono::duration<double>(now - pmon_.at + pmon_settings_->interval).count() * 10) /
            10);
  std::vector<DmonRow> fresh;
  for (const Latest<DmonRow> &row : dmon_)
    if (row.value && now - row.at <= dmon_fresh_for_)
      fresh.push_back(*row.value);
  attach_dmon(snapshot, fresh);
  attach_nvlink_capacity(snapshot, nvlink_capacity_);
  attach_listing(snapshot);
  if (nvlink_counters_)
    nvlink_counters_->observe(snapshot);
  if (host_)
    host_->observe(snapshot);
  // Said only where a list is still unknown (pmon may have given one), once: on the first sample.
  if (!processes_unknown_reason.empty() &&
      std::any_of(snapshot.gpus.begin(), snapshot.gpus.end(),
                  [](const Gpu &gpu) { return !gpu.processes && !gpu.lost_reason; })) {
    snapshot.processes_unknown_reason = processes_unknown_reason;
    if (!apps_refused_) // a refusal was said as it came
      log_(LogKind::notice, "first sample without its process list: " + processes_unknown_reason);
  }
  hand_on(std::move(snapshot));
}

void Sampler::attach_listing(Snapshot &snapshot) {
  std::string layout = mig_layout(snapshot);
  if (layout.empty())
    return;
  if (layout != listed_layout_) {
    listed_layout_ = layout;
    listing_.clear();
    std::string unknown = "MIG devices' UUIDs and profiles unknown: ";
    auto notice = [this](const std::string &message) { log_(LogKind::notice, message); };
    if (std::optional<std::string> out =
            run_one_shot(gpu_settings().command, {"-L"}, one_shot_timeout, max_one_shot_bytes,
                         unknown, notice, costs_.listing)) {
      try {
        listing_ = read_gpu_listing(*out);
      } catch (const ParseError &error) {
        notice(unknown + error.what());
      }
    }
  }
  attach_gpu_listing(snapshot, listing_);
}

void Sampler::hand_on(Snapshot snapshot) {
  attach_kernel_log(snapshot);
  attach_allocations(snapshot);
  offsets_.attach(snapshot);
  health_memory_.carry(snapshot);
  usage_counters_.add(snapshot,
                      std::chrono::duration<double>(steady_clock::now().time_since_epoch()).count(),
                      std::chrono::duration<double>(interval()).count());
  if (unhealthy_hook_)
    unhealthy_hook_->observe(snapshot);
  on_sample_(std::move(snapshot));
}

// What the kernel logged since the previous sample: one non-blocking read, bounded per poll.
void Sampler::attach_kernel_log(Snapshot &snapshot) {
  if (!options_.kernel_log)
    return;
  // Opened with the first sample, so that a run that never gets one (nvidia-smi missing, a log
  // file locked by another run) says only why. A log that cannot be read is said once, as a
  // notice: it is no cause for stale GPU data.
  if (!xid_log_)
    xid_log_ = std::make_unique<XidLog>(
        *options_.kernel_log, [this](const std::string &line) { log_(LogKind::notice, line); });
  xid_log_->poll();
  xid_log_->attach(snapshot);
}

// Every sample: a job starts or ends between any two of them.
void Sampler::attach_allocations(Snapshot &snapshot) {
  if (!options_.job_mapping_dir)
    return;
  std::string problem = attach_job_mapping(snapshot, *options_.job_mapping_dir);
  if (problem.empty() || job_mapping_said_ || !options_.say_job_mapping_problems)
    return;
  job_mapping_said_ = true;
  log_(LogKind::notice, problem);
}

void Sampler::replay_next() {
  hand_on(fixture_[replayed_++ % fixture_.size()]);
  if (stopped_)
    return;
  replay_.expires_after(interval());
  replay_.async_wait([this](boost::system::error_code error) {
    if (!error && !stopped_)
      replay_next();
  });
}

void Sampler::stop(std::function<void()> done) {
  stopped_ = true;
  replay_.cancel();
  budget_timer_.cancel();
  held_check_.cancel(); // a first sample still waiting is dropped: sampling ends before it
  // `done` once every child is reaped.
  auto pending = std::make_shared<int>(1);
  auto one_done = [pending, done = std::move(done)] {
    if (--*pending == 0)
      done();
  };
  for (auto *stream : {&stream_, &apps_stream_, &pmon_stream_, &dmon_stream_})
    if (*stream) {
      ++*pending;
      (*stream)->stop(one_done);
    }
  if (unhealthy_hook_) {
    ++*pending;
    unhealthy_hook_->stop(one_done);
  }
  if (nvlink_counters_) {
    ++*pending;
    nvlink_counters_->stop(one_done);
  }
  one_done();
}

std::vector<pid_t> Sampler::children() const {
  std::vector<pid_t> pids;
  for (const auto *stream : {&stream_, &apps_stream_, &pmon_stream_, &dmon_stream_})
    if (*stream)
      if (std::optional<pid_t> pid = (*stream)->child_pid())
        pids.push_back(*pid);
  for (const std::weak_ptr<NvidiaSmiStream> &retired : retired_)
    if (std::shared_ptr<NvidiaSmiStream> stream = retired.lock())
      if (std::optional<pid_t> pid = stream->child_pid())
        pids.push_back(*pid);
  if (unhealthy_hook_)
    for (pid_t pid : unhealthy_hook_->children())
      pids.push_back(pid);
  return pids;
}

std::vector<CostedStream> Sampler::costed_streams() const {
  auto running = [](const std::unique_ptr<NvidiaSmiStream> &stream) {
    return stream ? stream->child_pid() : std::nullopt;
  };
  return {{"gpu_query", costs_.gpu_query.get(), running(stream_)},
          {"processes", costs_.processes.get(), running(apps_stream_)},
          {"pmon", costs_.pmon.get(), running(pmon_stream_)},
          {"dmon", costs_.dmon.get(), running(dmon_stream_)},
          {"nvlink", costs_.nvlink.get(), std::nullopt},
          {"listing", costs_.listing.get(), std::nullopt}};
}

AgentCost Sampler::cost() {
  AgentCost cost = monitor_cost_.read(costed_streams());
  // Each loop's interval in force, while it runs.
  auto seconds = [](milliseconds every) { return std::chrono::duration<double>(every).count(); };
  for (StreamCost &stream : cost.streams) {
    if (stream.stream == "gpu_query" && stream_)
      stream.interval_seconds = seconds(interval_);
    else if (stream.stream == "processes" && apps_stream_ && !apps_refused_)
      stream.interval_seconds = seconds(process_every_);
    else if (stream.stream == "pmon" && pmon_stream_ && !pmon_stopped_ && !pmon_stopping_ &&
             !pmon_refused_)
      stream.interval_seconds = seconds(pmon_settings_->interval);
    else if (stream.stream == "dmon" && dmon_stream_ && !dmon_given_up_)
      stream.interval_seconds = seconds(dmon_every_);
  }
  if (budget_) {
    cost.budget_percent = budget_->percent();
    cost.budget_steps = steps_said_;
    cost.budget_judged_percent = judged_percent_;
  } else if (options_.cpu_budget_percent && fixture_.empty()) {
    cost.budget_percent = options_.cpu_budget_percent; // judged from the first sample on
  }
  return cost;
}

SamplingCounters Sampler::counters() const {
  SamplingCounters counters = replaced_counters_;
  if (stream_)
    counters += stream_->counters();
  return counters;
}

void Sampler::retire(std::unique_ptr<NvidiaSmiStream> stream) {
  if (!stream)
    return;
  auto old = std::shared_ptr<NvidiaSmiStream>(std::move(stream));
  retired_.erase(
      std::remove_if(retired_.begin(), retired_.end(),
                     [](const std::weak_ptr<NvidiaSmiStream> &gone) { return gone.expired(); }),
      retired_.end());
  retired_.push_back(old);
  old->stop([old] {});
}

namespace {

// The monitor's whole CPU so far: the agent and every stream's runs.
double total_cpu_seconds(const AgentCost &cost) {
  double total = cost.cpu_seconds;
  for (const StreamCost &stream : cost.streams)
    total += stream.cpu_seconds;
  return total;
}

} // namespace

void Sampler::start_budget() {
  if (!options_.cpu_budget_percent || !fixture_.empty() || budget_)
    return;
  bool pmon = options_.processes && options_.pmon != PmonMode::off;
  if (pmon && pmon_interval(options_) < budget_slow_stream)
    ladder_.push_back(BudgetStep::pmon_slower);
  if (pmon)
    ladder_.push_back(BudgetStep::pmon_off);
  if (options_.activity && whole_seconds_near(interval()) < budget_slow_stream)
    ladder_.push_back(BudgetStep::dmon_slower);
  if (options_.activity)
    ladder_.push_back(BudgetStep::dmon_off);
  if (options_.processes && options_.source == Source::csv && process_every_ < budget_slow_stream)
    ladder_.push_back(BudgetStep::processes_slower);
  for (milliseconds every = interval() * 2;
       every <= budget_longest_interval && every <= interval() * 8; every *= 2)
    ladder_.push_back(BudgetStep::interval_longer);
  budget_ = std::make_unique<CpuBudget>(*options_.cpu_budget_percent, ladder_.size(),
                                        options_.budget_window);
  budget_->begin(steady_clock::now(), total_cpu_seconds(monitor_cost_.read_now(costed_streams())));
  arm_budget_timer();
}

void Sampler::arm_budget_timer() {
  budget_timer_.expires_after(budget_->window());
  budget_timer_.async_wait([this](boost::system::error_code error) {
    if (!error && !stopped_)
      judge_budget();
  });
}

void Sampler::judge_budget() {
  std::optional<CpuBudget::Judgement> judgement = budget_->observe(
      steady_clock::now(), total_cpu_seconds(monitor_cost_.read_now(costed_streams())));
  if (judgement) {
    judged_percent_ = judgement->share_percent;
    std::string figures = "monitor cost " + fixed_text(judgement->share_percent, 2) +
                          " % of a core over the last " + fixed_text(judgement->window_seconds, 0) +
                          " s";
    std::string budget = "--cpu-budget of " + trimmed_text(budget_->percent(), 2) + " %";
    if (judgement->change > 0) {
      BudgetStep step = ladder_[budget_->steps_taken() - 1];
      apply_budget_step(step, true);
      log_(LogKind::notice, figures + ", over its " + budget + ": " + steps_said_.back());
    } else if (judgement->change < 0) {
      BudgetStep step = ladder_[budget_->steps_taken()];
      std::string undone = steps_said_.back();
      apply_budget_step(step, false);
      log_(LogKind::notice, figures + ", under its " + budget + ": no longer " + undone);
    } else if (judgement->over_at_last_step) {
      log_(LogKind::notice, figures + ", over its " + budget +
                                " with every step taken; the GPU query goes on every " +
                                seconds_text(interval()) + " s");
    }
  }
  arm_budget_timer();
}

void Sampler::apply_budget_step(BudgetStep step, bool take) {
  milliseconds to{0};
  switch (step) {
  case BudgetStep::pmon_slower:
    if (!pmon_settings_)
      break;
    set_pmon_interval(take ? budget_slow_stream : pmon_interval(options_));
    to = pmon_settings_->interval;
    restart_pmon();
    break;
  case BudgetStep::pmon_off:
    pmon_off_ = take;
    restart_pmon();
    break;
  case BudgetStep::dmon_slower:
    dmon_every_ = take ? budget_slow_stream : whole_seconds_near(interval());
    to = dmon_every_;
    restart_dmon();
    break;
  case BudgetStep::dmon_off:
    dmon_off_ = take;
    restart_dmon();
    break;
  case BudgetStep::processes_slower:
    process_every_ = take ? budget_slow_stream : process_interval(options_);
    to = process_every_;
    restart_process_list();
    break;
  case BudgetStep::interval_longer:
    interval_ = take ? interval_ * 2 : interval_ / 2;
    to = interval_;
    restart_gpu_query();
    break;
  }
  if (take)
    steps_said_.push_back(budget_step_text(step, to));
  else
    steps_said_.pop_back();
}

void Sampler::restart_pmon() {
  if (!pmon_settings_ || pmon_refused_ || pmon_stopping_)
    return;
  if (pmon_stream_ && !pmon_stopped_) {
    pmon_stopping_ = true;
    if (pmon_off_)
      pmon_.value.reset();
    // Started again with the settings in force, unless the budget stopped it; with --pmon auto,
    // by the next sample with a process (keep_pmon_while_used).
    pmon_stream_->stop([this] {
      pmon_stopping_ = false;
      pmon_stopped_ = true;
      boost::asio::post(context_, [this] {
        if (!stopped_ && pmon_stopped_ && !pmon_off_ && options_.pmon == PmonMode::on)
          start_pmon_stream();
      });
    });
    return;
  }
  if (!pmon_off_ && options_.pmon == PmonMode::on)
    start_pmon_stream();
}

void Sampler::restart_dmon() {
  if (!dmon_settings_ || dmon_given_up_)
    return;
  retire(std::move(dmon_stream_));
  if (dmon_off_) {
    dmon_.clear(); // unknown from now on, not the last rows as if new
    return;
  }
  StreamSettings settings = *dmon_settings_;
  start_dmon_stream(settings, dmon_gpm_);
}

void Sampler::restart_process_list() {
  if (!apps_settings_ || apps_refused_)
    return;
  auto now = steady_clock::now();
  if (apps_loop_)
    if (std::optional<std::vector<ComputeApp>> apps = apps_loop_->settle(now))
      previous_apps_ = {std::move(*apps), now};
  retire(std::move(apps_stream_));
  start_apps_stream();
}

void Sampler::restart_gpu_query() {
  if (!stream_)
    return;
  replaced_counters_ += stream_->counters();
  retire(std::move(stream_));
  StreamSettings settings = gpu_settings();
  settings.first_start_fatal = false; // it ran a moment ago: a failure now is retried
  stream_ = std::make_unique<NvidiaSmiStream>(
      context_, settings, gpu_decoder(), log_,
      [this](const std::string &message) { query_refused(message); });
  stream_->start();
}

} // namespace nvsmi
