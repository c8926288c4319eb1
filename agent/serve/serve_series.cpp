#include "serve/serve_series.hpp"

#include "serve/json_error.hpp"

#include "formats/json_writer.hpp"

#include "nvsmi/gpu_fields.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <vector>

namespace nvsmi {
namespace {

constexpr std::size_t default_points = 300, max_points = 2000;

// Where the charted readings sit in a packed GPU (the field table's own slots), found once.
struct ChartedSlots {
  std::size_t utilization = own_slot_of(&Gpu::utilization_gpu_percent);
  std::size_t memory_used = own_slot_of(&Gpu::memory_used_mib);
  std::size_t memory_total = own_slot_of(&Gpu::memory_total_mib);
  std::size_t temperature = own_slot_of(&Gpu::temperature_c);
  std::size_t power_draw = own_slot_of(&Gpu::power_draw_w);
  std::size_t power_limit = own_slot_of(&Gpu::power_limit_w);
};
const ChartedSlots &charted() {
  static const ChartedSlots slots;
  return slots;
}

// What the GPU's units did and its traffic (dmon), charted where a GPU has them: the series' key
// and the reading's own slot.
struct ActivityChart {
  const char *key;
  Reading Gpu::*member;
};
constexpr ActivityChart activity_charts[] = {
    {"sm_active_percent", &Gpu::sm_active_percent},
    {"tensor_active_percent", &Gpu::tensor_active_percent},
    {"dram_active_percent", &Gpu::dram_active_percent},
    {"pcie_rx_bytes_per_second", &Gpu::pcie_rx_bytes_per_second},
    {"pcie_tx_bytes_per_second", &Gpu::pcie_tx_bytes_per_second},
    {"nvlink_rx_bytes_per_second", &Gpu::nvlink_rx_bytes_per_second},
    {"nvlink_tx_bytes_per_second", &Gpu::nvlink_tx_bytes_per_second},
};
constexpr std::size_t activity_count = std::size(activity_charts);
const std::array<std::size_t, activity_count> &activity_slots() {
  static const std::array<std::size_t, activity_count> slots = [] {
    std::array<std::size_t, activity_count> out{};
    for (std::size_t i = 0; i < activity_count; ++i)
      out[i] = own_slot_of(activity_charts[i].member);
    return out;
  }();
  return slots;
}

// The readings of one quantity that fell in each bucket.
struct Spread {
  double min = std::numeric_limits<double>::infinity();
  double max = -std::numeric_limits<double>::infinity();
  double sum = 0;
  std::size_t count = 0;
  void add(double value) {
    min = std::min(min, value);
    max = std::max(max, value);
    sum += value;
    ++count;
  }
};
using Column = std::vector<Spread>; // one Spread per bucket

struct GpuColumns {
  std::string uuid, name;
  int index = 0;
  Column utilization, memory_used, memory_total, power_draw, power_limit, temperature;
  std::array<Column, activity_count> activity; // by activity_charts
};

struct HostColumns {
  Column cpu, memory_used, memory_total, disk_read, disk_write, network_receive, network_send;
  bool seen = false;
};

// Numbers as short as they can be: whole numbers without ".0", others to a hundredth, which is
// finer than any reading nvidia-smi gives.
void number(std::string &out, double value) {
  double rounded = std::round(value * 100) / 100;
  if (rounded == 0)
    rounded = 0; // never "-0"
  char buffer[32];
  char *end =
      std::abs(rounded) < 1e15 && rounded == std::floor(rounded)
          ? std::to_chars(buffer, buffer + sizeof buffer, static_cast<std::int64_t>(rounded)).ptr
          : std::to_chars(buffer, buffer + sizeof buffer, rounded).ptr;
  out.append(buffer, end);
}

template <typename Pick>
void write_array(std::string &out, const Column &column, const std::vector<std::size_t> &kept,
                 Pick pick) {
  out += '[';
  for (std::size_t i = 0; i < kept.size(); ++i) {
    if (i)
      out += ',';
    const Spread &spread = column[kept[i]];
    if (spread.count == 0)
      out += "null"; // no sample in the bucket knew it: never 0
    else
      number(out, pick(spread));
  }
  out += ']';
}

// {"min":[..],"mean":[..],"max":[..]}
void write_spread(std::string &out, const Column &column, const std::vector<std::size_t> &kept) {
  out += "{\"min\":";
  write_array(out, column, kept, [](const Spread &s) { return s.min; });
  out += ",\"mean\":";
  write_array(out, column, kept, [](const Spread &s) { return s.sum / double(s.count); });
  out += ",\"max\":";
  write_array(out, column, kept, [](const Spread &s) { return s.max; });
  out += '}';
}

// A total or a limit: the largest in the bucket (they change seldom, and then mostly upwards).
void write_largest(std::string &out, const Column &column, const std::vector<std::size_t> &kept) {
  write_array(out, column, kept, [](const Spread &s) { return s.max; });
}

void add_reading(Column &column, std::size_t bucket, std::optional<std::int64_t> value) {
  if (value)
    column[bucket].add(static_cast<double>(*value));
}
void add_reading(Column &column, std::size_t bucket, double value) {
  if (!std::isnan(value))
    column[bucket].add(value);
}

// A finite number at least `least` (exclusive when `above`), or a message naming `name`.
std::optional<double> number_parameter(std::string_view query, std::string_view name, double least,
                                       bool above, std::string &problem) {
  auto text = query_value(query, name);
  if (!text || !problem.empty())
    return std::nullopt;
  double value = whole_number(*text).value_or(std::nan(""));
  if (!std::isfinite(value) || (above ? !(value > least) : !(value >= least)))
    problem = std::string(name) + " must be a number " + (above ? "over " : "of at least ") +
              std::to_string(static_cast<long long>(least)) + ", not \"" + valid_utf8(*text) + "\"";
  return value;
}

struct Request {
  double seconds = 0, step = 0, since = 0;
  std::size_t points = default_points;
};

std::optional<Request> parse(std::string_view query, double interval, double history_seconds,
                             std::optional<double> held_since, double now, std::string &problem) {
  Request request;
  auto seconds = number_parameter(query, "seconds", 0, true, problem);
  auto points = number_parameter(query, "points", 1, false, problem);
  auto step = number_parameter(query, "step", 0, true, problem);
  auto since = number_parameter(query, "since", 0, false, problem);
  if (problem.empty() && points && (*points != std::floor(*points) || *points > max_points))
    problem = "points must be a whole number from 1 to " + std::to_string(max_points);
  if (problem.empty() && since && !step)
    problem = "since needs step: the step of the answer that the client has";
  if (!problem.empty())
    return std::nullopt;
  request.points = points ? static_cast<std::size_t>(*points) : default_points;
  // Asking for more than the history is asking for all of it, and all of it is what it holds:
  // a young history is cut in buckets of its own length, not in those of --history.
  request.seconds = std::min(seconds.value_or(history_seconds), history_seconds);
  if (held_since)
    request.seconds = std::min(request.seconds, std::max(now - *held_since, 0.0));
  request.since = since ? std::max(*since, now - history_seconds)
                        : now - std::min(seconds.value_or(history_seconds), history_seconds);
  request.step =
      step ? *step : series_step(interval, request.seconds, static_cast<double>(request.points));
  return request;
}

} // namespace

double series_step(double interval_seconds, double seconds, double points) {
  double wanted = std::max(interval_seconds, seconds / points);
  static constexpr std::array<double, 26> round_steps = {
      0.01, 0.02, 0.05, 0.1, 0.2, 0.5,  1,    2,    5,    10,    15,    20,    30,
      60,   120,  300,  600, 900, 1200, 1800, 3600, 7200, 10800, 21600, 43200, 86400};
  for (double step : round_steps)
    if (step >= wanted * (1 - 1e-9))
      return step;
  return std::ceil(wanted / 86400) * 86400; // whole days past that
}

HttpResponse series_response(std::string_view query, const ServeHistory &history,
                             const SeriesContext &context) {
  std::string problem;
  double now = context.now_unix_seconds;
  auto request = parse(query, context.interval_seconds, history.seconds(),
                       history.oldest_received(), now, problem);
  if (!request)
    return json_error(400, problem);
  const double step = request->step;
  // Buckets are aligned to multiples of the step in Unix time, so that the buckets of a later
  // request (since=T) line up with those the client has; at most `points` of them, the newest.
  auto last = static_cast<std::int64_t>(std::floor(now / step));
  auto first = static_cast<std::int64_t>(std::floor(request->since / step));
  first = std::max(first, last - static_cast<std::int64_t>(request->points) + 1);
  std::size_t buckets = first <= last ? static_cast<std::size_t>(last - first + 1) : 0;

  std::vector<std::size_t> samples(buckets, 0);
  std::vector<GpuColumns> gpus;
  std::map<std::string, std::size_t> gpu_at; // by uuid (by index where there is none)
  HostColumns host;
  host.cpu.resize(buckets);
  host.memory_used.resize(buckets);
  host.memory_total.resize(buckets);
  for (Column *column :
       {&host.disk_read, &host.disk_write, &host.network_receive, &host.network_send})
    column->resize(buckets);
  history.visit_since(static_cast<double>(first) * step, [&](double received,
                                                             const CompactSnapshot &sample) {
    auto at = static_cast<std::int64_t>(std::floor(received / step)) - first;
    if (at < 0 || at >= static_cast<std::int64_t>(buckets))
      return;
    auto bucket = static_cast<std::size_t>(at);
    ++samples[bucket];
    for (const CompactGpu &gpu : sample.gpus) {
      std::string key = gpu.uuid ? *gpu.uuid : "index " + std::to_string(gpu.index);
      auto [found, added] = gpu_at.emplace(key, gpus.size());
      if (added) {
        GpuColumns columns;
        columns.uuid = gpu.uuid ? *gpu.uuid : std::string();
        for (Column *column : {&columns.utilization, &columns.memory_used, &columns.memory_total,
                               &columns.power_draw, &columns.power_limit, &columns.temperature})
          column->resize(buckets);
        for (Column &column : columns.activity)
          column.resize(buckets);
        gpus.push_back(std::move(columns));
      }
      GpuColumns &columns = gpus[found->second];
      columns.index = gpu.index; // the newest, should the driver renumber
      columns.name = gpu.name ? *gpu.name : std::string();
      add_reading(columns.utilization, bucket, packed_reading(gpu.numbers, charted().utilization));
      add_reading(columns.memory_used, bucket, packed_reading(gpu.numbers, charted().memory_used));
      add_reading(columns.memory_total, bucket,
                  packed_reading(gpu.numbers, charted().memory_total));
      add_reading(columns.temperature, bucket, packed_reading(gpu.numbers, charted().temperature));
      add_reading(columns.power_draw, bucket, gpu.reals[charted().power_draw]);
      add_reading(columns.power_limit, bucket, gpu.reals[charted().power_limit]);
      for (std::size_t i = 0; i < activity_count; ++i)
        add_reading(columns.activity[i], bucket, packed_reading(gpu.numbers, activity_slots()[i]));
    }
    if (sample.host) {
      host.seen = true;
      add_reading(host.cpu, bucket, sample.host->reals[host_cpu_percent]);
      add_reading(host.disk_read, bucket, sample.host->reals[host_disk_read]);
      add_reading(host.disk_write, bucket, sample.host->reals[host_disk_write]);
      add_reading(host.network_receive, bucket, sample.host->reals[host_network_receive]);
      add_reading(host.network_send, bucket, sample.host->reals[host_network_send]);
      add_reading(host.memory_used, bucket,
                  packed_reading(sample.host->numbers, host_memory_used_mib));
      add_reading(host.memory_total, bucket,
                  packed_reading(sample.host->numbers, host_memory_total_mib));
    }
  });
  std::sort(gpus.begin(), gpus.end(),
            [](const GpuColumns &a, const GpuColumns &b) { return a.index < b.index; });
  // Empty buckets are left out: the client draws a gap where the time jumps.
  std::vector<std::size_t> kept;
  for (std::size_t i = 0; i < buckets; ++i)
    if (samples[i])
      kept.push_back(i);

  std::string body;
  JsonWriter json(body);
  json.begin_object();
  json.key("schema");
  json.value(std::string("nvsmi-agent.series/1"));
  json.key("hostname");
  json.value(context.hostname);
  json.key("interval_seconds");
  json.value(context.interval_seconds);
  json.key("history_seconds");
  json.value(history.seconds());
  json.key("step");
  json.value(step);
  json.key("received");
  json.value(context.latest_unix_seconds);
  json.key("fresh");
  json.value(context.fresh);
  json.key("problem");
  if (context.problem.empty())
    json.null();
  else
    json.value(context.problem);
  json.key("summary");
  json.value(context.summary);
  body += ",\"times\":[";
  for (std::size_t i = 0; i < kept.size(); ++i) {
    if (i)
      body += ',';
    number(body, static_cast<double>(first + static_cast<std::int64_t>(kept[i])) * step);
  }
  body += "],\"gpus\":[";
  for (std::size_t g = 0; g < gpus.size(); ++g) {
    const GpuColumns &gpu = gpus[g];
    body += g ? ",{" : "{";
    JsonWriter fields(body);
    fields.key("uuid");
    fields.value(gpu.uuid);
    fields.key("index");
    fields.value(gpu.index);
    fields.key("name");
    fields.value(gpu.name);
    body += ",\"utilization_percent\":";
    write_spread(body, gpu.utilization, kept);
    body += ",\"memory_used_mib\":";
    write_spread(body, gpu.memory_used, kept);
    body += ",\"memory_total_mib\":";
    write_largest(body, gpu.memory_total, kept);
    body += ",\"power_draw_w\":";
    write_spread(body, gpu.power_draw, kept);
    body += ",\"power_limit_w\":";
    write_largest(body, gpu.power_limit, kept);
    body += ",\"temperature_c\":";
    write_spread(body, gpu.temperature, kept);
    // Only where some bucket knows it: a GPU without dmon's figures has none of these keys.
    for (std::size_t i = 0; i < activity_count; ++i) {
      const Column &column = gpu.activity[i];
      if (std::none_of(kept.begin(), kept.end(), [&](std::size_t k) { return column[k].count; }))
        continue;
      body += ",\"";
      body += activity_charts[i].key;
      body += "\":";
      write_spread(body, column, kept);
    }
    body += '}';
  }
  body += "],\"host\":";
  if (host.seen) {
    body += "{\"cpu_percent\":";
    write_spread(body, host.cpu, kept);
    body += ",\"memory_used_mib\":";
    write_spread(body, host.memory_used, kept);
    body += ",\"memory_total_mib\":";
    write_largest(body, host.memory_total, kept);
    body += ",\"disk_read_bytes_per_second\":";
    write_spread(body, host.disk_read, kept);
    body += ",\"disk_write_bytes_per_second\":";
    write_spread(body, host.disk_write, kept);
    body += ",\"network_receive_bytes_per_second\":";
    write_spread(body, host.network_receive, kept);
    body += ",\"network_send_bytes_per_second\":";
    write_spread(body, host.network_send, kept);
    body += '}';
  } else {
    body += "null"; // a recording (--fixture) has no host
  }
  body += ",\"latest\":";
  std::string_view latest = *context.latest_json;
  while (!latest.empty() && latest.back() == '\n')
    latest.remove_suffix(1);
  body += latest;
  body += "}\n";
  return {200, "application/json", std::make_shared<const std::string>(std::move(body)), {}, {}};
}

} // namespace nvsmi
