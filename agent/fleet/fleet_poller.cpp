#include "fleet/fleet_poller.hpp"

#include "core/exit_codes.hpp"
#include "core/screen_text.hpp"
#include "report/report_json_log.hpp"

#include <boost/asio/ssl.hpp>

#include <algorithm>
#include <nlohmann/json.hpp>

namespace nvsmi {

namespace asio = boost::asio;

namespace {

// How much of a reason that a host gives is kept: more than any reason serve writes, and what a
// screen line can show.
constexpr std::size_t reason_columns = 200;

// serve's 503 says why in {"error": "..."}; anything else is said by its status alone. Only that
// member is kept while the answer is parsed, so that no other part of it is ever built.
std::string answered_error(const std::string &body) {
  using Json = nlohmann::json;
  Json parsed = Json::parse(
      body,
      [](int depth, Json::parse_event_t event, Json &value) {
        if (event == Json::parse_event_t::key)
          return depth == 1 && value == "error";
        if (event == Json::parse_event_t::object_start || event == Json::parse_event_t::array_start)
          return depth == 0;
        return true;
      },
      false);
  if (parsed.is_object()) {
    auto found = parsed.find("error");
    if (found != parsed.end() && found->is_string())
      return found->get<std::string>();
  }
  return {};
}

} // namespace

std::string_view host_status_key(HostStatus status) {
  switch (status) {
  case HostStatus::ok:
    return "ok";
  case HostStatus::stale:
    return "stale";
  case HostStatus::unreachable:
    return "unreachable";
  case HostStatus::waiting:
    break;
  }
  return "waiting";
}

struct FleetPoller::State {
  asio::io_context &context;
  FleetClientOptions options;
  std::optional<asio::ssl::context> tls;
  std::vector<HostReading> readings;
  // The poll in progress: the next host to ask, how many are still out, what to call at the end.
  std::size_t next = 0;
  std::size_t out = 0;
  bool running = false;
  bool cancelled = false;
  std::function<void()> done;
  std::vector<std::function<void()>> cancels; // of the requests in flight, by host position

  State(asio::io_context &c, FleetClientOptions o) : context(c), options(std::move(o)) {}
};

namespace {

// What a host's serve answered: its latest sample (200), its agent's reason for having none
// (503), or why not.
void read_answer(
    HttpAnswer answer,
    const std::function<void(HostStatus, std::string, std::optional<Snapshot>)> &finish) {
  if (!answer.failure.empty())
    return finish(HostStatus::unreachable, std::move(answer.failure), {});
  if (answer.status == 200) {
    try {
      return finish(HostStatus::ok, {}, read_json_log_line(answer.body, fleet_answer_limits));
    } catch (const SnapshotLimitError &over) {
      return finish(HostStatus::unreachable,
                    std::string("answered a snapshot over fleet's limit: ") + over.what(), {});
    } catch (const ParseError &refused) {
      return finish(
          HostStatus::unreachable,
          printable_text(std::string("answered what is not a snapshot: ") + refused.what()), {});
    }
  }
  if (answer.status == 503) {
    std::string why = cut_to_columns(printable_text(answered_error(answer.body)), reason_columns);
    return finish(HostStatus::stale, why.empty() ? "its agent has no fresh sample" : why, {});
  }
  if (answer.status == 401)
    return finish(HostStatus::unreachable,
                  "asks for credentials (401): --fleet-user and --fleet-password-file", {});
  finish(HostStatus::unreachable, "answered HTTP " + std::to_string(answer.status), {});
}

} // namespace

void FleetPoller::ask_next(const std::shared_ptr<State> &state) {
  while (!state->cancelled && state->next < state->readings.size() && state->out < max_in_flight) {
    std::size_t at = state->next++;
    ++state->out;
    const FleetHost &host = state->readings[at].host;
    state->cancels[at] =
        bounded_get(state->context, state->options, host.tls ? &*state->tls : nullptr, host,
                    "/api/v1/snapshot", [state, at](HttpAnswer answer) {
                      read_answer(std::move(answer), [&](HostStatus status, std::string problem,
                                                         std::optional<Snapshot> snapshot) {
                        state->cancels[at] = nullptr;
                        if (!state->cancelled) {
                          HostReading &reading = state->readings[at];
                          reading.status = status;
                          reading.problem = std::move(problem);
                          if (snapshot) {
                            reading.last_good = std::move(snapshot);
                            reading.last_good_at = std::chrono::system_clock::now();
                          }
                        }
                      });
                      --state->out;
                      ask_next(state);
                    });
  }
  if (state->running && state->out == 0 &&
      (state->cancelled || state->next == state->readings.size())) {
    state->running = false;
    std::function<void()> done = std::move(state->done);
    if (done && !state->cancelled)
      done();
  }
}

FleetPoller::FleetPoller(asio::io_context &context, FleetClientOptions options)
    : state_(std::make_shared<State>(context, std::move(options))) {
  for (const FleetHost &host : state_->options.hosts)
    state_->readings.push_back(HostReading{host, HostStatus::waiting, {}, {}, {}});
  state_->cancels.resize(state_->readings.size());
  bool any_tls = std::any_of(state_->options.hosts.begin(), state_->options.hosts.end(),
                             [](const FleetHost &host) { return host.tls; });
  if (any_tls)
    state_->tls.emplace(fleet_tls_context(state_->options.ca_file));
}

FleetPoller::~FleetPoller() {
  state_->cancelled = true;
  for (auto &cancel : state_->cancels)
    if (cancel)
      cancel();
}

void FleetPoller::poll(std::function<void()> done) {
  if (state_->running)
    return;
  state_->running = true;
  state_->next = 0;
  state_->done = std::move(done);
  ask_next(state_);
}

bool FleetPoller::polling() const { return state_->running; }

const std::vector<HostReading> &FleetPoller::hosts() const { return state_->readings; }

FleetSummary fleet_summary_of(const std::vector<HostReading> &hosts) {
  FleetSummary fleet;
  for (const HostReading &reading : hosts) {
    FleetSummary one;
    if (reading.status == HostStatus::ok && reading.last_good) {
      one = fleet_summary(*reading.last_good);
    } else {
      one.silent_hosts = 1;
      one.silent_gpus = one.gpus = reading.last_good ? reading.last_good->gpus.size() : 0;
    }
    one.hosts = 1;
    fleet.add(one);
  }
  return fleet;
}

} // namespace nvsmi
