// Where long-running commands (watch, serve, top, run) get their samples: one long-lived
// nvidia-smi, or a recording replayed at the interval. Live samples also carry who uses each GPU:
// the compute processes (nvidia-smi's own loop of `--query-compute-apps` every process interval,
// for the CSV source; the XML has them), their SM and memory shares (one long-lived `pmon`), and
// what this machine's /proc says of them and of the host.
#pragma once

#include "core/local_time.hpp"
#include "host/host_observer.hpp"
#include "kernel_log/xid_log.hpp"
#include "nvidia_smi/nvidia_smi_stream.hpp"
#include "nvsmi/gpu_listing.hpp"
#include "nvsmi/health_memory.hpp"
#include "nvsmi/nvlink_status.hpp"
#include "nvsmi/usage_counters.hpp"
#include "sampling/cpu_budget.hpp"
#include "sampling/monitor_cost.hpp"
#include "sampling/nvlink_counter_reader.hpp"
#include "sampling/unhealthy_hook.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace nvsmi {

// Whether dmon asks for GPM metrics (SM, tensor, DRAM activity): they read the same hardware
// counters as DCGM's profiling, which would share them with nv-hostengine, so `automatic` leaves
// them off where it runs.
enum class Gpm { automatic, on, off };

// When pmon runs beside the process list (--pmon). It is the costliest stream by far (a
// sample a second cost 42 ms of CPU a second on an H200, docs/PERFORMANCE.md), and its shares
// are of use only while a GPU has a process: `automatic` runs it only then, every 5 s at the
// most often (pmon_interval), and stops it once no GPU has had one for two of its intervals;
// `on` runs it all along at the process interval, as the only way to list graphics processes
// with the CSV source (compute-apps lists compute ones).
enum class PmonMode { automatic, on, off };

struct SamplerOptions {
  double interval_seconds = 1;
  Source source = Source::csv;
  std::optional<std::string> nvidia_smi;
  // nvidia-smi's command as words, where given instead of nvidia_smi: `ssh ... HOST --
  // nvidia-smi` for a host of `fleet --ssh`. Every argument the streams add to it is shell-safe
  // (tests/test_ssh_fleet.cpp), since ssh hands them to the remote shell joined by spaces.
  std::vector<std::string> command;
  bool hold_stdin = false; // each stream's stdin a pipe held open (StreamSettings::hold_stdin)
  std::optional<std::string> fixture; // replayed at the interval instead of running nvidia-smi
  std::optional<double> stall_timeout_seconds; // default max(3 x interval, 10 s)
  std::vector<std::string> fields; // --fields: csv source only, after the standard query
  bool processes = true;           // compute-apps and pmon beside the GPU query
  PmonMode pmon = PmonMode::automatic;
  bool activity = true; // dmon beside the GPU query: activity and traffic
  Gpm gpm = Gpm::automatic;
  // --nvlink-counters: seconds between readings of `nvidia-smi nvlink -gt d` for GPUs whose dmon
  // gives no NVLink figures (sampling/nvlink_counter_reader.hpp); nullopt: never run (default).
  std::optional<double> nvlink_counters_seconds;
  bool host = true; // this machine's /proc: false when nvidia-smi runs elsewhere (ssh)
  std::optional<double> process_interval_seconds; // default max(interval, 1 s)
  // The kernel log followed for Xid errors (kernel_log/xid_log.hpp), attached to every sample;
  // nullopt: none (--kernel-log none, or a recording without --kernel-log).
  std::optional<std::string> kernel_log;
  // The scheduler's job mapping folder (host/job_mapping.hpp), read with every sample; nullopt:
  // not read. A folder that cannot be read is said once, where it was named.
  std::optional<std::string> job_mapping_dir;
  bool say_job_mapping_problems = true;
  // The drain hook run for each new fault of a GPU (--on-unhealthy); nullopt: none.
  std::optional<UnhealthyHookOptions> on_unhealthy;
  // --cpu-budget: percent of one core for the agent and its nvidia-smi together, judged over
  // budget_window (cpu_budget.hpp); nullopt: off. Live sampling only.
  std::optional<double> cpu_budget_percent = 1.0;
  std::chrono::milliseconds budget_window{60000};
};

// One step --cpu-budget may take, in the order it takes them (the ladder leaves out those that
// would change nothing here).
enum class BudgetStep {
  pmon_slower,
  pmon_off,
  dmon_slower,
  dmon_off,
  processes_slower,
  interval_longer
};

// The slowest the budget makes an optional stream (pmon's and dmon's longest -d) and the process
// list; the sample interval it doubles up to 8 times the one asked for, at most a minute.
constexpr std::chrono::milliseconds budget_slow_stream{10000};
constexpr std::chrono::milliseconds budget_longest_interval{60000};

// What each step says, in the log and where the steps in force are served.
std::string budget_step_text(BudgetStep step, std::chrono::milliseconds to);

// How often processes are asked for: --process-interval, else max(interval, 1 s).
std::chrono::milliseconds process_interval(const SamplerOptions &options);

