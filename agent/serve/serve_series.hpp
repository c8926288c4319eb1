// GET /api/v1/series: the history as the dashboard's charts draw it, in at most `points` buckets
// of a round `step`, each with the min, mean and max of the readings that fell in it, so that the
// body is bounded by the buckets, not by how many samples the history holds.
#pragma once

#include "serve/http_server.hpp"
#include "serve/serve_history.hpp"

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace nvsmi {

// What a series answer is made from besides the history.
struct SeriesContext {
  double now_unix_seconds;
  double interval_seconds;
  std::string hostname;
  std::shared_ptr<const std::string> latest_json; // format_json of the newest sample
  double latest_unix_seconds;
  bool fresh;
  std::string problem;     // why the data is stale; empty when fresh
  std::string summary;     // the newest sample's fleet_summary_text ("8 GPUs: 3 free · ...")
  bool fleet_page = false; // serve has --fleet-hosts: the dashboard links /fleet
  // The monitor's share of a core and the window it is over (AgentCost): the page's header.
  std::optional<double> monitor_core_percent;
  double monitor_window_seconds = 0;
  // --cpu-budget's percent (none: off) and the steps it has taken, in order (AgentCost).
  std::optional<double> budget_percent;
  std::vector<std::string> budget_steps;
};

// The answer to `query` (seconds=W&points=P, or step=S&since=T): 200 with the series, or 400
// with a JSON error naming the parameter it cannot take.
HttpResponse series_response(std::string_view query, const ServeHistory &history,
                             const SeriesContext &context);

// max(interval, seconds / points) rounded up to a round step (0.05, 1, 2, 5, 15, 30, 60 s, ...).
double series_step(double interval_seconds, double seconds, double points);

} // namespace nvsmi
