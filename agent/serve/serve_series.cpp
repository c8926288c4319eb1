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

// How a series' buckets are written: the min, mean and max of their readings, or the largest
// alone (a total or a limit: they change seldom, and then mostly upwards).
enum class Bucket { spread, largest };
// Which of a packed sample's arrays holds the reading: the integers (known by bit) or the reals
// (NaN where unknown).
enum class Packed { integer, real };

// One charted series: its key, where its reading sits in the packed GPU or host, how its buckets
// are written, and whether it is written only where some bucket knows it (dmon's figures: a GPU
// without them has none of those keys) rather than always (null where unknown). The GPU's and the
// host's series are tables of this shape, read and written by the same loops.
struct Series {
  const char *key;
  Packed packed;
  std::size_t slot;
  Bucket bucket;
  bool only_where_known;
};

Series gpu_reading(const char *key, Reading Gpu::*member, Bucket bucket = Bucket::spread,
                   bool only_where_known = false) {
  return {key, Packed::integer, own_slot_of(member), bucket, only_where_known};
}
Series gpu_reading(const char *key, RealReading Gpu::*member, Bucket bucket = Bucket::spread) {
  return {key, Packed::real, own_slot_of(member), bucket, false};
}
// What the GPU's units did and its traffic (dmon).
Series activity(const char *key, Reading Gpu::*member) {
  return gpu_reading(key, member, Bucket::spread, true);
}

// The GPU's series in the order they are written; the slots are the field table's, found once.
const std::vector<Series> &gpu_series() {
  static const std::vector<Series> series = {
      gpu_reading("utilization_percent", &Gpu::utilization_gpu_percent),
      gpu_reading("memory_used_mib", &Gpu::memory_used_mib),
      gpu_reading("memory_total_mib", &Gpu::memory_total_mib, Bucket::largest),
      gpu_reading("power_draw_w", &Gpu::power_draw_w),
      gpu_reading("power_limit_w", &Gpu::power_limit_w, Bucket::largest),
      gpu_reading("temperature_c", &Gpu::temperature_c),
      activity("sm_active_percent", &Gpu::sm_active_percent),
      activity("tensor_active_percent", &Gpu::tensor_active_percent),
      activity("dram_active_percent", &Gpu::dram_active_percent),
      activity("pcie_rx_bytes_per_second", &Gpu::pcie_rx_bytes_per_second),
      activity("pcie_tx_bytes_per_second", &Gpu::pcie_tx_bytes_per_second),
      activity("nvlink_rx_bytes_per_second", &Gpu::nvlink_rx_bytes_per_second),
      activity("nvlink_tx_bytes_per_second", &Gpu::nvlink_tx_bytes_per_second),
  };
  return series;
}

// The host's series in the order they are written (compact_snapshot.hpp's slots).
const Series host_series[] = {
    {"cpu_percent", Packed::real, host_cpu_percent, Bucket::spread, false},
    {"memory_used_mib", Packed::integer, host_memory_used_mib, Bucket::spread, false},
    {"memory_total_mib", Packed::integer, host_memory_total_mib, Bucket::largest, false},
    {"disk_read_bytes_per_second", Packed::real, host_disk_read, Bucket::spread, false},
    {"disk_write_bytes_per_second", Packed::real, host_disk_write, Bucket::spread, false},
    {"network_receive_bytes_per_second", Packed::real, host_network_receive, Bucket::spread, false},
    {"network_send_bytes_per_second", Packed::real, host_network_send, Bucket::spread, false},
};

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

// One Column per series of a table, in its order.
using Columns = std::vector<Column>;

struct GpuColumns {
  std::string uuid, name;
  int index = 0;
  Columns series; // by gpu_series()
};

struct HostColumns {
  Columns series; // by host_series
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

Columns empty_columns(std::size_t series, std::size_t buckets) {
  return Columns(series, Column(buckets));
}

// Each series' reading of one packed sample into its bucket, where it is known.
template <typename Table, std::size_t integers, std::size_t reals>
void add_readings(Columns &columns, std::size_t bucket, const Table &table,
                  const PackedReadings<integers> &numbers,
                  const std::array<double, reals> &real_numbers) {
  std::size_t i = 0;
  for (const Series &series : table) {
    Spread &spread = columns[i++][bucket];
    if (series.packed == Packed::integer) {
      if (std::optional<std::int64_t> value = packed_reading(numbers, series.slot))
        spread.add(static_cast<double>(*value));
    } else if (!std::isnan(real_numbers[series.slot])) {
      spread.add(real_numbers[series.slot]);
    }
  }
}

// Each series as `,"key":...`, in the table's order.
template <typename Table>
void write_series(std::string &out, const Table &table, const Columns &columns,
                  const std::vector<std::size_t> &kept) {
  std::size_t i = 0;
  for (const Series &series : table) {
    const Column &column = columns[i++];
    if (series.only_where_known &&
        std::none_of(kept.begin(), kept.end(), [&](std::size_t k) { return column[k].count; }))
      continue;
    out += ",\"";
    out += series.key;
    out += "\":";
    if (series.bucket == Bucket::largest)
      write_largest(out, column, kept);
    else
      write_spread(out, column, kept);
  }
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
  host.series = empty_columns(std::size(host_series), buckets);
  history.visit_since(
      static_cast<double>(first) * step, [&](double received, const CompactSnapshot &sample) {
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
            columns.series = empty_columns(gpu_series().size(), buckets);
            gpus.push_back(std::move(columns));
          }
          GpuColumns &columns = gpus[found->second];
          columns.index = gpu.index; // the newest, should the driver renumber
          columns.name = gpu.name ? *gpu.name : std::string();
          add_readings(columns.series, bucket, gpu_series(), gpu.numbers, gpu.reals);
        }
        if (sample.host) {
          host.seen = true;
          add_readings(host.series, bucket, host_series, sample.host->numbers, sample.host->reals);
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
  json.key("fleet_page");
  json.value(context.fleet_page);
  json.key("monitor");
  if (context.monitor_core_percent) {
    json.begin_object();
    json.key("core_percent");
    json.value(std::round(*context.monitor_core_percent * 100) / 100);
    json.key("window_seconds");
    json.value(std::round(context.monitor_window_seconds));
    json.key("budget_percent");
    if (context.budget_percent)
      json.value(*context.budget_percent);
    else
      json.null();
    json.key("budget_steps");
    json.begin_array();
    for (const std::string &taken : context.budget_steps)
      json.value(taken);
    json.end_array();
    json.end_object();
  } else {
    json.null();
  }
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
    write_series(body, gpu_series(), gpu.series, kept);
    body += '}';
  }
  body += "],\"host\":";
  if (host.seen) {
    // The table writes each key after a comma; the object's first key has none.
    std::string fields;
    write_series(fields, host_series, host.series, kept);
    body += '{';
    body.append(fields, 1);
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
