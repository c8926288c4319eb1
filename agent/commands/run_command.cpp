#include "commands/run_command.hpp"

#include "core/environment.hpp"
#include "core/exit_codes.hpp"
#include "core/log_line.hpp"
#include "core/mig_text.hpp"
#include "core/number_text.hpp"
#include "core/screen_text.hpp"
#include "files/file_io.hpp"
#include "files/json_log.hpp"
#include "host/process_tree.hpp"
#include "jobs/gpu_claims.hpp"
#include "jobs/job_ledger.hpp"
#include "nvidia_smi/bounded_command.hpp"
#include "nvidia_smi/nvidia_smi_stream.hpp"
#include "nvidia_smi/stop_signals.hpp"
#include "report/report.hpp"
#include "sampling/sampling_loop.hpp"

#include "nvsmi/gpu_selector.hpp"

#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

namespace nvsmi {
namespace {

namespace asio = boost::asio;
using std::chrono::milliseconds;
using std::chrono::steady_clock;

std::string joined(const std::vector<std::string> &words, const std::string &separator) {
  std::string out;
  for (const std::string &word : words)
    out += (out.empty() ? "" : separator) + word;
  return out;
}

bool processes_known(const Snapshot &snapshot) {
  return std::all_of(snapshot.gpus.begin(), snapshot.gpus.end(),
                     [](const Gpu &gpu) { return gpu.processes.has_value(); });
}

const Gpu *named_gpu(const Snapshot &snapshot, const std::string &selector) {
  for (const Gpu &gpu : snapshot.gpus)
    if (selects_gpu(selector, gpu))
      return &gpu;
  return nullptr;
}

// Our environment with the job's GPUs named in it.
std::vector<std::string> job_environment(const std::vector<JobGpu> &gpus, bool by_uuid) {
  std::vector<std::string> names, uuids;
  for (const JobGpu &gpu : gpus) {
    // An instance is named by its UUID alone: CUDA has no index for it.
    by_uuid = by_uuid || gpu.instance_of;
    uuids.push_back(gpu.uuid);
  }
  for (const JobGpu &gpu : gpus)
    names.push_back(by_uuid ? gpu.uuid : std::to_string(gpu.index));
  std::vector<std::string> set{"CUDA_VISIBLE_DEVICES=" + joined(names, ",")};
  // nvidia-smi numbers GPUs in PCI bus order; CUDA's default order is fastest first.
  if (!by_uuid)
    set.push_back("CUDA_DEVICE_ORDER=PCI_BUS_ID");
  set.push_back("NVSMI_RUN_GPUS=" + joined(uuids, ","));
  return environment_with(set, {"CUDA_DEVICE_ORDER"});
}

enum class Phase { choosing, running, finishing, failed };

class Job {
public:
  explicit Job(const RunOptions &options)
      : options_(options), folder_(claims_folder(options.lock_dir)),
        loop_(
            options.sampling, [this](Snapshot s) { deliver(std::move(s)); }, log_stream_message,
            [this](int code) { sampler_failed(code); }),
        wait_deadline_(loop_.context()), job_poll_(loop_.context()) {
    attribute_ = options.sampling.host && !options.sampling.fixture;
  }

  int run() {
    loop_.catch_signals([this](int signal) { signalled(signal); });
    started_choosing_ = steady_clock::now();
    // Without --wait, the choice is made on the first samples, but a sample must come.
    milliseconds deadline =
        options_.wait_seconds
            ? to_ms(*options_.wait_seconds)
            : std::max(3 * loop_.sampler().interval(), milliseconds(10000)) + process_grace();
    wait_deadline_.expires_after(deadline);
    wait_deadline_.async_wait([this](boost::system::error_code error) {
      if (error || phase_ != Phase::choosing)
        return;
      if (options_.wait_seconds)
        fail(exit_not_enough_in_time, not_enough_ + " after waiting " +
                                          std::to_string(std::lround(*options_.wait_seconds)) +
                                          " s (--wait)");
      else
        fail(exit_not_enough,
             not_enough_.empty() ? "no sample from nvidia-smi to choose GPUs by" : not_enough_);
    });
    loop_.run();
    if (failure_)
      throw AgentError(failure_->first, failure_->second);
    return finish();
  }

private:
  // How long to wait for the first sample that lists the processes (compute-apps runs beside
  // the GPU query, and a GPU whose processes are unknown is never free).
  milliseconds process_grace() const {
    return 2 * process_interval(options_.sampling) + milliseconds(5000);
  }

