#include "fleet/fleet_prometheus.hpp"

#include "core/exit_codes.hpp"
#include "core/screen_text.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ssl/context.hpp>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <exception>
#include <map>
#include <nlohmann/json.hpp>
#include <tuple>
#include <vector>

namespace nvsmi {
namespace {

// One Prometheus' target, by what it is called in every query: its job and its instance.
using Key = std::pair<std::string, std::string>;

// The queries, in the order their answers are read. Each instant query answers a vector of
// {metric: labels, value: [time, "number"]}.
enum Query : std::size_t {
  q_up,
  q_up_time,
  q_agent_up,
  q_state,
  q_utilization,
  q_memory_used,
  q_memory_total,
  q_power,
  q_temperature,
  q_users,
  q_targets,
  q_count
};

constexpr std::array<const char *, q_targets> queries = {
    "up",
    "timestamp(up)",
    "nvsmi_up",
    "nvsmi_gpu_state == 1",
    "nvsmi_gpu_utilization_ratio",
    "nvsmi_gpu_memory_used_bytes",
    "nvsmi_gpu_memory_total_bytes",
    "nvsmi_gpu_power_draw_watts",
    "nvsmi_gpu_temperature_celsius",
    "nvsmi_gpu_user_processes",
};

// A query as a URL's query value (RFC 3986: all but the unreserved characters percent-encoded).
std::string url_encoded(std::string_view text) {
  static const char hex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

// A label's value, printable; "" where absent or not a string.
std::string label(const nlohmann::json &metric, const char *name) {
  if (!metric.is_object())
    return {};
  auto found = metric.find(name);
  if (found == metric.end() || !found->is_string())
    return {};
  return printable_text(found->get<std::string>());
}

// Prometheus writes a sample's value as a string ("0.5", "NaN", "+Inf"): only a finite number is
// a reading.
std::optional<double> sample_value(const nlohmann::json &value) {
  if (!value.is_array() || value.size() != 2 || !value[1].is_string())
    return std::nullopt;
  const std::string &text = value[1].get_ref<const std::string &>();
  char *end = nullptr;
  double number = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(number))
    return std::nullopt;
  return number;
}

std::optional<double> sample_time(const nlohmann::json &value) {
  if (!value.is_array() || value.size() != 2 || !value[0].is_number())
    return std::nullopt;
  double time = value[0].get<double>();
  return std::isfinite(time) ? std::optional<double>(time) : std::nullopt;
}

// "15s", "1m30s", "500ms", "1h": a target's scrapeInterval; nullopt for anything else.
std::optional<double> duration_seconds(const std::string &text) {
  static const std::pair<const char *, double> units[] = {
      {"ms", 0.001}, {"s", 1}, {"m", 60}, {"h", 3600}, {"d", 86400}};
  double total = 0;
  std::size_t at = 0;
  while (at < text.size()) {
    std::size_t digits = at;
    while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits])))
      ++digits;
    if (digits == at || digits - at > 9)
      return std::nullopt;
    double number = std::stod(text.substr(at, digits - at));
    const std::pair<const char *, double> *unit = nullptr;
    for (const auto &each : units)
      if (text.compare(digits, std::string_view(each.first).size(), each.first) == 0) {
        unit = &each;
        break;
      }
    if (!unit)
      return std::nullopt;
    total += number * unit->second;
    at = digits + std::string_view(unit->first).size();
  }
  return at == 0 ? std::nullopt : std::optional<double>(total);
}

// What one answer may hold (docs/FLEET.md, "Limits"), counted while it is parsed so that
// its tree never outgrows them: series in its result (or targets), JSON values in all (a series
// of ours has about a dozen), bytes of one string. A fleet of 10,000 GPUs fits; ten answers at
// these limits, kept as Series, hold a few tens of MiB.
constexpr std::size_t max_series = 10000;
constexpr std::size_t max_values = 16 * max_series;
constexpr std::size_t max_text_bytes = 4096;

