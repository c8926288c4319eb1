#include "serve/serve_state.hpp"

#include "core/number_text.hpp"
#include "formats/formats.hpp"
#include "formats/json_writer.hpp"
#include "serve/embedded_files.hpp"
#include "serve/json_error.hpp"
#include "serve/serve_series.hpp"

#include "nvsmi/gpu_state.hpp"

#include <climits>
#include <cmath>
#include <unistd.h>

namespace nvsmi {
namespace {

using std::chrono::duration;
using std::chrono::steady_clock;

constexpr const char *json_type = "application/json";

std::shared_ptr<const std::string> shared(std::string text) {
  return std::make_shared<const std::string>(std::move(text));
}

// This machine's name, for the dashboard where the samples carry none (a --fixture replay).
std::string machine_hostname() {
  char name[HOST_NAME_MAX + 1] = {};
  if (::gethostname(name, sizeof name - 1) != 0)
    return std::string();
  return valid_utf8(name);
}

// The chart library changes only with the agent: a reload need not fetch it again.
HttpResponse asset(const char *content_type, std::shared_ptr<const std::string> body) {
  return {200, content_type, std::move(body), {{"Cache-Control", "public, max-age=86400"}}, {}};
}

} // namespace

ServeClock ServeClock::now() {
  auto system = std::chrono::system_clock::now().time_since_epoch();
  return {steady_clock::now(), duration<double>(system).count()};
}

ServeState::ServeState(std::chrono::milliseconds interval, double history_seconds,
                       std::size_t history_max_bytes, std::size_t pending_max_bytes,
                       MetricsSelection metrics)
    : interval_(interval), history_seconds_(history_seconds),
      history_(std::make_shared<ServeHistory>(history_seconds, history_max_bytes)),
      hostname_(machine_hostname()), pending_max_bytes_(pending_max_bytes),
      metrics_(std::move(metrics)) {}

void ServeState::add(const Snapshot &snapshot, const ServeClock &at) {
  // `snapshot` is already limited to what may be exposed (serve_exposure): the summary names the
  // holders of idle GPUs only where user names may leave the machine.
  Sample sample{at.unix_seconds,
                at.steady,
                shared(format_json(snapshot) + "\n"),
                shared(format_legacy(snapshot) + "\n"),
                shared(format_snapshot_metrics(snapshot, metrics_)),
                fleet_summary_text(fleet_summary(snapshot))};
  latest_ = std::move(sample);
  if (snapshot.host && snapshot.host->hostname)
    hostname_ = valid_utf8(*snapshot.host->hostname);
  last_error_.clear();
  history_->add(snapshot, at.unix_seconds);
}

bool ServeState::fresh(const ServeClock &at) const {
  return latest_ && at.steady - latest_->steady <= interval_ * 3;
}

std::string ServeState::stale_reason(const ServeClock &at) const {
  std::string reason =
      latest_ ? "no sample for " +
                    fixed_text(duration<double>(at.steady - latest_->steady).count(), 0) + " s"
              : std::string("no sample yet");
  if (!last_error_.empty())
    reason += "; last problem: " + last_error_;
  return reason;
}

HttpResponse ServeState::unavailable(const ServeClock &at) const {
  HttpResponse response = json_error(503, stale_reason(at));
  response.headers.push_back(
      {"Retry-After", fixed_text(std::ceil(duration<double>(interval_).count()), 0)});
  return response;
}

HttpResponse ServeState::metrics(const ServeClock &at, const AgentFigures &agent) const {
  AgentHealth health;
  health.up = fresh(at);
  if (latest_)
    health.last_sample_unix_s = latest_->unix_seconds;
  if (agent.sampling)
    health.sampling = agent.sampling();
  if (agent.cost)
    health.cost = agent.cost();
  health.history_samples = history_->size();
  health.history_bytes = history_->bytes();
  health.pending_body_bytes = *pending_;
  std::string body = health.up ? *latest_->snapshot_metrics : std::string();
  body += format_health_metrics(health, metrics_);
  return {200, prometheus_content_type, shared(std::move(body)), {}, {}};
}

static std::optional<double> seconds_parameter(std::string_view query, std::string_view name,
                                               std::string &problem) {
  auto text = query_value(query, name);
  if (!text)
    return std::nullopt;
  std::optional<double> value = whole_number(*text);
  if (!value || !(*value >= 0))
    problem = std::string(name) + " must be a number of seconds, not \"" + *text + "\"";
  return value.value_or(0);
}

HttpResponse ServeState::history(std::string_view query, const ServeClock &at) const {
  // ?seconds=N: the last N seconds; ?since=T: what arrived after Unix time T (the dashboard).
  std::string problem;
  std::optional<double> seconds = seconds_parameter(query, "seconds", problem);
  std::optional<double> since = seconds_parameter(query, "since", problem);
  if (!problem.empty())
    return json_error(400, problem);
  double after =
      since ? *since
            : at.unix_seconds - std::min(seconds.value_or(history_seconds_), history_seconds_);
  HttpResponse response{200, json_type, nullptr, {}, {}};
  response.stream = history_->stream(after, since.has_value(), duration<double>(interval_).count());
  return response;
}

const AgentCost &ServeState::page_cost(const ServeClock &at, const AgentFigures &agent) const {
  if (!page_cost_ || at.steady - page_cost_at_ >= std::chrono::seconds(5)) {
    page_cost_ = agent.cost ? agent.cost() : AgentCost{};
    page_cost_at_ = at.steady;
  }
  return *page_cost_;
}

HttpResponse ServeState::series(std::string_view query, const ServeClock &at,
                                const AgentFigures &agent) const {
  // Stale data stays on the charts under the page's banner: only no sample at all is a 503.
  if (!latest_)
    return unavailable(at);
  bool is_fresh = fresh(at);
  const AgentCost &cost = page_cost(at, agent);
  SeriesContext context{at.unix_seconds,
                        duration<double>(interval_).count(),
                        hostname_,
                        latest_->json,
                        latest_->unix_seconds,
                        is_fresh,
                        is_fresh ? std::string() : stale_reason(at),
                        latest_->summary,
                        fleet_page_,
                        cost.core_percent,
                        cost.window_seconds,
                        cost.budget_percent,
                        cost.budget_steps};
  // Made later, in turn (HttpResponse::later): hundreds of them at once must not keep /metrics
  // waiting behind them all.
  HttpResponse later;
  later.later = [this, query = std::string(query), context = std::move(context)] {
    return counted_series(query, context);
  };
  return later;
}

HttpResponse ServeState::counted_series(const std::string &query,
                                        const SeriesContext &context) const {
  auto busy = [&] {
    HttpResponse response = json_error(503, "busy: " + std::to_string(*pending_ >> 10) +
                                                " KiB of answers wait for clients to read them");
    response.headers.push_back({"Retry-After", "1"});
    return response;
  };
  // Full already: not made at all, so that clients that do not read cost no work either.
  if (*pending_ >= pending_max_bytes_)
    return busy();
  HttpResponse response = series_response(query, *history_, context);
  if (response.status != 200 || !response.body)
    return response;
  // A body is made whole (its buckets are known only at the end), then counted until it is
  // sent: one over the bound is dropped at once, so what waits stays under the bound.
  std::size_t size = response.body->size();
  if (*pending_ + size > pending_max_bytes_)
    return busy();
  *pending_ += size;
  std::shared_ptr<const std::string> made = std::move(response.body);
  const std::string *text = made.get();
  // The deleter holds the body: both go when the last holder lets go.
  response.body = std::shared_ptr<const std::string>(
      text, [pending = pending_, size, made = std::move(made)](const std::string *) mutable {
        *pending -= size;
        made.reset();
      });
  return response;
}

HttpResponse ServeState::answer(std::string_view path, std::string_view query, const ServeClock &at,
                                const AgentFigures &agent) const {
  if (path == "/metrics")
    return metrics(at, agent);
  if (path == "/" || path == "/index.html")
    return {200, "text/html; charset=utf-8", dashboard_page(), {}, {}};
  if (path == "/assets/dygraph.min.js")
    return asset("text/javascript; charset=utf-8", dygraph_script());
  if (path == "/assets/dygraph.min.css")
    return asset("text/css; charset=utf-8", dygraph_style());
  // The pages' own, not cached: a new agent's page must not meet the old one's.
  if (path == "/assets/shared.css")
    return {200, "text/css; charset=utf-8", shared_style(), {}, {}};
  if (path == "/assets/shared.js")
    return {200, "text/javascript; charset=utf-8", shared_script(), {}, {}};
  if (path == "/api/v1/thresholds") {
    static const std::shared_ptr<const std::string> table = shared(format_thresholds_json());
    return {200, json_type, table, {}, {}};
  }
  if (path == "/api/v1/series")
    return series(query, at, agent);
  if (path == "/api/v1/snapshot" || path == "/api/v1/legacy" || path == "/api/v1/history") {
    if (!fresh(at))
      return unavailable(at);
    if (path == "/api/v1/history")
      return history(query, at);
    return {200, json_type, path == "/api/v1/snapshot" ? latest_->json : latest_->legacy, {}, {}};
  }
  return {404, "text/plain; charset=utf-8", shared("not found\n"), {}, {}};
}

} // namespace nvsmi
