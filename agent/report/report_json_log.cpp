#include "report/report_json_log.hpp"

#include "nvsmi/allocation.hpp"
#include "nvsmi/gpu_fields.hpp"
#include "nvsmi/quantity.hpp"
#include "nvsmi/timestamp.hpp"
#include "nvsmi/usage_counters.hpp"

#include <cstdint>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace nvsmi {
namespace {

using Json = nlohmann::json;

// A snapshot nests five deep (line, gpus, GPU, processes, process). A line nested much deeper is
// not one, and is refused while it is read, before a million `[` become a million arrays.
constexpr int max_depth = 16;

// The members of one object, named in errors by `where` ("gpus[2].").
class Members {
public:
  Members(const Json &object, std::string where) : object_(object), where_(std::move(where)) {}

  // nullptr for a member that is missing or null: both are unknown.
  const Json *find(const char *name) const {
    auto found = object_.find(name);
    return found == object_.end() || found->is_null() ? nullptr : &*found;
  }

  Text text(const char *name) const {
    const Json *value = find(name);
    if (!value)
      return std::nullopt;
    if (!value->is_string())
      wrong(name, "a string");
    return value->get<std::string>();
  }

  Reading whole(const char *name, bool negative_allowed = false) const {
    const Json *value = find(name);
    if (!value)
      return std::nullopt;
    if (value->is_number_unsigned()) {
      auto number = value->get<std::uint64_t>();
      if (number > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
        wrong(name, "a whole number that fits in 64 bits");
      return static_cast<std::int64_t>(number);
    }
    if (!value->is_number_integer())
      wrong(name, "a whole number");
    auto number = value->get<std::int64_t>();
    if (number < 0 && !negative_allowed)
      wrong(name, "a whole number of at least 0");
    return number;
  }

  RealReading real(const char *name) const {
    const Json *value = find(name);
    if (!value)
      return std::nullopt;
    if (!value->is_number())
      wrong(name, "a number");
    auto number = value->get<double>();
    if (number < 0)
      wrong(name, "a number of at least 0");
    return number;
  }

  // A member that must be a list when it is known.
  const Json *list(const char *name) const {
    const Json *value = find(name);
    if (value && !value->is_array())
      wrong(name, "a list");
    return value;
  }

  [[noreturn]] void wrong(const char *name, const char *expected) const {
    throw ParseError(where_ + name + ": expected " + expected + " or null");
  }

private:
  const Json &object_;
  std::string where_;
};

const Json &object_at(const Json &value, const std::string &where) {
  if (!value.is_object())
    throw ParseError(where + ": expected an object");
  return value;
}

Process read_process(const Json &value, const std::string &where) {
  Members in(object_at(value, where), where + ".");
  Process process;
  process.pid = in.whole("pid");
  process.type = in.text("type");
  process.name = in.text("name");
  process.used_memory_mib = in.whole("used_memory_mib");
  process.user = in.text("user");
  process.cpu_percent = in.real("cpu_percent"); // whose processes kept the host's CPUs busy
  // Which MIG instance it is on, where its GPU has them.
  process.gpu_instance_id = in.whole("gpu_instance_id");
  process.compute_instance_id = in.whole("compute_instance_id");
  return process;
}

// The GPU's "allocation" (format_json's write_allocation), or nullopt for null. A job id or user
// that no prolog writes (not digits, not an account name) is not believed: the allocation, or
// its user, is unknown, so that nothing from a hand-edited log reaches a finding unchecked.
std::optional<Allocation> read_allocation(const Json &value, const std::string &where) {
  Members in(object_at(value, where), where + ".");
  Text job_id = in.text("job_id");
  if (!job_id || !is_job_id(*job_id))
    return std::nullopt;
  Allocation allocation;
  allocation.job_id = *job_id;
  Text scheduler = in.text("scheduler");
  if (scheduler != Text("slurm"))
    return std::nullopt; // the only one that writes the folder
  if (Text user = in.text("user"); user && is_account_name(*user))
    allocation.user = user;
  if (Text account = in.text("account"); account && is_account_name(*account))
    allocation.account = account; // absent in an earlier agent's log: unknown
  allocation.held_s = in.whole("held_s");
  return allocation;
}

// One of "mig_devices" (format_json's): its ids, memory, the UUID and profile of -L, and the job
// that holds it. Its state and holders are not read: they follow from the GPU's processes and the
// allocation (mig_state).
MigDevice read_mig_device(const Json &value, const std::string &where) {
  Members in(object_at(value, where), where + ".");
  MigDevice device;
  device.index = in.whole("index");
  device.gpu_instance_id = in.whole("gpu_instance_id");
  device.compute_instance_id = in.whole("compute_instance_id");
  device.memory_total_mib = in.whole("memory_total_mib");
  device.memory_used_mib = in.whole("memory_used_mib");
  device.memory_free_mib = in.whole("memory_free_mib");
  device.uuid = in.text("uuid");
  device.profile = in.text("profile");
  if (const Json *allocation = in.find("allocation"))
    device.allocation = read_allocation(*allocation, where + ".allocation");
  return device;
}

// The GPU's "counters" (format_json's write_counters), each total where it is given.
GpuCounters read_counters(const Json &value, const std::string &where) {
  Members in(object_at(value, where), where + ".");
  GpuCounters counters;
  for (const CounterField &counter : counter_fields())
    counters.*counter.member = in.real(counter.json_key);
  return counters;
}

Gpu read_gpu(const Json &value, const std::string &where) {
  Members in(object_at(value, where), where + ".");
  Gpu gpu;
  Reading index = in.whole("index");
  if (!index || *index > std::numeric_limits<int>::max())
    throw ParseError(where + ".index: expected a whole number from 0 to 2147483647");
  gpu.index = static_cast<int>(*index);
  gpu.uuid = in.text("uuid");
  gpu.name = in.text("name");
  gpu.pci_bus_id = in.text("pci_bus_id");
  // The table's fields where format_json puts them (JsonPlace): among the GPU's members, in its
  // "clocks_mhz", in its "health" or that object's "pcie".
  std::optional<Members> clocks_in, health_in, pcie_in;
  if (const Json *clocks = in.find("clocks_mhz"))
    clocks_in.emplace(object_at(*clocks, where + ".clocks_mhz"), where + ".clocks_mhz.");
  if (const Json *health = in.find("health")) {
    health_in.emplace(object_at(*health, where + ".health"), where + ".health.");
    if (const Json *pcie = health_in->find("pcie"))
      pcie_in.emplace(object_at(*pcie, where + ".health.pcie"), where + ".health.pcie.");
  }
  for (const GpuField &field : gpu_fields()) {
    const std::optional<Members> *from = field.json_place == JsonPlace::gpu_clocks    ? &clocks_in
                                         : field.json_place == JsonPlace::health      ? &health_in
                                         : field.json_place == JsonPlace::health_pcie ? &pcie_in
                                                                                      : nullptr;
    const Members *members = field.json_place == JsonPlace::gpu ? &in
                             : from && *from                    ? &**from
                                                                : nullptr;
    if (!members || field.part == FieldPart::derived)
      continue;
    std::string key(field.json_key);
    if (field.kind == FieldKind::integer)
      field.integer_in(gpu) = members->whole(key.c_str(), field.unit == Unit::celsius);
    else if (field.kind == FieldKind::real)
      field.real_in(gpu) = members->real(key.c_str());
    else
      field.text_in(gpu) = members->text(key.c_str());
  }
  if (const Json *processes = in.list("processes")) {
    gpu.processes.emplace();
    for (std::size_t i = 0; i < processes->size(); ++i)
      gpu.processes->push_back(
          read_process((*processes)[i], where + ".processes[" + std::to_string(i) + "]"));
  }
  if (const Json *devices = in.list("mig_devices")) {
    gpu.mig_devices.emplace();
    for (std::size_t i = 0; i < devices->size(); ++i)
      gpu.mig_devices->push_back(
          read_mig_device((*devices)[i], where + ".mig_devices[" + std::to_string(i) + "]"));
  }
  if (const Json *allocation = in.find("allocation"))
    gpu.allocation = read_allocation(*allocation, where + ".allocation");
  if (const Json *counters = in.find("counters"))
    gpu.counters = read_counters(*counters, where + ".counters");
  return gpu;
}

// Counts what a snapshot line holds as nlohmann reads it (depth 1: the line's members; 2: the
// GPUs; 3: a GPU's members; 4: its processes), throwing at the first thing over `limits`, so that
// the tree built of a hostile line never outgrows them.
class LimitCounter {
public:
  explicit LimitCounter(const SnapshotLimits &limits) : limits_(limits) {}

