#include "sampling/unhealthy_hook.hpp"

#include "core/environment.hpp"
#include "core/number_text.hpp"
#include "core/screen_text.hpp"
#include "nvidia_smi/boost_process.hpp"
#include "sampling/hook_keeper.hpp"

#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>

#include <algorithm>
#include <array>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <optional>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace nvsmi {
namespace bp = boost::process::v2;

namespace {

// Values from nvidia-smi or the kernel log reach a site's script: no control character, no line
// break, valid UTF-8, and at most 256 bytes (a driver may name a GPU in many 4-byte characters).
std::string variable(const std::string &name, const std::string &value) {
  constexpr std::size_t max_value_bytes = 256;
  return name + "=" + cut_to_bytes(printable_text(value), max_value_bytes);
}

const std::vector<std::string> hook_variables = {
    "NVSMI_GPU_INDEX", "NVSMI_GPU_UUID", "NVSMI_GPU_PCI_BUS_ID", "NVSMI_GPU_NAME",
    "NVSMI_REASON",    "NVSMI_ACTION",   "NVSMI_FAULT",          "NVSMI_HOSTNAME"};

} // namespace

std::vector<std::string> unhealthy_hook_environment(const Snapshot &snapshot, std::size_t position,
                                                    const GpuFault &fault) {
  const Gpu &gpu = snapshot.gpus.at(position);
  std::string hostname;
  if (snapshot.host && snapshot.host->hostname)
    hostname = *snapshot.host->hostname;
  return environment_with({
      variable("NVSMI_GPU_INDEX", std::to_string(gpu.index)),
      variable("NVSMI_GPU_UUID", gpu.uuid.value_or("")),
      variable("NVSMI_GPU_PCI_BUS_ID", gpu.pci_bus_id.value_or("")),
      variable("NVSMI_GPU_NAME", gpu.name.value_or("")),
      variable("NVSMI_REASON", fault.reason),
      variable("NVSMI_ACTION", fault.action),
      variable("NVSMI_FAULT", fault.key),
      variable("NVSMI_HOSTNAME", hostname),
  });
}

struct UnhealthyHook::Run {
  explicit Run(boost::asio::io_context &context) : report(context), backstop(context) {}
  pid_t keeper = 0; // hook_keeper.hpp: the hook's keeper, which ends it and all it started
  boost::asio::posix::stream_descriptor report; // the keeper's report, EOF at its end
  std::array<char, 512> chunk{};
  std::string said; // what the keeper reported, at most report_limit bytes
  boost::asio::steady_timer backstop;
  std::string what; // "GPU 3 (row remap pending)"
};

namespace {

// The keeper names at most kept_named_at_most processes in a few short lines.
constexpr std::size_t report_limit = 16 * 1024;
// The keeper ends the hook at its deadline and sweeps for at most 5 s; should it hang past both
// (stopped by a signal, stuck), its group is killed this long after the deadline.
constexpr std::chrono::seconds keeper_backstop{10};

// Waits, at most `limit`, for `pid` (a keeper sent SIGTERM) to end; SIGKILL to its group past it.
void reap_keeper(pid_t pid, std::chrono::milliseconds limit) {
  auto until = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < until) {
    pid_t got = ::waitpid(pid, nullptr, WNOHANG);
    if (got == pid || (got < 0 && errno != EINTR))
      return;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ::kill(-pid, SIGKILL);
  while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
}

} // namespace

UnhealthyHook::UnhealthyHook(boost::asio::io_context &context, UnhealthyHookOptions options,
                             NvidiaSmiStream::LogHandler log)
    : context_(context), options_(std::move(options)), log_(std::move(log)) {}

UnhealthyHook::~UnhealthyHook() {
  // Only where the loop ended without stop(): nothing may outlive the agent's wait for it. The
  // keeper takes the hook and all it started with it.
  for (const std::shared_ptr<Run> &run : running_) {
    ::kill(run->keeper, SIGTERM);
    reap_keeper(run->keeper, std::chrono::milliseconds(6000));
  }
}

void UnhealthyHook::observe(const Snapshot &snapshot) {
  std::set<std::string> now, seen, readable, faults_now;
  for (std::size_t i = 0; i < snapshot.gpus.size(); ++i) {
    const Gpu &gpu = snapshot.gpus[i];
    std::string identity = gpu_identity(gpu);
    seen.insert(identity);
    if (!gpu.lost_reason)
      readable.insert(identity);
    for (const GpuFault &fault : gpu_faults(snapshot, i)) {
      std::string key = identity + '\n' + fault.key;
      faults_now.insert(key);
      if (fired_.count(key)) {
        now.insert(key);
        continue;
      }
      if (stopped_)
        continue;
      if (running_.size() >= options_.max_running) {
        if (deferred_.insert(key).second)
          log_(LogKind::notice, "--on-unhealthy: " + std::to_string(running_.size()) +
                                    " hooks still running; GPU " + std::to_string(gpu.index) +
                                    " (" + printable_text(fault.reason) +
                                    ") waits for the next sample");
        continue;
      }
      start(snapshot, i, fault);
      now.insert(key);
    }
  }
  bool xids_read = snapshot.kernel_log && snapshot.kernel_log->readable;
  for (const std::string &key : fired_) {
    if (now.count(key))
      continue;
    std::string identity = key.substr(0, key.find('\n'));
    std::string fault = key.substr(key.find('\n') + 1);
    // What this sample could not see is not cleared: a GPU missing from it, the health readings
    // of a lost GPU, the Xids of a kernel log not read this time.
    bool unseen = !seen.count(identity) || (fault != "lost" && !readable.count(identity)) ||
                  (fault.rfind("xid_", 0) == 0 && !xids_read);
    if (unseen)
      now.insert(key);
  }
  fired_ = std::move(now);
  for (auto it = deferred_.begin(); it != deferred_.end();)
    it = faults_now.count(*it) ? std::next(it) : deferred_.erase(it);
}