  void signalled(int signal) {
    if (phase_ == Phase::choosing) {
      fail(exit_for_signal(signal),
           std::string("stopped by ") + strsignal(signal) + " before the job started");
      return;
    }
    if (phase_ == Phase::running && !sent_by_our_terminal(signal))
      ::kill(job_pid_, signal); // the job decides what the signal means
    if (phase_ == Phase::finishing)
      stop_after_job(); // the job has ended: its end sample is not worth a wait then
  }

  // Ctrl-C at the terminal where run is in the foreground reaches the whole foreground process
  // group, the job included: sent again, the job would see two, and a Python job takes a second
  // KeyboardInterrupt in the middle of its clean-up. (A `kill -INT` of run from elsewhere while it
  // is in a terminal's foreground is then not passed on; SIGTERM always is.)
  static bool sent_by_our_terminal(int signal) {
    return signal == SIGINT && ::isatty(STDIN_FILENO) && ::tcgetpgrp(STDIN_FILENO) == ::getpgrp();
  }

  void fail(ExitCode code, const std::string &message) {
    if (phase_ != Phase::choosing)
      return;
    phase_ = Phase::failed;
    failure_.emplace(code, message);
    wait_deadline_.cancel();
    loop_.stop_sampling([this] { loop_.end(); });
  }

  void sampler_failed(int code) {
    if (phase_ == Phase::choosing) {
      fail(static_cast<ExitCode>(code), "nvidia-smi failed before the job started");
      return;
    }
    if (phase_ != Phase::running)
      return;
    std::string note = "sampling stopped while the job ran (nvidia-smi failed); the report covers "
                       "what was sampled before";
    log_line(note + "; the job goes on");
    notes_.push_back(note);
    sampling_ = false;
    loop_.stop_sampling([] {});
  }

  void deliver(Snapshot snapshot) {
    if (phase_ == Phase::choosing) {
      choose(snapshot);
      // The sample the GPUs were chosen by is the job's first: its report covers it from its start.
      if (phase_ == Phase::running)
        record(std::move(snapshot), true);
    } else if (phase_ == Phase::running) {
      record(std::move(snapshot));
    } else if (phase_ == Phase::finishing && end_sample_due_) {
      record(std::move(snapshot), true); // the first after the job's end: it covers it to its end
      stop_after_job();
    }
  }

  void choose(const Snapshot &snapshot) {
    bool decisive = !options_.gpu_ids.empty() || processes_known(snapshot) ||
                    steady_clock::now() - started_choosing_ >= process_grace();
    if (!decisive)
      return;
    std::vector<JobGpu> gpus;
    std::string shortage;
    try { // a refused claims folder: fail as any failure before the job, sampler stopped
      shortage =
          options_.gpu_ids.empty() ? claim_free(snapshot, gpus) : claim_named(snapshot, gpus);
    } catch (const AgentError &error) {
      claims_.clear();
      fail(error.code(), error.what());
      return;
    }
    if (phase_ != Phase::choosing)
      return; // claim_named found a name that is no GPU
    if (!shortage.empty()) {
      claims_.clear();
      not_enough_ = shortage;
      if (!options_.wait_seconds)
        fail(exit_not_enough, shortage);
      return;
    }
    claimed_ = claimed_gpus_text(snapshot, gpus);
    start_job(std::move(gpus));
  }

  // "GPU 4 (NVIDIA H100 80GB HBM3, 00000000:1B:00.0)": what the job got, as the sample that
  // chose them names them (printable: a recording may hold anything).
  static std::string claimed_gpus_text(const Snapshot &snapshot, const std::vector<JobGpu> &gpus) {
    std::string out = gpus.size() == 1 ? "GPU " : "GPUs ";
    for (std::size_t i = 0; i < gpus.size(); ++i) {
      out += (i ? ", " : "") + std::to_string(gpus[i].index);
      if (gpus[i].mig_device) // "GPU 0 MIG 1 (2g.20gb, NVIDIA A100-SXM4-80GB, ...)"
        out += " MIG " + std::to_string(*gpus[i].mig_device);
      const Gpu *gpu = named_gpu(snapshot, gpus[i].gpu_uuid());
      std::vector<std::string> about;
      if (gpus[i].profile)
        about.push_back(mig_profile_text(*gpus[i].profile));
      if (gpu && gpu->name)
        about.push_back(printable_text(*gpu->name));
      if (gpu && gpu->pci_bus_id)
        about.push_back(printable_text(*gpu->pci_bus_id));
      if (!about.empty())
        out += " (" + joined(about, ", ") + ")";
    }
    return out;
  }