// `body` parsed, or a discarded value where it is not JSON; throws where it is over a limit above.
nlohmann::json parse_bounded(const std::string &origin, const std::string &body) {
  using Json = nlohmann::json;
  std::size_t values = 0, series = 0;
  auto over = [&](const std::string &what) {
    throw AgentError(exit_bad_output, origin + ": answered more than " + what +
                                          ", the most fleet --prometheus reads of an answer");
  };
  return Json::parse(
      body,
      [&](int depth, Json::parse_event_t event, Json &value) {
        bool starts =
            event == Json::parse_event_t::object_start || event == Json::parse_event_t::array_start;
        if (starts || event == Json::parse_event_t::value) {
          if (++values > max_values)
            over(std::to_string(max_values) + " JSON values");
          // {"data":{"result":[series, ...]}}: a series (or a target) begins at depth 3.
          if (depth == 3 && ++series > max_series)
            over(std::to_string(max_series) + " series");
        }
        if ((event == Json::parse_event_t::key || event == Json::parse_event_t::value) &&
            value.is_string() && value.get_ref<const std::string &>().size() > max_text_bytes)
          over("a text of " + std::to_string(max_text_bytes) + " bytes");
        return true;
      },
      false);
}

// The `data` of an API answer ({"status":"success","data":...}), or throws what is wrong with it.
nlohmann::json answer_data(const PrometheusServer &server, const std::string &what,
                           HttpAnswer answer) {
  std::string origin = "--prometheus " + server.label() + ": " + what;
  if (!answer.failure.empty()) {
    bool too_big = answer.failure.rfind("answered more than", 0) == 0 ||
                   answer.failure.rfind("answered headers", 0) == 0 ||
                   answer.failure.rfind("answered a chunk-size line", 0) == 0;
    throw AgentError(too_big ? exit_bad_output : exit_io, origin + ": " + answer.failure);
  }
  if (answer.status == 401)
    throw AgentError(exit_io, origin + ": asks for credentials (401): --fleet-user and "
                                       "--fleet-password-file");
  nlohmann::json parsed = parse_bounded(origin, answer.body);
  answer.body = std::string(); // parsed: not held beside its tree
  if (answer.status != 200) {
    std::string why;
    if (parsed.is_object() && parsed.contains("error") && parsed["error"].is_string())
      why = ": " + cut_to_columns(printable_text(parsed["error"].get<std::string>()), 200);
    throw AgentError(exit_io, origin + ": answered HTTP " + std::to_string(answer.status) + why);
  }
  if (!parsed.is_object() || parsed.value("status", nlohmann::json()) != "success" ||
      !parsed.contains("data"))
    throw AgentError(exit_bad_output,
                     origin + ": answered what is not the Prometheus HTTP API's JSON");
  return std::move(parsed["data"]);
}

// An instant query's series, or throws where the answer is not a vector.
const nlohmann::json &vector_result(const PrometheusServer &server, const std::string &query,
                                    const nlohmann::json &data) {
  if (!data.is_object() || data.value("resultType", nlohmann::json()) != "vector" ||
      !data.contains("result") || !data["result"].is_array())
    throw AgentError(exit_bad_output, "--prometheus " + server.label() + ": " + query +
                                          ": answered what is not an instant vector");
  return data["result"];
}

Key key_of(const nlohmann::json &series) {
  const nlohmann::json &metric =
      series.is_object() && series.contains("metric") ? series["metric"] : nlohmann::json::object();
  return {label(metric, "job"), label(metric, "instance")};
}

const nlohmann::json &metric_of(const nlohmann::json &series) {
  static const nlohmann::json none = nlohmann::json::object();
  if (!series.is_object() || !series.contains("metric"))
    return none;
  return series["metric"];
}

// What is read of one series of an instant vector: kept instead of its JSON, so that the answers
// to all the queries are held at a fraction of their trees' size.
struct Series {
  Key key;
  std::string gpu, uuid, name, state, user; // its labels of these names, printable; "" if none
  std::optional<double> value, time;
};

