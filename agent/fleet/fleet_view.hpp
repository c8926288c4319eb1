// What `fleet` prints of the hosts' readings: for people (the summary line, then each host's
// status and its last good sample as the table shows one machine) and as JSON.
#pragma once

#include "fleet/fleet_poller.hpp"
#include "fleet/fleet_prometheus.hpp"
#include "formats/format_table.hpp"

#include <chrono>
#include <string>
#include <vector>

namespace nvsmi {

// "gpu1:9437 · ok", "gpu2:9437 · unreachable: no answer in 3 s · last good sample 40 s ago" (or
// "never answered"): the host line every view shows above its GPUs. Printable.
std::string fleet_host_line(const HostReading &reading, std::chrono::system_clock::time_point now);

// The fleet summary line ("40 GPUs on 5 hosts: 12 free · ..."), then per host its line and, where
// it has one, its last good sample as format_table draws it.
std::string format_fleet_text(const std::vector<HostReading> &hosts,
                              std::chrono::system_clock::time_point now, const TableStyle &style);

// {"schema":"nvsmi-agent.fleet/1","summary":"...","hosts":[{"host":"gpu1:9437","status":"ok",
// "problem":null,"last_good_age_seconds":0.2,"snapshot":{nvsmi-agent.snapshot/1 or null}},..]}
std::string format_fleet_json(const std::vector<HostReading> &hosts,
                              std::chrono::system_clock::time_point now);

// From a Prometheus (`fleet --prometheus`): the same summary line, then per instance its line
// ("127.0.0.1:9437 · unreachable: connection refused"), its own summary and a line per GPU (index,
// name, temperature, utilization, memory, power, its state as its agent said it, the users of its
// compute processes where exposed). Every line fits style.width.
std::string format_prometheus_fleet_text(const std::vector<PrometheusInstance> &instances,
                                         const TableStyle &style);

// {"schema":"nvsmi-agent.fleet-prometheus/1","prometheus":"http://...","summary":"...",
// "hosts":[{"host":"127.0.0.1:9437","job":"...","status":"ok","problem":null,
// "scrape_age_seconds":0.4,"gpus":[{"gpu":"0","uuid":"...","name":"...","state":"free",
// "utilization_percent":0,"memory_used_mib":0,"memory_total_mib":81559,"power_draw_w":68,
// "temperature_c":30,"users":[]},...]},...]}; null for what Prometheus does not hold.
std::string format_prometheus_fleet_json(const PrometheusServer &server,
                                         const std::vector<PrometheusInstance> &instances);

} // namespace nvsmi
