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

std::string or_dash(const std::optional<double> &value, int decimals, const char *unit) {
  return value ? fixed_text(*value, decimals) + unit : std::string("-");
}

// A GPU's line as Prometheus holds it, in cells: "[0]", its name, temperature, utilization,
// memory, power, and its state with the users of its compute processes.
std::vector<std::string> prometheus_gpu_cells(const PrometheusGpu &gpu) {
  std::string used = or_dash(gpu.memory_used_mib, 0, ""),
              total = or_dash(gpu.memory_total_mib, 0, "");
  std::string state(gpu.state ? gpu_state_name(*gpu.state) : "unknown");
  if (!gpu.users.empty()) {
    std::string users;
    for (const std::string &user : gpu.users)
      users += (users.empty() ? "" : ", ") + user;
    state += " (" + users + ")";
  }
  return {"[" + gpu.gpu + "]",
          gpu.name.empty() ? std::string("-") : gpu.name,
          or_dash(gpu.temperature_c, 0, "\u00b0C"),
          or_dash(gpu.utilization_percent, 0, "%"),
          used == "-" && total == "-" ? std::string("-") : used + "/" + total + "MiB",
          or_dash(gpu.power_draw_w, 0, "W"),
          state};
}

// Every instance's GPU lines in the same columns, measured in terminal columns: each cell as wide
// as the widest of its column on any host, the name cut to leave the rest its room.
std::vector<std::vector<std::string>>
prometheus_gpu_lines(const std::vector<PrometheusInstance> &instances, std::size_t width) {
  constexpr std::size_t cells = 7, name_cell = 1, least_name = 12;
  std::vector<std::vector<std::string>> all;
  std::size_t widths[cells] = {};
  for (const PrometheusInstance &instance : instances)
    for (const PrometheusGpu &gpu : instance.gpus) {
      all.push_back(prometheus_gpu_cells(gpu));
      for (std::size_t i = 0; i < cells; ++i)
        widths[i] = std::max(widths[i], text_columns(all.back()[i]));
    }
  std::size_t others = 1 + 2 * (cells - 2);   // the gaps: one after the index, two after the rest
  for (std::size_t i = 0; i + 1 < cells; ++i) // the state ends the line and is not padded
    others += i == name_cell ? 0 : widths[i];
  // The state's word keeps its room ("at power limit"); the users after it may be cut.
  others += std::min<std::size_t>(widths[cells - 1], 14);
  widths[name_cell] =
      std::min(widths[name_cell], std::max(least_name, width > others ? width - others : 0));
  std::vector<std::vector<std::string>> lines;
  for (std::vector<std::string> &line : all) {
    std::vector<std::string> padded;
    for (std::size_t i = 0; i < cells; ++i) {
      bool right = i >= 2 && i + 1 < cells; // the readings
      std::string cell = i == name_cell ? cut_to_columns(line[i], widths[i]) : line[i];
      padded.push_back(i + 1 < cells ? fit_text(cell, static_cast<int>(widths[i]),
                                                right ? Align::right : Align::left)
                                     : cell);
    }
    lines.push_back(std::move(padded));
  }
  return lines;
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
  std::string out = dotted_lines(fleet_summary_text(fleet_summary_of(hosts)), style, Tone::heading);
  // Every host's rows in the same columns: each as wide as the widest host needs.
  TableColumns widest;
  for (const HostReading &reading : hosts)
    if (reading.last_good) {
      TableColumns own = table_columns(*reading.last_good, style);
      for (auto field : {&TableColumns::index, &TableColumns::name, &TableColumns::temperature,
                         &TableColumns::utilization, &TableColumns::memory, &TableColumns::power,
                         &TableColumns::state})
        widest.*field = std::max(widest.*field, own.*field);
    }
  for (const HostReading &reading : hosts) {
    out += "\n" + dotted_lines(fleet_host_line(reading, now), style);
    if (reading.last_good)
      out += format_table(*reading.last_good, style, widest);
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

std::string format_prometheus_fleet_text(const std::vector<PrometheusInstance> &instances,
                                         const TableStyle &style) {
  std::string out = dotted_lines(fleet_summary_text(prometheus_fleet_summary(instances)), style);
  std::vector<std::vector<std::string>> gpu_lines = prometheus_gpu_lines(instances, style.width);
  std::size_t next = 0; // the first of the next instance's lines
  for (const PrometheusInstance &instance : instances) {
    std::string line =
        instance.instance + " \u00b7 " + std::string(host_status_key(instance.status));
    if (!instance.problem.empty())
      line += ": " + instance.problem;
    if (instance.status != HostStatus::ok && instance.scrape_age_seconds)
      line += " \u00b7 scraped " + trimmed_text(*instance.scrape_age_seconds, 0) + " s ago";
    out += "\n" + dotted_lines(line, style);
    if (instance.gpus.empty())
      continue;
    out += dotted_lines(fleet_summary_text(prometheus_instance_summary(instance)), style);
    for (std::size_t i = 0; i < instance.gpus.size(); ++i, ++next) {
      std::string text = gpu_lines[next][0]; // "[0] name", as the table writes it
      for (std::size_t cell = 1; cell < gpu_lines[next].size(); ++cell)
        text += (cell == 1 ? " " : "  ") + gpu_lines[next][cell];
      out += cut_to_columns(text, style.width) + "\n";
    }
  }
  return out;
}

std::string format_prometheus_fleet_json(const PrometheusServer &server,
                                         const std::vector<PrometheusInstance> &instances) {
  std::string out;
  JsonWriter json(out);
  json.begin_object();
  json.key("schema");
  json.value(std::string("nvsmi-agent.fleet-prometheus/1"));
  json.key("prometheus");
  json.value(server.label());
  json.key("summary");
  json.value(fleet_summary_text(prometheus_fleet_summary(instances)));
  json.key("hosts");
  json.begin_array();
  for (const PrometheusInstance &instance : instances) {
    json.begin_object();
    json.key("host");
    json.value(instance.instance);
    json.key("job");
    json.value(instance.job);
    json.key("status");
    json.value(std::string(host_status_key(instance.status)));
    json.key("problem");
    if (instance.problem.empty())
      json.null();
    else
      json.value(instance.problem);
    json.key("scrape_age_seconds");
    json.value(instance.scrape_age_seconds);
    json.key("gpus");
    json.begin_array();
    for (const PrometheusGpu &gpu : instance.gpus) {
      json.begin_object();
      json.key("gpu");
      json.value(gpu.gpu);
      json.key("uuid");
      json.value(gpu.uuid);
      json.key("name");
      json.value(gpu.name);
      json.key("state");
      if (gpu.state)
        json.value(std::string(gpu_state_key(*gpu.state)));
      else
        json.null();
      for (const auto &[key, value] : {std::pair{"utilization_percent", &gpu.utilization_percent},
                                       std::pair{"memory_used_mib", &gpu.memory_used_mib},
                                       std::pair{"memory_total_mib", &gpu.memory_total_mib},
                                       std::pair{"power_draw_w", &gpu.power_draw_w},
                                       std::pair{"temperature_c", &gpu.temperature_c}}) {
        json.key(key);
        json.value(*value);
      }
      json.key("users");
      json.value(gpu.users);
      json.end_object();
    }
    json.end_array();
    json.end_object();
  }
  json.end_array();
  json.end_object();
  out += '\n';
  return out;
}

} // namespace nvsmi
