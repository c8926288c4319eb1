// What `serve` answers from: the last good sample, rendered once into every body it is served
// as, a history of samples bounded by time and bytes (serve_history.hpp), and whether the data
// is still fresh.
#pragma once

#include "formats/prometheus_metrics.hpp"
#include "serve/http_server.hpp"
#include "serve/serve_history.hpp"
#include "serve/serve_series.hpp"

#include "nvsmi/snapshot.hpp"

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace nvsmi {

struct ServeClock {
  std::chrono::steady_clock::time_point steady; // for freshness
  double unix_seconds;                          // for what is shown
  static ServeClock now();
};

class ServeState {
public:
  // `pending_max_bytes` bounds the series bodies made and not yet sent (pending_bytes()):
  // clients that ask and do not read would otherwise hold one each until they time out.
  // `metrics` says which families and series /metrics has (serve's --metrics-* options).
  ServeState(std::chrono::milliseconds interval, double history_seconds,
             std::size_t history_max_bytes = 256u << 20,
             std::size_t pending_max_bytes = default_pending_max_bytes,
             MetricsSelection metrics = {});
  static constexpr std::size_t default_pending_max_bytes = 32u << 20;

  void add(const Snapshot &snapshot, const ServeClock &at);
  // The sample interval in force (--cpu-budget may lengthen it): freshness is three of them.
  void set_interval(std::chrono::milliseconds interval) { interval_ = interval; }
  const ServeHistory &history() const { return *history_; }
  // The bytes of series bodies made for clients and not yet sent or dropped.
  std::size_t pending_bytes() const { return *pending_; }
  // The latest thing that went wrong, shown while the data is stale.
  void note_error(const std::string &message) { last_error_ = message; }
  // serve answers /fleet (--fleet-hosts): the series say so, and the dashboard links it.
  void link_fleet_page() { fleet_page_ = true; }

  // What /metrics tells of the agent itself, asked for only there: the sampler's counts and the
  // monitor's cost. Either may be empty (none: zero counts, no cost).
  struct AgentFigures {
    std::function<SamplingCounters()> sampling;
    std::function<AgentCost()> cost;
  };
  // The answer to GET `path`?`query` at `at`.
  HttpResponse answer(std::string_view path, std::string_view query, const ServeClock &at,
                      const AgentFigures &agent) const;

private:
  struct Sample {
    double unix_seconds;
    std::chrono::steady_clock::time_point steady;
    std::shared_ptr<const std::string> json, legacy, snapshot_metrics;
    std::string summary; // fleet_summary_text, for the dashboard's first line
  };

  bool fresh(const ServeClock &at) const;
  // The cost for the page's header: read again at most every few seconds, however many pages ask.
  const AgentCost &page_cost(const ServeClock &at, const AgentFigures &agent) const;
  std::string stale_reason(const ServeClock &at) const;
  HttpResponse metrics(const ServeClock &at, const AgentFigures &agent) const;
  HttpResponse history(std::string_view query, const ServeClock &at) const;
  HttpResponse unavailable(const ServeClock &at) const;
  HttpResponse series(std::string_view query, const ServeClock &at,
                      const AgentFigures &agent) const;
  HttpResponse counted_series(const std::string &query, const SeriesContext &context) const;

  std::chrono::milliseconds interval_;
  double history_seconds_;
  std::optional<Sample> latest_;
  std::shared_ptr<ServeHistory> history_;
  std::string last_error_;
  std::string hostname_; // the samples' host, else this machine's
  std::size_t pending_max_bytes_;
  MetricsSelection metrics_;
  bool fleet_page_ = false;
  // Shared with each counted body's deleter, which gives its bytes back when the last holder
  // (the connection) lets go of it; only the server's thread makes or drops bodies.
  std::shared_ptr<std::size_t> pending_ = std::make_shared<std::size_t>(0);
  mutable std::optional<AgentCost> page_cost_;
  mutable std::chrono::steady_clock::time_point page_cost_at_;
};

} // namespace nvsmi
