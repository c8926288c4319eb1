// Asks other agents' `serve` for their latest sample (GET /api/v1/snapshot), every host at once,
// each with a deadline, and keeps per host what it last said: for `fleet`, `top --hosts` and
// serve's /fleet. What another agent answers is hostile input: its size is bounded, its time is
// bounded, and it is read by the one reader of our own JSON (report's read_json_log_line) under
// fleet_answer_limits.
#pragma once

#include "fleet/fleet_http.hpp"
#include "nvsmi/gpu_state.hpp"
#include "nvsmi/snapshot.hpp"
#include "report/report_json_log.hpp"

#include <boost/asio/io_context.hpp>

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace nvsmi {

// What one host's sample may hold (docs/FLEET.md, "Limits"): a node has at most 16 GPUs
// today and a GPU seldom more than a few dozen processes; a name or path fits in 4 KiB; and the
// values of such a sample, members we skip included, number a few thousand. Within these the
// parsed answer stays under about 25 MiB whatever the host sends; past one the host is
// "unreachable: answered a snapshot over fleet's limit: more than 64 GPUs", never read in part.
inline constexpr SnapshotLimits fleet_answer_limits{64, 256, 4096, 200000};

enum class HostStatus {
  waiting,     // not asked yet, or its first answer is still coming
  ok,          // answered with a sample its agent calls fresh
  stale,       // answering, but its agent has had no sample for a while (serve's 503)
  unreachable, // no answer in time, refused, an answer that is not a sample or over a limit
};
// "waiting", "ok", "stale", "unreachable".
std::string_view host_status_key(HostStatus status);

struct HostReading {
  FleetHost host;
  HostStatus status = HostStatus::waiting;
  std::string problem;               // why it is not ok, printable ("no answer in 3 s")
  std::optional<Snapshot> last_good; // its last sample answered as fresh, however long ago
  std::optional<std::chrono::system_clock::time_point> last_good_at; // when that came
};

class FleetPoller {
public:
  FleetPoller(boost::asio::io_context &context, FleetClientOptions options);
  ~FleetPoller(); // cancels what is in flight; its handlers then do nothing
  FleetPoller(const FleetPoller &) = delete;
  FleetPoller &operator=(const FleetPoller &) = delete;

  // Asks every host once, at most `max_in_flight` at a time, and calls `done` on the context's
  // thread when each has answered or passed its deadline. A poll asked for while one runs is
  // not started (`done` is not called for it): a slow host never piles requests up.
  void poll(std::function<void()> done);
  bool polling() const;

  // In the order given; each host's reading changes only on the context's thread.
  const std::vector<HostReading> &hosts() const;

  static constexpr std::size_t max_in_flight = 64;

  struct State; // shared with the requests in flight, which may outlive the poller by a handler

private:
  static void ask_next(const std::shared_ptr<State> &state);
  std::shared_ptr<State> state_;
};

// The fleet's one summary line's figures over every host: a host that is ok adds its GPUs'
// states; one stale, unreachable or waiting adds its last good sample's GPUs as without a fresh
// sample.
FleetSummary fleet_summary_of(const std::vector<HostReading> &hosts);

} // namespace nvsmi
