// The fleet as a Prometheus holds it (`fleet --prometheus URL`): every agent it scrapes (each
// `instance` of a job that has our nvsmi_up), whether Prometheus reaches it and how old its
// latest scrape is, and each GPU's one state word and readings, from its HTTP API
// (GET /api/v1/query, /api/v1/targets). What a Prometheus answers is hostile: each request goes
// through the one bounded GET (fleet_http.hpp), is read by nlohmann json, and every string it
// gives is made printable before anything keeps it.
#pragma once

#include "fleet/fleet_http.hpp"
#include "fleet/fleet_poller.hpp"
#include "nvsmi/gpu_state.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace nvsmi {

struct PrometheusServer {
  FleetHost host;
  std::string path_prefix; // "" or "/prometheus" (a Prometheus run with --web.route-prefix)

  // "http://HOST:PORT/prefix", as the output names it.
  std::string label() const;
};

// "http://HOST:PORT", "https://HOST:PORT", "HOST:PORT", each with an optional path prefix.
// Throws AgentError(exit_usage) naming --prometheus for anything else (as parse_fleet_host).
PrometheusServer parse_prometheus_url(std::string_view text);

struct PrometheusGpu {
  std::string gpu; // the `gpu` label: its index on its host
  std::string uuid, name;
  std::optional<GpuState> state; // nullopt: no nvsmi_gpu_state series said one
  std::optional<double> utilization_percent, memory_used_mib, memory_total_mib, power_draw_w,
      temperature_c;
  std::vector<std::string> users; // of its compute processes, where the agent exposes them
};

struct PrometheusInstance {
  std::string instance, job;
  // ok: up 1, its latest scrape recent and its agent's own nvsmi_up 1; stale: scraped, but the
  // scrape or the agent's sample is old; unreachable: up 0.
  HostStatus status = HostStatus::waiting;
  std::string problem;
  std::optional<double> scrape_age_seconds; // of its latest `up` sample, at the query's time
  std::vector<PrometheusGpu> gpus;          // by the `gpu` label's number
};

// Asks the Prometheus once (every query at once, each under the client's deadline and size
// bound) and returns every instance, by name. Throws AgentError: exit_io where Prometheus cannot
// be reached, does not answer in time, or answers an HTTP error (401: the credentials);
// exit_bad_output where what it answers is not its API's JSON or is over the size bound.
std::vector<PrometheusInstance> ask_prometheus(const PrometheusServer &server,
                                               const FleetClientOptions &client);

// The fleet's one summary line's figures over the instances, as fleet_summary_of over hosts: an
// ok instance adds its GPUs' states (and the users of its idle-but-held GPUs); any other adds its
// GPUs, if Prometheus still has them, as without a fresh sample.
FleetSummary prometheus_fleet_summary(const std::vector<PrometheusInstance> &instances);

// One instance's own line ("8 GPUs: 3 free · ..."), as fleet_summary says one machine.
FleetSummary prometheus_instance_summary(const PrometheusInstance &instance);

} // namespace nvsmi