std::vector<Series> series_of(const nlohmann::json &result) {
  std::vector<Series> out;
  out.reserve(result.size());
  for (const nlohmann::json &series : result) {
    const nlohmann::json &metric = metric_of(series);
    const nlohmann::json &value =
        series.is_object() ? series.value("value", nlohmann::json()) : nlohmann::json();
    out.push_back(Series{key_of(series), label(metric, "gpu"), label(metric, "uuid"),
                         label(metric, "name"), label(metric, "state"), label(metric, "user"),
                         sample_value(value), sample_time(value)});
  }
  return out;
}

std::optional<GpuState> state_from_key(const std::string &key) {
  for (std::size_t i = 0; i <= static_cast<std::size_t>(GpuState::unknown); ++i)
    if (gpu_state_key(static_cast<GpuState>(i)) == key)
      return static_cast<GpuState>(i);
  return std::nullopt;
}

// The number in a `gpu` label, for its order; labels that are not one sort after, by text.
bool gpu_before(const PrometheusGpu &a, const PrometheusGpu &b) {
  auto number = [](const std::string &text) -> std::optional<long> {
    if (text.empty() || text.size() > 9 ||
        !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; }))
      return std::nullopt;
    return std::stol(text);
  };
  std::optional<long> x = number(a.gpu), y = number(b.gpu);
  if (x && y)
    return *x < *y;
  if (x || y)
    return x.has_value();
  return a.gpu < b.gpu;
}

// A scrape older than this many of its intervals is stale, as an agent calls its own sample
// stale after three of its intervals.
constexpr double stale_after_intervals = 3;
// Where /api/v1/targets does not say a target's interval: Prometheus' default.
constexpr double default_scrape_interval_s = 60;

} // namespace

std::string PrometheusServer::label() const { return host.label() + path_prefix; }

PrometheusServer parse_prometheus_url(std::string_view text) {
  PrometheusServer server;
  std::size_t authority = text.find("://");
  authority = authority == std::string_view::npos ? 0 : authority + 3;
  std::size_t slash = text.find('/', authority);
  std::string_view path = slash == std::string_view::npos ? "" : text.substr(slash);
  while (!path.empty() && path.back() == '/')
    path.remove_suffix(1);
  bool plain = std::all_of(path.begin(), path.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '/' || c == '-' || c == '_' ||
           c == '.' || c == '~';
  });
  if (!plain)
    throw AgentError(exit_usage, "--prometheus: \"" + printable_text(text) +
                                     "\" is not http(s)://HOST:PORT[/PREFIX] (a prefix of "
                                     "letters, digits and -_.~/ only)");
  try {
    server.host = parse_fleet_host(text.substr(0, slash));
  } catch (const AgentError &error) {
    std::string message = error.what();
    if (message.rfind("--hosts", 0) == 0)
      message.replace(0, 7, "--prometheus");
    throw AgentError(error.code(), message);
  }
  server.path_prefix = std::string(path);
  return server;
}