  void operator()(int depth, Json::parse_event_t event, const Json &value) {
    using Event = Json::parse_event_t;
    bool starts = event == Event::object_start || event == Event::array_start;
    if ((starts || event == Event::value) && ++values_ > limits_.max_values)
      over("more than " + std::to_string(limits_.max_values) + " JSON values");
    if ((event == Event::key || event == Event::value) && value.is_string() &&
        value.get_ref<const std::string &>().size() > limits_.max_text_bytes)
      over("a text of more than " + std::to_string(limits_.max_text_bytes) + " bytes");
    if (event == Event::key && depth == 1)
      in_gpus_ = value == "gpus";
    if (event == Event::key && depth == 3)
      in_processes_ = in_gpus_ && value == "processes";
    if (!in_gpus_ || !(starts || event == Event::value))
      return;
    if (depth == 2) {
      processes_ = 0;
      if (++gpus_ > limits_.max_gpus)
        over("more than " + std::to_string(limits_.max_gpus) + " GPUs");
    } else if (depth == 4 && in_processes_ && ++processes_ > limits_.max_processes_per_gpu) {
      over("more than " + std::to_string(limits_.max_processes_per_gpu) + " processes on one GPU");
    }
  }

private:
  [[noreturn]] static void over(const std::string &what) { throw SnapshotLimitError(what); }