// pmon's loop (-d, whole seconds 1 to 10): the process interval rounded, 5 s at the least with
// --pmon auto.
std::chrono::milliseconds pmon_interval(const SamplerOptions &options);

// How long the first live sample waits for the process list: max(interval, 2 s). No sample goes
// out with its processes unknown only because their stream has not answered yet; past this the
// first goes out without them, saying why (Snapshot::processes_unknown_reason, and a notice).
std::chrono::milliseconds first_sample_wait(const SamplerOptions &options);

class Sampler {
public:
  using SampleHandler = std::function<void(Snapshot)>;
  using FatalHandler = std::function<void(int exit_code)>;
  using LogHandler = NvidiaSmiStream::LogHandler;

  // Reads a fixture at once (throws AgentError when it cannot be used). `on_fatal` is called
  // when sampling cannot go on (nvidia-smi refuses the query).
  Sampler(boost::asio::io_context &context, const SamplerOptions &options, SampleHandler on_sample,
          FatalHandler on_fatal, LogHandler log);
  ~Sampler();

  // Throws AgentError(exit_not_found) when nvidia-smi cannot be started at all.
  void start();
  // Stops nvidia-smi (or the replay) and calls `done` once it is reaped.
  void stop(std::function<void()> done);
  // The sample interval in force: --interval, or longer where --cpu-budget lengthened it.
  std::chrono::milliseconds interval() const;
  // Zero while a recording is replayed.
  SamplingCounters counters() const;
  // The monitor's own cost now (monitor_cost.hpp): the agent and the streams it started.
  AgentCost cost();
  // The runs of nvidia-smi it started and still waits for (NvidiaSmiStream::child_pid).
  std::vector<pid_t> children() const;

private:
  void replay_next();
  StreamSettings gpu_settings() const;
  // What MonitorCost reads: each stream's runs and the run going on.
  std::vector<CostedStream> costed_streams() const;
  // --cpu-budget: the ladder from what runs, the judgement every window, and a step's effect.
  void start_budget();
  void judge_budget();
  void arm_budget_timer(); // judge_budget a window from now
  void apply_budget_step(BudgetStep step, bool take);
  // Stops pmon; once reaped, started again where it is still wanted (the settings in force).
  void restart_pmon();
  void restart_dmon();
  void restart_process_list();
  void restart_gpu_query();
  // A stream replaced by one with other settings: stopped (its child ended and reaped in the
  // background, the stream kept alive until then) while its successor starts; its child stays in
  // children() until reaped, so that `run` leaves it to its wait4.
  void retire(std::unique_ptr<NvidiaSmiStream> stream);
  std::unique_ptr<StreamDecoder> gpu_decoder();
  // The GPU query was refused: asked again without the field, or the end of sampling.
  void query_refused(const std::string &message);
  void start_secondary_streams(const StreamSettings &gpu_settings);
  void start_process_streams(const StreamSettings &secondary);
  void start_pmon_stream();
  void start_apps_stream(); // the compute-apps loop, every process_every_
  // pmon's -d and what follows from it: how long its shares stay fresh, how long it is kept.
  void set_pmon_interval(std::chrono::milliseconds every);
  // --pmon auto: starts pmon when a sample has a process and stops it once none has had one for
  // pmon_hold_.
  void keep_pmon_while_used(const Snapshot &snapshot, std::chrono::steady_clock::time_point now);
  void start_dmon_stream(const StreamSettings &secondary, bool gpm);
  // dmon refused what it was asked: again without GPM, else going on without it.
  void dmon_refused(const std::string &message);
  void deliver(Snapshot snapshot);
  // Whether the process list is still to come for the first sample: the compute-apps loop (the
  // CSV source's) has not answered, and has not been refused.
  bool processes_pending(std::chrono::steady_clock::time_point now);
  // Looks again, every few tens of milliseconds, whether the held first sample may go out.
  void wait_for_processes();
  // The held first sample goes out: `reason` says why its processes are unknown, if they are.
  void release_held(const std::string &reason);
  // What the other streams and the host add to a GPU sample, then hand_on.
  void complete(Snapshot snapshot, const std::string &processes_unknown_reason = {});
  void attach_kernel_log(Snapshot &snapshot);
  void attach_allocations(Snapshot &snapshot);
  // What every sample gets, live or replayed, before it is handed on.
  void hand_on(Snapshot snapshot);
  // Each MIG device's UUID and profile from `nvidia-smi -L`, run (bounded, once) where the
  // sample's MIG layout is new; a failure said once per layout, the UUIDs then unknown.
  void attach_listing(Snapshot &snapshot);

  SamplerOptions options_;
  boost::asio::io_context &context_;
  SampleHandler on_sample_;
  FatalHandler on_fatal_;
  LogHandler log_;
  boost::asio::steady_timer replay_;
  std::vector<Snapshot> fixture_;
  std::size_t replayed_ = 0;
  bool stopped_ = false;
  GpuQuery query_; // what the GPU stream asks for: less where the driver refused a field
  std::unique_ptr<NvidiaSmiStream> stream_;