std::vector<PrometheusInstance> ask_prometheus(const PrometheusServer &server,
                                               const FleetClientOptions &client) {
  boost::asio::io_context context;
  std::optional<boost::asio::ssl::context> tls;
  if (server.host.tls)
    tls.emplace(fleet_tls_context(client.ca_file));
  std::array<std::string, q_count> targets;
  for (std::size_t i = 0; i < q_targets; ++i)
    targets[i] = server.path_prefix + "/api/v1/query?query=" + url_encoded(queries[i]);
  targets[q_targets] = server.path_prefix + "/api/v1/targets?state=active";
  // Each answer is read as it comes and its body and tree let go of, so that no more than one
  // tree is held at a time; what is wrong with an answer is thrown after the run, in the order
  // of the queries, as when they were read after it.
  std::array<std::vector<Series>, q_targets> results;
  std::array<std::exception_ptr, q_targets> failures;
  // The targets' last errors and intervals only say more: a Prometheus that will not give them
  // (too many targets for the bounds, an older API) still gives the fleet.
  std::map<Key, std::pair<std::string, std::optional<double>>> target_notes;
  auto read_targets = [&](HttpAnswer answer) {
    nlohmann::json data;
    try {
      data = answer_data(server, "/api/v1/targets", std::move(answer));
    } catch (const AgentError &) {
      return;
    }
    if (data.is_object() && data.contains("activeTargets") && data["activeTargets"].is_array())
      for (const nlohmann::json &target : data["activeTargets"]) {
        if (!target.is_object())
          continue;
        Key key{label(target.value("labels", nlohmann::json()), "job"),
                label(target.value("labels", nlohmann::json()), "instance")};
        std::string error = target.contains("lastError") && target["lastError"].is_string()
                                ? printable_text(target["lastError"].get<std::string>())
                                : std::string();
        std::optional<double> interval;
        if (target.contains("scrapeInterval") && target["scrapeInterval"].is_string())
          interval = duration_seconds(target["scrapeInterval"].get<std::string>());
        target_notes[key] = {error, interval};
      }
  };
  for (std::size_t i = 0; i < q_count; ++i)
    bounded_get(context, client, tls ? &*tls : nullptr, server.host, targets[i],
                [&, i](HttpAnswer answer) {
                  if (i == q_targets)
                    return read_targets(std::move(answer));
                  try {
                    nlohmann::json data = answer_data(server, queries[i], std::move(answer));
                    results[i] = series_of(vector_result(server, queries[i], data));
                  } catch (const AgentError &) {
                    failures[i] = std::current_exception();
                  }
                });
  // Every request ends by its deadline (name resolution aside: see FLEET.md).
  context.run();
  for (const std::exception_ptr &failure : failures)
    if (failure)
      std::rethrow_exception(failure);

  // Our agents' jobs: those where some instance gives nvsmi_up. Another job's targets (a node
  // exporter) are no agents; an agent of ours that is down shows by its job's other agents.
  std::map<Key, double> agent_up;
  std::vector<std::string> jobs;
  for (const Series &series : results[q_agent_up]) {
    const Key &key = series.key;
    if (series.value)
      agent_up[key] = *series.value;
    if (std::find(jobs.begin(), jobs.end(), key.first) == jobs.end())
      jobs.push_back(key.first);
  }
  std::map<Key, double> scraped_at;
  std::optional<double> asked_at;
  for (const Series &series : results[q_up_time]) {
    if (series.value)
      scraped_at[series.key] = *series.value;
    if (!asked_at)
      asked_at = series.time;
  }

  std::map<Key, PrometheusInstance> instances;
  for (const Series &series : results[q_up]) {
    const Key &key = series.key;
    if (key.second.empty() || std::find(jobs.begin(), jobs.end(), key.first) == jobs.end())
      continue;
    PrometheusInstance &instance = instances[key];
    instance.job = key.first;
    instance.instance = key.second;
    std::optional<double> up = series.value;
    auto note = target_notes.find(key);
    auto at = scraped_at.find(key);
    if (at != scraped_at.end() && asked_at)
      instance.scrape_age_seconds = std::max(0.0, *asked_at - at->second);
    double interval = note != target_notes.end() && note->second.second ? *note->second.second
                                                                        : default_scrape_interval_s;
    if (!up || *up != 1) {
      instance.status = HostStatus::unreachable;
      instance.problem = note != target_notes.end() && !note->second.first.empty()
                             ? note->second.first
                             : "down in Prometheus";
    } else if (instance.scrape_age_seconds &&
               *instance.scrape_age_seconds > stale_after_intervals * interval) {
      instance.status = HostStatus::stale;
      instance.problem = "Prometheus' latest scrape is " +
                         std::to_string(std::lround(*instance.scrape_age_seconds)) + " s old";
    } else if (agent_up.count(key) == 0 || agent_up[key] != 1) {
      instance.status = HostStatus::stale;
      instance.problem = "its agent has no fresh sample (nvsmi_up 0)";
    } else {
      instance.status = HostStatus::ok;
    }
  }

  // Each GPU by its instance and `gpu` label; a series of a GPU whose instance is not above (no
  // `up`: Prometheus stopped scraping it) is left out.
  std::map<Key, std::map<std::string, PrometheusGpu>> gpus;
  auto gpu_of = [&](const Series &series) -> PrometheusGpu * {
    if (instances.count(series.key) == 0)
      return nullptr;
    PrometheusGpu &gpu = gpus[series.key][series.gpu];
    gpu.gpu = series.gpu;
    if (gpu.uuid.empty())
      gpu.uuid = series.uuid;
    if (gpu.name.empty())
      gpu.name = series.name;
    return &gpu;
  };
  for (const Series &series : results[q_state])
    if (PrometheusGpu *gpu = gpu_of(series))
      gpu->state = state_from_key(series.state);
  struct Field {
    Query query;
    std::optional<double> PrometheusGpu::*member;
    double scale;
  };
  constexpr double mib = 1024.0 * 1024.0;
  for (const Field &reading : {Field{q_utilization, &PrometheusGpu::utilization_percent, 100},
                               Field{q_memory_used, &PrometheusGpu::memory_used_mib, 1 / mib},
                               Field{q_memory_total, &PrometheusGpu::memory_total_mib, 1 / mib},
                               Field{q_power, &PrometheusGpu::power_draw_w, 1},
                               Field{q_temperature, &PrometheusGpu::temperature_c, 1}})
    for (const Series &series : results[reading.query])
      if (PrometheusGpu *gpu = gpu_of(series))
        if (series.value)
          gpu->*reading.member = *series.value * reading.scale;
  for (const Series &series : results[q_users]) {
    const std::optional<double> &count = series.value;
    const std::string &user = series.user;
    if (!count || *count <= 0 || user.empty())
      continue;
    if (PrometheusGpu *gpu = gpu_of(series))
      if (std::find(gpu->users.begin(), gpu->users.end(), user) == gpu->users.end())
        gpu->users.push_back(user);
  }

  std::vector<PrometheusInstance> out;
  for (auto &[key, instance] : instances) {
    for (auto &[index, gpu] : gpus[key])
      instance.gpus.push_back(std::move(gpu));
    std::sort(instance.gpus.begin(), instance.gpus.end(), gpu_before);
    out.push_back(std::move(instance));
  }
  std::sort(out.begin(), out.end(), [](const PrometheusInstance &a, const PrometheusInstance &b) {
    return std::tie(a.instance, a.job) < std::tie(b.instance, b.job);
  });
  return out;
}

FleetSummary prometheus_instance_summary(const PrometheusInstance &instance) {
  FleetSummary one;
  one.gpus = instance.gpus.size();
  for (const PrometheusGpu &gpu : instance.gpus) {
    GpuState state = gpu.state.value_or(GpuState::unknown);
    ++one.count[static_cast<std::size_t>(state)];
    if (state == GpuState::idle_held)
      for (const std::string &user : gpu.users)
        if (std::find(one.idle_holders.begin(), one.idle_holders.end(), user) ==
            one.idle_holders.end())
          one.idle_holders.push_back(user);
  }
  return one;
}

FleetSummary prometheus_fleet_summary(const std::vector<PrometheusInstance> &instances) {
  FleetSummary fleet;
  for (const PrometheusInstance &instance : instances) {
    FleetSummary one;
    if (instance.status == HostStatus::ok) {
      one = prometheus_instance_summary(instance);
    } else {
      one.silent_hosts = 1;
      one.silent_gpus = one.gpus = instance.gpus.size();
    }
    one.hosts = 1;
    fleet.add(one);
  }
  return fleet;
}

} // namespace nvsmi
