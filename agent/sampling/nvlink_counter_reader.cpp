#include "sampling/nvlink_counter_reader.hpp"

#include "core/exit_codes.hpp"
#include "nvidia_smi/bounded_command.hpp"
#include "nvidia_smi/said_line.hpp"

#include "nvsmi/quantity.hpp"

#include <boost/asio/post.hpp>

#include <algorithm>
#include <system_error>

namespace nvsmi {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

// A few lines per link: 1 MiB is far more than any machine's (a DGX A100: 8 x 12 x 2 lines).
constexpr std::size_t max_output_bytes = 1u << 20;
// It answers in tens of milliseconds where the driver is loaded (docs/PERFORMANCE.md).
constexpr milliseconds deadline{5000};

// A failed reading (`why` names the command): one line, rate-limited as bad output is, since it
// can come every interval.
void say_failure(const std::string &why) {
  log_stream_message(LogKind::bad_output, "NVLink counters unknown this interval: " + why +
                                              "; trying again next interval");
}

} // namespace

struct NvlinkCounterReader::CounterReading {
  std::optional<std::vector<NvlinkGpuCounters>> counters; // nullopt: failed, `failure` says why
  std::string failure;
  steady_clock::time_point at; // the middle of the run: when the counters were read, near enough
};

NvlinkCounterReader::NvlinkCounterReader(boost::asio::io_context &context,
                                         std::vector<std::string> command, milliseconds interval,
                                         const std::vector<NvlinkCapacity> &capacity,
                                         NvidiaSmiStream::LogHandler log,
                                         std::shared_ptr<RunCost> cost)
    : context_(context), argv_(std::move(command)), interval_(interval), log_(std::move(log)),
      cost_(std::move(cost)) {
  argv_.insert(argv_.end(), {"nvlink", "-gt", "d"});
  any_active_link_ = std::any_of(capacity.begin(), capacity.end(),
                                 [](const NvlinkCapacity &gpu) { return gpu.bytes_per_second; });
  if (!any_active_link_)
    // Where nvlink -s failed, its own notice has said why the links are unknown.
    log_(LogKind::notice, "--nvlink-counters: no GPU is known to have an active NVLink link "
                          "(nvidia-smi nvlink -s), so nvidia-smi nvlink -gt d is never run");
}

NvlinkCounterReader::~NvlinkCounterReader() {
  *alive_ = false;
  if (worker_.joinable())
    worker_.join(); // within the run's deadline
}

void NvlinkCounterReader::observe(Snapshot &snapshot) {
  if (!any_active_link_)
    return;
  auto now = steady_clock::now();
  if (!first_sample_)
    first_sample_ = now;
  bool wanted = wants_nvlink_counters(snapshot);
  if (wanted)
    attach_nvlink_rates(snapshot, rates_);
  if (stopped_ || in_flight_)
    return;
  if (!wanted) {
    // dmon's GPM gives every linked GPU its NVLink figures: rates from earlier counters would be
    // stale by the time they were wanted again.
    forget();
    if (!covered_said_ && now - *first_sample_ >= interval_) {
      covered_said_ = true;
      log_(LogKind::notice, "--nvlink-counters: dmon gives NVLink figures for every GPU with an "
                            "active link; nvidia-smi nvlink -gt d is run only while it does not");
    }
    return;
  }
  // Not before one interval has passed since sampling began: by then dmon's GPM columns, `-` on
  // its first rows, have said whether it gives NVLink figures itself (Hopper and newer).
  if (now - *first_sample_ < interval_ || (last_start_ && now - *last_start_ < interval_))
    return;
  start_reading();
}

void NvlinkCounterReader::start_reading() {
  in_flight_ = true;
  last_start_ = steady_clock::now();
  if (worker_.joinable())
    worker_.join(); // the previous run's thread, already past its last step
  std::weak_ptr<bool> alive = alive_;
  try {
    worker_ = std::thread([this, alive, argv = argv_] { run_reading(alive, argv); });
  } catch (const std::system_error &error) {
    // No thread to be had (a process or memory limit): this interval is unknown, like a failed run.
    in_flight_ = false;
    say_failure(std::string("no thread for nvidia-smi nvlink -gt d: ") + error.what());
    forget();
  }
}

void NvlinkCounterReader::run_reading(const std::weak_ptr<bool> &alive,
                                      const std::vector<std::string> &argv) {
  auto reading = std::make_shared<CounterReading>();
  auto started = steady_clock::now();
  try {
    CommandLimits limits;
    limits.timeout = deadline;
    limits.max_output_bytes = max_output_bytes;
    limits.cost = cost_;
    CommandResult result = run_bounded(argv, limits);
    const std::string command = "nvidia-smi nvlink -gt d";
    if (result.term_signal != 0)
      reading->failure = command + " was killed by signal " + std::to_string(result.term_signal);
    else if (result.exit_code != 0)
      reading->failure = command + " exited with code " + std::to_string(result.exit_code) + ": " +
                         first_message_line(result);
    else
      reading->counters = read_nvlink_counters(result.out);
  } catch (const AgentError &error) {
    reading->failure = std::string("nvidia-smi nvlink -gt d: ") + error.what();
  } catch (const ParseError &error) {
    reading->failure = error.what(); // it names the command
  } catch (const std::exception &error) {
    reading->failure = std::string("nvidia-smi nvlink -gt d: ") + error.what();
  }
  reading->at = started + (steady_clock::now() - started) / 2;
  // Back on the event loop's thread, where every other member is used.
  boost::asio::post(context_, [this, alive, reading] {
    if (auto still = alive.lock(); still && *still)
      reading_done(*reading);
  });
}

void NvlinkCounterReader::reading_done(const CounterReading &reading) {
  in_flight_ = false;
  if (stopped_) {
    if (on_stopped_)
      std::exchange(on_stopped_, {})();
    return;
  }
  if (!reading.counters) {
    say_failure(reading.failure);
    forget();
    return;
  }
  double seconds = std::chrono::duration<double>(reading.at - previous_at_).count();
  // The first reading of a run gives no rate: nvlink_rates of nothing is unknown, never 0.
  rates_ = nvlink_rates(previous_, *reading.counters, seconds);
  previous_ = *reading.counters;
  previous_at_ = reading.at;
}

void NvlinkCounterReader::forget() {
  rates_.clear();
  previous_.clear();
}

void NvlinkCounterReader::stop(std::function<void()> done) {
  stopped_ = true;
  if (!in_flight_) {
    done();
    return;
  }
  on_stopped_ = std::move(done);
}

} // namespace nvsmi