  std::string claim_free(const Snapshot &snapshot, std::vector<JobGpu> &gpus) {
    GpuAvailability availability = available_gpus(snapshot, options_.criteria, folder_);
    // Another run may take one of them between the look and the claim: the claim decides.
    claims_ = take_claims(folder_, availability.available, options_.gpu_count);
    if (claims_.size() < options_.gpu_count) {
      availability.available.resize(claims_.size());
      return availability.shortage(options_.gpu_count);
    }
    for (const GpuClaim &claim : claims_)
      for (const GpuChoice &choice : availability.available)
        if (choice.uuid == claim.uuid())
          gpus.push_back(
              {choice.index, choice.uuid, choice.gpu_uuid, choice.mig_device, choice.profile});
    return "";
  }

  std::string claim_named(const Snapshot &snapshot, std::vector<JobGpu> &gpus) {
    for (const std::string &name : options_.gpu_ids) {
      const Gpu *gpu = named_gpu(snapshot, name);
      if (!gpu) {
        fail(exit_usage, options_.gpu_option + ": nvidia-smi lists no GPU " + name);
        return "";
      }
      if (!gpu->uuid || !plain_uuid(*gpu->uuid)) {
        fail(exit_usage, options_.gpu_option + ": GPU " + name + " has no UUID to claim it by");
        return "";
      }
      if (std::any_of(gpus.begin(), gpus.end(),
                      [&](const JobGpu &taken) { return taken.uuid == *gpu->uuid; }))
        continue;
      // Its instances are what jobs get, each claimed by its own UUID (pick --mig): a claim on
      // the whole GPU would not keep another job off them.
      if (gpu->mig_enabled.value_or(false)) {
        fail(exit_usage, options_.gpu_option + ": GPU " + name +
                             " has MIG on: its instances are handed out one by one (pick --mig)");
        return "";
      }
      std::optional<GpuClaim> claim = GpuClaim::try_take(folder_, *gpu->uuid);
      if (!claim) {
        ClaimState state = claim_state(folder_, *gpu->uuid);
        if (state.kind == ClaimState::blocked)
          return "GPU " + std::to_string(gpu->index) + " claim " + state.why;
        return "GPU " + std::to_string(gpu->index) +
               (state.kind == ClaimState::unusable ? " cannot be claimed" : " is claimed") +
               (state.holder ? " by process " + std::to_string(*state.holder) : std::string()) +
               " (" + folder_ + ")";
      }
      claims_.push_back(std::move(*claim));
      gpus.push_back({gpu->index, *gpu->uuid, std::nullopt, std::nullopt, std::nullopt});
    }
    return "";
  }

