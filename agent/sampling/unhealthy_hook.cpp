#include "sampling/unhealthy_hook.hpp"

#include "core/environment.hpp"
#include "core/number_text.hpp"
#include "core/screen_text.hpp"
#include "nvidia_smi/boost_process.hpp"

#include <boost/asio/steady_timer.hpp>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <optional>
#include <sys/wait.h>

namespace nvsmi {
namespace bp = boost::process::v2;

namespace {

// Values from nvidia-smi or the kernel log reach a site's script: no control character, no line
// break, valid UTF-8, and short enough for a node's reason.
std::string variable(const std::string &name, const std::string &value) {
  constexpr std::size_t max_value_bytes = 256;
  std::string text = printable_text(value);
  if (text.size() > max_value_bytes)
    text = cut_to_columns(text, max_value_bytes);
  return name + "=" + text;
}

const std::vector<std::string> hook_variables = {
    "NVSMI_GPU_INDEX", "NVSMI_GPU_UUID", "NVSMI_GPU_PCI_BUS_ID", "NVSMI_GPU_NAME",
    "NVSMI_REASON",    "NVSMI_ACTION",   "NVSMI_FAULT",          "NVSMI_HOSTNAME"};

// The child's environment, for the launcher's execve. Boost.Process's own process_environment
// lives in its compiled library, which the agent does not link.
struct ChildEnvironment {
  explicit ChildEnvironment(const std::vector<std::string> &variables) {
    for (const std::string &variable : variables)
      pointers.push_back(variable.c_str());
    pointers.push_back(nullptr);
  }
  template <typename Launcher>
  bp::error_code on_setup(Launcher &launcher, const bp::filesystem::path &, const char *const *) {
    launcher.env = pointers.data();
    return {};
  }
  std::vector<const char *> pointers;
};

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
  explicit Run(boost::asio::io_context &context) : deadline(context) {}
  std::optional<bp::process> child;
  pid_t pid = 0;
  boost::asio::steady_timer deadline;
  std::string what; // "GPU 3 (row remap pending)"
  bool timed_out = false;
};

UnhealthyHook::UnhealthyHook(boost::asio::io_context &context, UnhealthyHookOptions options,
                             NvidiaSmiStream::LogHandler log)
    : context_(context), options_(std::move(options)), log_(std::move(log)) {}

UnhealthyHook::~UnhealthyHook() {
  // Only where the loop ended without stop(): nothing may outlive the agent's wait for it.
  for (const std::shared_ptr<Run> &run : running_) {
    ::kill(-run->pid, SIGKILL);
    run->child.reset(); // Boost.Process reaps it
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
  std::vector<std::string> environment = unhealthy_hook_environment(snapshot, position, fault);
  bp::error_code error;
  if (executable.empty())
    error = bp::error_code(ENOENT, bp::system_category());
  else
    run->child.emplace(bp::default_process_launcher()(
        context_.get_executor(), error, executable,
        std::vector<std::string>(options_.command.begin() + 1, options_.command.end()),
        bp::process_stdio{nullptr, nullptr, nullptr}, ChildEnvironment(environment),
        NewProcessGroup{}));
  if (error) {
    run->child.reset();
    // Said for each fault: a hook that cannot start is a drain that does not happen.
    log_(LogKind::problem, "--on-unhealthy for " + run->what + ": cannot run " +
                               printable_text(program) + ": " + error.message());
    return;
  }
  run->pid = run->child->id();
  running_.push_back(run);
  log_(LogKind::notice,
       "--on-unhealthy: running for " + run->what + " (pid " + std::to_string(run->pid) + ")");
  run->deadline.expires_after(options_.timeout);
  run->deadline.async_wait([run](boost::system::error_code cancelled) {
    if (cancelled || !run->child)
      return;
    run->timed_out = true;
    ::kill(-run->pid, SIGKILL);
  });
  run->child->async_wait([this, run](bp::error_code, int) { ended(run); });
}

void UnhealthyHook::ended(const std::shared_ptr<Run> &run) {
  run->deadline.cancel();
  int status = run->child->native_exit_code();
  // Whatever it started in the background must not outlive its deadline either.
  ::kill(-run->pid, SIGKILL);
  if (run->timed_out)
    log_(LogKind::problem, "--on-unhealthy for " + run->what + ": killed after " +
                               seconds_text(options_.timeout) +
                               " s (its deadline, --on-unhealthy-timeout)");
  else if (WIFSIGNALED(status))
    log_(LogKind::problem, "--on-unhealthy for " + run->what + ": killed by signal " +
                               std::to_string(WTERMSIG(status)));
  else if (WEXITSTATUS(status) != 0)
    log_(LogKind::problem, "--on-unhealthy for " + run->what + ": exited with code " +
                               std::to_string(WEXITSTATUS(status)));
  else
    log_(LogKind::notice, "--on-unhealthy for " + run->what + ": done");
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
    pids.push_back(run->pid);
  return pids;
}

} // namespace nvsmi
