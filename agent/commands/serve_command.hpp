#pragma once

#include "fleet/fleet_poller.hpp"
#include "formats/prometheus_selection.hpp"
#include "sampling/sampler.hpp"
#include "serve/http_server.hpp"

#include <optional>
#include <string>
#include <vector>

namespace nvsmi {

struct ServeOptions {
  SamplerOptions sampling;
  std::string listen = "127.0.0.1:9437";
  double history_seconds = 3600;
  // Well inside the shipped unit's MemoryMax=256M, with room for connections and a week at 1 s
  // of one GPU; an hour of 8 GPUs at 1 s takes about 9 MiB.
  std::size_t history_max_mib = 64;
  HttpLimits limits;
  // What is served beyond program names: "command-lines", "users" (serve_exposure.hpp). Users
  // are served without asking on a loopback --listen.
  std::vector<std::string> expose;
  // Which families and series /metrics has: per-process series, how many users are named, the
  // allow-list (docs/SERVE.md, "How many series").
  MetricsSelection metrics;
  // The exporters' web config (TLS, basic auth; serve/web_config.hpp); empty: plain HTTP, open.
  std::string web_config_file;
  // --fleet-hosts: other agents' serve, asked every interval, for /fleet and /fleet.json
  // (docs/FLEET.md); without it both answer 404.
  std::optional<FleetClientOptions> fleet;
};

// Samples in the background and answers HTTP until SIGINT or SIGTERM; returns the exit code.
// Throws AgentError for what stops it before it starts (an address it cannot listen on).
int run_serve(const ServeOptions &options);

} // namespace nvsmi