  void start_job(std::vector<JobGpu> gpus) {
    wait_deadline_.cancel();
    if (options_.log_file) {
      try {
        json_log_.emplace(*options_.log_file, RotationSettings{});
      } catch (const AgentError &error) {
        claims_.clear();
        fail(error.code(), error.what());
        return;
      }
    }
    // A worker that leaves the job's parent chain (a double fork, a daemon) comes to us rather
    // than to init: it stays among our descendants, so it is still told the job's, and what is
    // left running at the end can be named.
    if (::prctl(PR_SET_CHILD_SUBREAPER, 1) != 0)
      notes_.push_back(std::string("workers that leave the job's process tree are not followed: ") +
                       std::strerror(errno));
    std::vector<std::string> environment = job_environment(gpus, options_.uuid);
    std::vector<char *> argv, envp;
    for (const std::string &word : options_.command)
      argv.push_back(const_cast<char *>(word.c_str()));
    argv.push_back(nullptr);
    for (const std::string &variable : environment)
      envp.push_back(const_cast<char *>(variable.c_str()));
    envp.push_back(nullptr);

    // The job starts as if from a shell: no signal blocked, and SIGPIPE and SIGXFSZ (which this
    // process ignores, and an ignored signal stays ignored through exec) back to their default.
    // One line before the job's own output: which GPUs it got, and how it is told.
    for (const std::string &variable : environment)
      if (variable.rfind("CUDA_VISIBLE_DEVICES=", 0) == 0)
        std::fprintf(stderr, "nvsmi-agent run: %s claimed for this job; %s\n", claimed_.c_str(),
                     printable_text(variable).c_str());
    std::fflush(stderr);
    posix_spawnattr_t attributes;
    posix_spawnattr_init(&attributes);
    sigset_t none, defaults;
    sigemptyset(&none);
    sigemptyset(&defaults);
    sigaddset(&defaults, SIGPIPE);
    sigaddset(&defaults, SIGXFSZ);
    posix_spawnattr_setsigmask(&attributes, &none);
    posix_spawnattr_setsigdefault(&attributes, &defaults);
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    pid_t pid = 0;
    // The job's time starts before it can: read after the spawn, a busy machine's moments between
    // the child's exec and our clock would be left out of it.
    job_started_ = steady_clock::now();
    int error = ::posix_spawnp(&pid, argv[0], nullptr, &attributes, argv.data(), envp.data());
    posix_spawnattr_destroy(&attributes);
    if (error != 0) {
      json_log_.reset();
      claims_.clear();
      fail(static_cast<ExitCode>(error == ENOENT ? 127 : 126),
           options_.command[0] + ": " +
               (error == ENOENT ? "command not found" : std::strerror(error)));
      return;
    }
    job_pid_ = pid;
    // Read while it cannot be reaped: before our wait, even a job that ended at once is a zombie.
    job_start_ticks_ = process_start_ticks(job_pid_);
    phase_ = Phase::running;
    // The report is made of the samples as they come, in memory: only the job's GPUs.
    ReportOptions report_options;
    report_options.details = options_.details;
    for (const JobGpu &gpu : gpus) // an instance's GPU: the report is per GPU
      if (std::find(report_options.gpus.begin(), report_options.gpus.end(), gpu.gpu_uuid()) ==
          report_options.gpus.end())
        report_options.gpus.push_back(gpu.gpu_uuid());
    report_.emplace(report_options);
    ledger_.emplace(std::move(gpus));
    if (attribute_) {
      own_cgroup_ = process_cgroup(::getpid());
      job_cgroup_ = process_cgroup(job_pid_);
    }
    watch_job();
  }

  // The job's end: a pidfd that becomes readable when it exits, else a look every 100 ms.
  void watch_job() {
    int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, job_pid_, 0));
    if (pidfd >= 0) {
      job_end_.emplace(loop_.context(), pidfd);
      job_end_->async_wait(asio::posix::stream_descriptor::wait_read,
                           [this](boost::system::error_code) { reap_job(); });
      return;
    }
    poll_job();
  }

  void poll_job() {
    job_poll_.expires_after(milliseconds(100));
    job_poll_.async_wait([this](boost::system::error_code error) {
      if (!error && !reap_job(WNOHANG))
        poll_job();
    });
  }

  bool reap_job(int flags = 0) {
    int status = 0;
    struct rusage usage {};
    pid_t reaped;
    do
      reaped = ::wait4(job_pid_, &status, flags, &usage);
    while (reaped < 0 && errno == EINTR);
    if (reaped == 0)
      return false;
    job_seconds_ = std::chrono::duration<double>(steady_clock::now() - job_started_).count();
    if (reaped > 0) {
      if (WIFSIGNALED(status)) {
        job_signal_ = WTERMSIG(status);
        exit_code_ = exit_for_signal(*job_signal_);
      } else {
        exit_code_ = WEXITSTATUS(status);
      }
      cpu_seconds_ = static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
                     static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
    } else {
      exit_code_ = exit_internal;
      notes_.push_back(std::string("the job's end could not be read: ") + std::strerror(errno));
    }
    phase_ = Phase::finishing;
    job_end_.reset();
    // One sample more, taken after the end, so that the report covers the job to its end: the
    // next of the stream's own loop, waited for an interval (at most 10 s) and a second.
    if (!sampling_) {
      stop_after_job();
      return true;
    }
    end_sample_due_ = true;
    wait_deadline_.expires_after(std::min(loop_.sampler().interval(), milliseconds(10000)) +
                                 milliseconds(1000));
    wait_deadline_.async_wait([this](boost::system::error_code error) {
      if (!error)
        stop_after_job();
    });
    return true;
  }