  // The latest answers, and when they came: older than their freshness they are not attached.
  template <typename T> struct Latest {
    std::optional<T> value;
    std::chrono::steady_clock::time_point at;
  };
  // The GPU stream's settings until its first sample starts the process streams from them.
  std::optional<StreamSettings> process_settings_;
  std::shared_ptr<ComputeAppsLoop> apps_loop_; // shared with the decoder that fills it
  std::unique_ptr<NvidiaSmiStream> apps_stream_, pmon_stream_, dmon_stream_;
  bool apps_refused_ = false; // nvidia-smi refused the compute-apps query: it will not answer
  std::optional<StreamSettings> apps_settings_; // how the compute-apps loop is started (again)
  // The first live sample waits for the process list (first_sample_wait): the newest GPU sample
  // is held here until the list is in or the deadline passes; then every sample goes straight on.
  bool first_out_ = false;
  std::optional<Snapshot> held_;
  std::chrono::steady_clock::time_point held_deadline_;
  boost::asio::steady_timer held_check_;
  Latest<std::vector<PmonRow>> pmon_;
  std::chrono::milliseconds pmon_fresh_for_{0};
  std::optional<StreamSettings> pmon_settings_; // how pmon is started (again, with --pmon auto)
  bool pmon_refused_ = false;                   // nvidia-smi refused pmon: not started again
  bool pmon_stopping_ = false; // --pmon auto stopped it: its child is not reaped yet
  bool pmon_stopped_ = false;  // ... and now it is
  std::chrono::steady_clock::time_point pmon_last_used_; // the last sample with a process
  std::chrono::milliseconds pmon_hold_{0};
  // dmon's latest row of each GPU, by index, and how long one stays fresh.
  std::vector<Latest<DmonRow>> dmon_;
  std::chrono::milliseconds dmon_fresh_for_{0};
  std::optional<StreamSettings> dmon_settings_; // for a start again without GPM
  bool dmon_gpm_ = false;
  bool dmon_given_up_ = false; // refused even without GPM: not started again
  // Each GPU's NVLink capacity, read once at start (live samples with activity only).
  std::vector<NvlinkCapacity> nvlink_capacity_;
  // `nvidia-smi -L` as read for the MIG layout `listed_layout_` (mig_layout): read again when a
  // sample's layout differs, so that a MIG device gets its UUID and profile (attach_listing).
  std::string listed_layout_;
  std::vector<ListedGpu> listing_;
  std::unique_ptr<NvlinkCounterReader> nvlink_counters_; // options.nvlink_counters_seconds
  std::optional<HostObserver> host_; // live samples only: a recording is of another machine
  std::unique_ptr<XidLog> xid_log_;  // options.kernel_log from the first sample on
  std::unique_ptr<UnhealthyHook> unhealthy_hook_; // options.on_unhealthy
  HealthMemory health_memory_;    // a failing GPU stays failing while its reading is unknown
  UsageCounters usage_counters_;  // every sample's busy seconds and energy, added up
  bool job_mapping_said_ = false; // its problem is said once, not every sample
  // Each stream's runs, across restarts and the stream objects that ran them (pmon stopped and
  // started again); nvlink: the bounded runs of `nvlink -s` and `nvlink -gt d`; listing: `-L`.
  struct RunCosts {
    std::shared_ptr<RunCost> gpu_query = std::make_shared<RunCost>(),
                             processes = std::make_shared<RunCost>(),
                             pmon = std::make_shared<RunCost>(), dmon = std::make_shared<RunCost>(),
                             nvlink = std::make_shared<RunCost>(),
                             listing = std::make_shared<RunCost>();
  } costs_;
  MonitorCost monitor_cost_;
  // --cpu-budget (options.cpu_budget_percent) and what it has changed: the ladder, the intervals
  // in force, and the streams it stopped.
  std::unique_ptr<CpuBudget> budget_;
  SamplingCounters replaced_counters_; // of GPU streams replaced by one at another interval
  std::vector<std::weak_ptr<NvidiaSmiStream>> retired_; // stopping, until their child is reaped
  // The process list as the compute-apps loop last had it before the budget replaced the loop:
  // attached until the new loop has its first, so that the list does not blink to unknown.
  Latest<std::vector<ComputeApp>> previous_apps_;
  std::optional<double> judged_percent_; // the whole cost over the last window the budget judged
  std::vector<BudgetStep> ladder_;
  boost::asio::steady_timer budget_timer_;
  // The intervals in force (pmon's is its settings'): those asked for, unless the budget changed
  // them.
  std::chrono::milliseconds interval_{0}, dmon_every_{0}, process_every_{0};
  bool pmon_off_ = false, dmon_off_ = false;
  std::vector<std::string> steps_said_; // the text of each step in force, in the order taken
  // Across samples, so that every command that samples tells the two passes of a repeated hour
  // alike: a replay by its order, a live sample by when it came.
  LocalOffsets offsets_;
};

} // namespace nvsmi
