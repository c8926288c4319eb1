// What `fleet` prints of the hosts' readings: for people (the summary line, then each host's
// status and its last good sample as the table shows one machine) and as JSON.
#pragma once

#include "fleet/fleet_poller.hpp"
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

} // namespace nvsmi