  // Once: sampling ends after the job (and after its end sample, where one is waited for).
  void stop_after_job() {
    if (stopped_after_job_)
      return;
    stopped_after_job_ = true;
    end_sample_due_ = false;
    wait_deadline_.cancel();
    loop_.stop_sampling([this] { loop_.end(); });
  }

  Owner owner_of(const Process &process) {
    if (!attribute_)
      return Owner::stranger; // said in a note: the samples are not of this machine
    if (!process.pid)
      return Owner::unknown;
    pid_t pid = static_cast<pid_t>(*process.pid);
    std::optional<std::uint64_t> started = process_start_ticks(pid);
    // nvidia-smi lists a process a moment after it ended, and the job may have reaped it between
    // the sample and now: gone, it is still the job's process it was, not a stranger's. A pid
    // that lives again with another start time is another process.
    auto known = job_processes_.find(pid);
    if (known != job_processes_.end() && (!started || *started == known->second))
      return Owner::job;
    // Ours are the job's: the job, what it started, and what left its chain for us (the
    // subreaper); nvidia-smi, our only other child, is never a GPU process.
    // Its cgroup tells only when the job has one of its own: in ours, everyone beside us is too.
    if (descends_from(pid, ::getpid()) ||
        (job_cgroup_ && job_cgroup_ != own_cgroup_ && process_cgroup(pid) == job_cgroup_)) {
      if (started && job_processes_.size() < max_job_processes)
        job_processes_[pid] = *started;
      return Owner::job;
    }
    // What ran before the job is not the job's; what started since, outside its tree (a container
    // that a daemon started for `docker run`), may be.
    if (started && job_start_ticks_ && *started < *job_start_ticks_)
      return Owner::stranger;
    return Owner::unknown;
  }

  // Zombies among what we adopted (see PR_SET_CHILD_SUBREAPER above), so that none stays one
  // while the job runs: every child of ours that has ended, whatever session or process group it
  // made for itself, but those another wait is for: the job (reap_job) and the runs of nvidia-smi
  // that the sampler's streams wait for, and the bounded runs (`nvlink -gt d` on a thread of its
  // own) that run_bounded waits for, the sweep made while none can start. A zombie's pid is not
  // reused until it is reaped, so one the sampler names is its own. Returns the job's processes
  // still running.
  std::vector<Descendant> reap_adopted() {
    std::vector<pid_t> waited_for = loop_.sampler().children();
    // nvidia-smi's runs lead process groups of their own: what they started is never the job's,
    // though it may outlive them a moment, adopted here as we are the subreaper (a stand-in's
    // `sleep` still exiting after its group was killed).
    for (pid_t child : waited_for)
      if (sampler_groups_.size() < max_sampler_groups)
        sampler_groups_.insert(child);
    waited_for.push_back(job_pid_);
    std::vector<Descendant> running;
    pid_t self = ::getpid();
    with_bounded_children([&](const std::vector<pid_t> &bounded) {
      for (const Descendant &process : process_descendants(self)) {
        if (process.state != 'Z') {
          if (!sampler_groups_.count(process.group))
            running.push_back(process);
          continue;
        }
        auto listed = [&](const std::vector<pid_t> &pids) {
          return std::find(pids.begin(), pids.end(), process.pid) != pids.end();
        };
        if (process.parent == self && !listed(waited_for) && !listed(bounded))
          ::waitpid(process.pid, nullptr, WNOHANG);
      }
    });
    return running;
  }

  // `boundary`: the sample the GPUs were chosen by, or the first after the job's end. They make the
  // report's time the job's, but the job cannot be on the one and may be gone from the other: only
  // the samples taken while it ran tell what it did (the ledger).
  void record(Snapshot snapshot, bool boundary = false) {
    if (!boundary) {
      if (attribute_)
        if (std::optional<std::string> cgroup = process_cgroup(job_pid_))
          job_cgroup_ = cgroup; // the job may have moved itself
      ledger_->add(snapshot, [this](const Process &process) { return owner_of(process); });
    }
    reap_adopted();
    report_->add(snapshot);
    if (!json_log_)
      return;
    try {
      json_log_->append(snapshot);
    } catch (const AgentError &error) {
      log_line(error.what());
      notes_.push_back(std::string("the samples stopped being logged: ") + error.what());
      json_log_.reset();
    }
  }