void UnhealthyHook::start(const Snapshot &snapshot, std::size_t position, const GpuFault &fault) {
  const Gpu &gpu = snapshot.gpus[position];
  auto run = std::make_shared<Run>(context_);
  run->what = "GPU " + std::to_string(gpu.index) + " (" + printable_text(fault.reason) + ")";
  const std::string &program = options_.command.front();
  bp::filesystem::path executable = find_program(program);
  int error = ENOENT;
  if (!executable.empty()) {
    std::vector<std::string> arguments = options_.command;
    arguments.front() = executable.string();
    KeptStart started =
        start_kept(executable.string(), arguments,
                   unhealthy_hook_environment(snapshot, position, fault), options_.timeout.count());
    error = started.error;
    if (!error) {
      run->keeper = started.keeper;
      run->report.assign(started.report);
    }
  }
  if (error) {
    // Said for each fault: a hook that cannot start is a drain that does not happen.
    log_(LogKind::problem, "--on-unhealthy for " + run->what + ": cannot run " +
                               printable_text(program) + ": " + std::strerror(error));
    return;
  }
  running_.push_back(run);
  log_(LogKind::notice,
       "--on-unhealthy: running for " + run->what + " (pid " + std::to_string(run->keeper) + ")");
  run->backstop.expires_after(options_.timeout + keeper_backstop);
  run->backstop.async_wait([run](boost::system::error_code cancelled) {
    if (!cancelled)
      ::kill(-run->keeper, SIGKILL); // its report's end follows
  });
  read_report(run);
}

void UnhealthyHook::read_report(const std::shared_ptr<Run> &run) {
  run->report.async_read_some(boost::asio::buffer(run->chunk),
                              [this, run](boost::system::error_code error, std::size_t got) {
                                if (run->said.size() + got <= report_limit)
                                  run->said.append(run->chunk.data(), got);
                                if (!error) {
                                  read_report(run);
                                  return;
                                }
                                if (error == boost::asio::error::operation_aborted)
                                  return; // the hook is being destroyed
                                ended(run);
                              });
}

void UnhealthyHook::ended(const std::shared_ptr<Run> &run) {
  run->backstop.cancel();
  run->report.close();
  // Its report ended with it: it has exited or is a moment from it.
  int keeper_status = 0;
  while (::waitpid(run->keeper, &keeper_status, 0) < 0 && errno == EINTR) {
  }
  KeptEnd end = read_kept_end(run->said);
  // What the keeper killed beside the hook, "; killed what it left running: pid 4242 (sleep)".
  std::string killed;
  if (end.killed_count > 0 || !end.killed.empty()) {
    std::vector<std::string> names = end.killed;
    std::size_t count = std::max(end.killed_count, names.size());
    if (count > names.size())
      names.push_back("and " + std::to_string(count - names.size()) + " more");
    std::string list;
    for (const std::string &name : names)
      list += (list.empty() ? "" : ", ") + name;
    killed = (end.deadline || end.stopped ? ", with what it started: "
                                          : "; killed what it left running: ") +
             printable_text(list);
  }
  if (end.left > 0)
    killed += "; " + std::to_string(end.left) + " still there after SIGKILL (stuck in the kernel)";
  if (end.no_subreaper)
    killed += "; what left its process group was not followed (" +
              std::string(std::strerror(end.no_subreaper)) + ")";
  int status = end.program_status;
  if (end.exec_error)
    log_(LogKind::problem, "--on-unhealthy for " + run->what + ": cannot run " +
                               printable_text(options_.command.front()) + ": " +
                               std::strerror(end.exec_error));
  else if (end.deadline)
    log_(LogKind::problem, "--on-unhealthy for " + run->what + ": killed after " +
                               seconds_text(options_.timeout) +
                               " s (its deadline, --on-unhealthy-timeout)" + killed);
  else if (end.stopped)
    log_(LogKind::problem,
         "--on-unhealthy for " + run->what + ": killed as the agent ended" + killed);
  else if (!end.program_ended)
    log_(LogKind::problem, "--on-unhealthy for " + run->what +
                               ": its keeper ended without a word (" +
                               (WIFSIGNALED(keeper_status)
                                    ? "killed by signal " + std::to_string(WTERMSIG(keeper_status))
                                    : "exit code " + std::to_string(WEXITSTATUS(keeper_status))) +
                               ")" + killed);
  else if (WIFSIGNALED(status))
    log_(LogKind::problem, "--on-unhealthy for " + run->what + ": killed by signal " +
                               std::to_string(WTERMSIG(status)) + killed);
  else if (WEXITSTATUS(status) != 0)
    log_(LogKind::problem, "--on-unhealthy for " + run->what + ": exited with code " +
                               std::to_string(WEXITSTATUS(status)) + killed);
  else
    log_(end.killed_count > 0 ? LogKind::problem : LogKind::notice,
         "--on-unhealthy for " + run->what + ": done" + killed);
  running_.erase(std::remove(running_.begin(), running_.end(), run), running_.end());
  if (stopped_ && running_.empty() && on_stopped_)
    std::exchange(on_stopped_, {})();
}

void UnhealthyHook::stop(std::function<void()> done) {
  stopped_ = true;
  if (running_.empty()) {
    done();
    return;
  }
  // A drain asked for at the last sample is let finish, within its deadline.
  on_stopped_ = std::move(done);
}

std::vector<pid_t> UnhealthyHook::children() const {
  std::vector<pid_t> pids;
  for (const std::shared_ptr<Run> &run : running_)
    pids.push_back(run->keeper);
  return pids;
}

} // namespace nvsmi
