#include "fleet/fleet_view.hpp"

#include "core/number_text.hpp"
#include "core/screen_text.hpp"
#include "formats/dotted_lines.hpp"
#include "formats/formats.hpp"
#include "formats/json_writer.hpp"

namespace nvsmi {
namespace {

std::optional<std::chrono::milliseconds> age_of(const HostReading &reading,
                                                std::chrono::system_clock::time_point now) {
  if (!reading.last_good_at)
    return std::nullopt;
  return std::max(
      std::chrono::milliseconds(0),
      std::chrono::duration_cast<std::chrono::milliseconds>(now - *reading.last_good_at));
}

} // namespace

std::string fleet_host_line(const HostReading &reading, std::chrono::system_clock::time_point now) {
  std::string line = printable_text(reading.host.label()) + " \u00b7 " +
                     std::string(host_status_key(reading.status));
  if (!reading.problem.empty())
    line += ": " + printable_text(reading.problem);
  if (reading.status != HostStatus::ok) {
    if (std::optional<std::chrono::milliseconds> age = age_of(reading, now))
      line += " \u00b7 last good sample " +
              trimmed_text(std::chrono::duration<double>(*age).count(), 0) + " s ago";
    else if (reading.status != HostStatus::waiting)
      line += " \u00b7 never answered";
  }
  return line;
}

std::string format_fleet_text(const std::vector<HostReading> &hosts,
                              std::chrono::system_clock::time_point now, const TableStyle &style) {
  std::string out = dotted_lines(fleet_summary_text(fleet_summary_of(hosts)), style);
  for (const HostReading &reading : hosts) {
    out += "\n" + dotted_lines(fleet_host_line(reading, now), style);
    if (reading.last_good)
      out += format_table(*reading.last_good, style);
  }
  return out;
}

std::string format_fleet_json(const std::vector<HostReading> &hosts,
                              std::chrono::system_clock::time_point now) {
  std::string out;
  JsonWriter json(out);
  json.begin_object();
  json.key("schema");
  json.value(std::string("nvsmi-agent.fleet/1"));
  json.key("summary");
  json.value(fleet_summary_text(fleet_summary_of(hosts)));
  json.key("hosts");
  json.begin_array();
  for (const HostReading &reading : hosts) {
    json.begin_object();
    json.key("host");
    json.value(reading.host.label());
    json.key("status");
    json.value(std::string(host_status_key(reading.status)));
    json.key("problem");
    if (reading.problem.empty())
      json.null();
    else
      json.value(reading.problem);
    json.key("last_good_age_seconds");
    if (std::optional<std::chrono::milliseconds> age = age_of(reading, now))
      json.value(std::chrono::duration<double>(*age).count());
    else
      json.null();
    json.key("snapshot");
    if (reading.last_good) {
      std::string snapshot = format_json(*reading.last_good);
      while (!snapshot.empty() && snapshot.back() == '\n')
        snapshot.pop_back();
      json.json_text(snapshot);
    } else {
      json.null();
    }
    json.end_object();
  }
  json.end_array();
  json.end_object();
  out += '\n';
  return out;
}

} // namespace nvsmi