  int finish() {
    json_log_.reset();
    JobSummary job;
    job.command = options_.command;
    job.exit_code = exit_code_;
    job.signal = job_signal_;
    job.seconds = job_seconds_;
    job.cpu_seconds = cpu_seconds_;
    job.gpus = ledger_->gpus();
    job.gpu_process_cpu_mean = ledger_->mean_cpu_percent();
    job.gpu_process_cpu_peak = ledger_->peak_cpu_percent();
    job.notes = notes_;
    if (!attribute_)
      job.notes.push_back("processes are not told apart: the samples are not of this machine");
    std::vector<Descendant> left = reap_adopted();
    // A job that leaves thousands running gets a line, not thousands of names.
    constexpr std::size_t named = 20;
    for (std::size_t i = 0; i < left.size() && i < named; ++i)
      job.left_running.push_back("pid " + std::to_string(left[i].pid) + " (" + left[i].name + ")");
    if (left.size() > named)
      job.left_running.push_back("and " + std::to_string(left.size() - named) + " more");
    if (!job.left_running.empty()) // not waited for: they may be meant to outlive the job
      log_line("left running by the job: " + printable_text(joined(job.left_running, ", ")));
    write_report(report_->finish(std::move(job)));
    claims_.clear(); // only now: the job and its report are done with the GPUs
    return exit_code_;
  }

  // To --report, else to standard error. A --report that cannot be written (its folder taken
  // away while the job ran) sends the report to standard error instead: the samples are only in
  // memory, so this is the last chance to see them.
  void write_report(const Report &report) {
    std::string text = options_.format == "json"   ? format_report_json(report)
                       : options_.format == "html" ? format_report_html(report)
                                                   : format_report_text(report);
    if (options_.report_file) {
      try {
        replace_file_atomically(*options_.report_file, text);
        return;
      } catch (const AgentError &error) {
        log_line(std::string("no end-of-run report in ") + *options_.report_file + ": " +
                 error.what() + "; it follows on standard error");
      }
    }
    if (std::fwrite(text.data(), 1, text.size(), stderr) != text.size() || std::fflush(stderr))
      log_line(std::string("no end-of-run report: cannot write to standard error: ") +
               std::strerror(errno));
  }

  RunOptions options_;
  std::string folder_;
  SamplingLoop loop_;
  asio::steady_timer wait_deadline_, job_poll_;
  bool attribute_ = true;
  Phase phase_ = Phase::choosing;
  bool sampling_ = true; // false once nvidia-smi failed while the job ran
  bool end_sample_due_ = false, stopped_after_job_ = false;
  // The process groups of nvidia-smi's runs seen (each its leader's pid); a sampler restarting a
  // stream for days adds one a restart, so it is bounded.
  static constexpr std::size_t max_sampler_groups = 4096;
  std::set<pid_t> sampler_groups_;
  steady_clock::time_point started_choosing_, job_started_;
  std::string not_enough_;
  std::string claimed_; // the GPUs the job got, named for the line said as it starts
  std::optional<std::pair<ExitCode, std::string>> failure_;
  std::vector<GpuClaim> claims_;
  pid_t job_pid_ = 0;
  std::optional<asio::posix::stream_descriptor> job_end_;
  std::optional<std::uint64_t> job_start_ticks_;
  // The job's GPU processes seen so far, by pid, with their start times; bounded as a job that
  // starts GPU processes for days would add one each.
  static constexpr std::size_t max_job_processes = 4096;
  std::map<pid_t, std::uint64_t> job_processes_;
  std::optional<std::string> own_cgroup_, job_cgroup_;
  std::optional<JobLedger> ledger_;
  std::optional<ReportBuilder> report_;
  std::optional<JsonLog> json_log_;
  std::vector<std::string> notes_;
  int exit_code_ = exit_ok;
  std::optional<int> job_signal_;
  double job_seconds_ = 0;
  std::optional<double> cpu_seconds_;
};

} // namespace

int run_job(const RunOptions &options) {
  ignore_write_signals();
  Job job(options);
  int code = job.run();
  finish_log();
  return code;
}

} // namespace nvsmi