  const SnapshotLimits &limits_;
  std::size_t values_ = 0, gpus_ = 0, processes_ = 0;
  bool in_gpus_ = false, in_processes_ = false;
};

// `text` parsed, each value shown to `keep` as it ends (false: left out of the result); nothing
// nested deeper than `depth_limit`; `count` (where given) sees every event first.
Json parse(std::string_view text, int depth_limit = max_depth,
           const std::function<bool(int depth, Json &value)> &keep = {},
           LimitCounter *count = nullptr) {
  try {
    return Json::parse(text.begin(), text.end(),
                       [&](int depth, Json::parse_event_t event, Json &value) {
                         if (depth > depth_limit)
                           throw ParseError("nested deeper than " + std::to_string(depth_limit) +
                                            " levels: not a snapshot");
                         if (count)
                           (*count)(depth, event, value);
                         if (keep && event == Json::parse_event_t::object_end)
                           return keep(depth, value);
                         return true;
                       });
  } catch (const Json::parse_error &error) {
    // The library's message quotes the bytes it read, which may be anything: only say where.
    throw ParseError("not JSON: syntax error at byte " + std::to_string(error.byte));
  } catch (const Json::exception &) {
    throw ParseError("not JSON: a number out of range");
  }
}

Snapshot read_snapshot(const Json &root, const std::string &where);

} // namespace

Snapshot read_json_log_line(std::string_view line, const SnapshotLimits &limits) {
  LimitCounter count(limits);
  return read_snapshot(parse(line, max_depth, {}, &count), "");
}

ServeHistoryRead read_serve_history(std::string_view body,
                                    const std::function<void(Snapshot)> &take) {
  // {"schema":..,"interval_seconds":..,"history_seconds":..,"samples":[{"received":T,
  // "snapshot":{..}},..]}: each sample (depth 2) read and let go of as it ends, so that an hour
  // of samples is never held as one tree.
  ServeHistoryRead read;
  Json root = parse(body, max_depth + 2, [&](int depth, Json &value) {
    if (depth != 2)
      return true;
    std::string where = "samples[" + std::to_string(read.samples) + "]";
    Members in(object_at(value, where), where + ".");
    const Json *snapshot = in.find("snapshot");
    if (!snapshot)
      throw ParseError(where + ".snapshot: expected a snapshot");
    take(read_snapshot(*snapshot, where + ".snapshot."));
    ++read.samples;
    return false;
  });
  if (!root.is_object())
    throw ParseError("not a JSON object");
  Members in(root, "");
  const Json *schema = in.find("schema");
  if (!schema || !schema->is_string() || *schema != "nvsmi-agent.history/1")
    throw ParseError("not an nvsmi-agent.history/1 document (schema)");
  if (RealReading seconds = in.real("history_seconds"))
    read.history_seconds = *seconds;
  return read;
}

namespace {

Snapshot read_snapshot(const Json &root, const std::string &where) {
  if (!root.is_object())
    throw ParseError(where.empty() ? "not a JSON object" : where + " expected an object");
  Members in(root, where);
  const Json *schema = in.find("schema");
  if (!schema || !schema->is_string() || *schema != "nvsmi-agent.snapshot/1")
    throw ParseError(where + (where.empty() ? "" : "schema: ") +
                     "not an nvsmi-agent.snapshot/1 line (schema)");

  Snapshot snapshot;
  if (Text stamp = in.text("timestamp"))
    snapshot.timestamp = parse_iso8601_timestamp(*stamp);
  snapshot.driver_version = in.text("driver_version");
  snapshot.cuda_version = in.text("cuda_version");
  const Json *gpus = in.list("gpus");
  if (!gpus)
    throw ParseError("gpus: expected a list");
  for (std::size_t i = 0; i < gpus->size(); ++i)
    snapshot.gpus.push_back(read_gpu((*gpus)[i], where + "gpus[" + std::to_string(i) + "]"));
  for (const Json &gpu : *gpus)
    if (gpu.is_object() && gpu.contains("allocation"))
      snapshot.allocations_read = true;
  if (const Json *host = in.find("host")) {
    Members host_in(object_at(*host, where + "host"), where + "host.");
    snapshot.host.emplace();
    snapshot.host->hostname = host_in.text("hostname");
    snapshot.host->cpu_count = host_in.whole("cpu_count");
    snapshot.host->cpu_percent = host_in.real("cpu_percent");
    snapshot.host->load1 = host_in.real("load1");
    snapshot.host->memory_total_mib = host_in.whole("memory_total_mib");
    snapshot.host->memory_used_mib = host_in.whole("memory_used_mib");
    snapshot.host->disk_read_bytes_per_second = host_in.real("disk_read_bytes_per_second");
    snapshot.host->disk_write_bytes_per_second = host_in.real("disk_write_bytes_per_second");
    snapshot.host->network_receive_bytes_per_second =
        host_in.real("network_receive_bytes_per_second");
    snapshot.host->network_send_bytes_per_second = host_in.real("network_send_bytes_per_second");
  }
  return snapshot;
}

} // namespace

} // namespace nvsmi
