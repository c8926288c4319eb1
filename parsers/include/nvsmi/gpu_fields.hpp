// The one declarative table of a GPU's scalar readings: each field once, with where every reader
// finds it and every output puts it. The CSV and XML readers, the JSON format, the CSV log, the
// Prometheus gauges, serve's history and the JSON-log reader walk this table, so that a new field
// is a member of Gpu or GpuHealth, an entry in gpu_fields.cpp and a test (docs/ARCHITECTURE.md).
//
// It holds the GPU's own readings (temperature, memory, utilization, power, fan, performance
// state, clocks) and the scalar health readings. A reading that moves every sample is kept by
// serve's history in a slot of the sample's own (`History::own_slot`); one that seldom changes in
// the health block that samples share while it stays the same.
//
// Not in it, and read and written by hand where they are:
// - what identifies a GPU (index, UUID, name, bus id) and what is not one scalar: processes, MIG
//   devices, the clock event reasons (NVML's bitmasks and the per-reason columns), ECC counts
//   summed over locations (the JSON's nested ecc_errors), the retired-page and remapped-row
//   objects, the PCIe link's generation read from one of two columns;
// - how a reading is found where nvidia-smi has several candidates for it: the power draw and
//   limit (the first known of several columns or elements: their entries have no CSV or XML name
//   the readers use), and the recovery action that older drivers' gpu_reset_status stands in for;
// - the legacy format, the table for people and `top`, which show only what their layouts have
//   room for.
#pragma once

#include "nvsmi/quantity.hpp"
#include "nvsmi/snapshot.hpp"

#include <optional>
#include <string_view>
#include <type_traits>
#include <vector>

namespace nvsmi {

enum class FieldKind { integer, real, text };

// Where the field lives: a member of Gpu, of its Clocks, of its GpuHealth, or none (`derived`: a
// figure worked out from other fields, written by the outputs and read by none).
enum class FieldPart { gpu, clocks, health, derived };

// Where the JSON snapshot puts a field: among the GPU's own members (after pci_bus_id), in its
// "clocks_mhz" object, at the end of its "health" object, or in that object's "pcie" object after
// the link's hand-written keys.
enum class JsonPlace { gpu, gpu_clocks, health, health_pcie };

// How serve's history keeps a field: `shared` with the health block, one copy for all the samples
// that have the same block (readings that seldom change: health fields only), or in a slot of the
// sample's own (`own_slot`, readings that move every sample, which would otherwise cost a block
// per sample; every field that is not a health field).
enum class History { shared, own_slot };

struct GpuField {
  FieldKind kind = FieldKind::integer;
  FieldPart part = FieldPart::gpu;
  // Where it lives, by part and kind; the others are null. Reached through the accessors below.
  Reading Gpu::*gpu_integer = nullptr;
  RealReading Gpu::*gpu_real = nullptr;
  Text Gpu::*gpu_text = nullptr;
  Reading Clocks::*clock = nullptr;
  Reading GpuHealth::*health_integer = nullptr;
  Text GpuHealth::*health_text = nullptr;
  RealReading (*derived)(const Gpu &) = nullptr;
  Unit unit = Unit::none; // the unit nvidia-smi prints after it (XML, CSV header)

  // Key in the JSON snapshot's object at json_place (and read back by `report`).
  std::string_view json_key;
  JsonPlace json_place = JsonPlace::gpu;
  // The CSV column name: nvidia-smi's --query-gpu name where it has one, else the agent's own
  // (then only its CSV log carries it). `csv_alias`: an older name nvidia-smi still takes, which
  // scripts and recordings use ("clocks.gr"). Empty: not read from CSV under that name.
  std::string_view csv_name, csv_alias;
  // Whether the CSV reader reads the column by csv_name: false where the reader picks the reading
  // from several columns by hand (the power draw and limit), or for a derived field.
  bool csv_read = true;
  // Whether query_fields() asks nvidia-smi for it after the names it has always asked for in a
  // fixed order (headerless recordings depend on that order: csv_reader.cpp), which hold the
  // GPU's own readings. An older driver refuses the whole query for one name it does not know,
  // so only names every supported driver knows are asked for.
  bool csv_asked = false;
  // The agent's CSV log: the column's place among the GPU's readings (1 first), 0 for none. The
  // host's columns (host_log_columns) sit after column csv_log_host_after.
  int csv_log_column = 0;
  // Under <gpu> in `nvidia-smi -q -x`: `xml_parent`/`xml_leaf`, or `xml_leaf` alone where
  // xml_parent is empty. An empty leaf: read by hand in xml_reader.cpp.
  const char *xml_parent = "";
  const char *xml_leaf = "";
  // Prometheus: a family per name, one series per GPU, the value in the family's base unit
  // (prometheus_value). Fields next to each other with the same name are one family, their
  // series told apart by the label `prometheus_label`="`prometheus_label_value`". Empty: none.
  const char *prometheus_name = "";
  const char *prometheus_help = "";
  const char *prometheus_type = "gauge";
  const char *prometheus_label = "";
  const char *prometheus_label_value = "";
  // A derived field's figure in the family's base unit where it is finer than the field's own
  // (used / total as it is, where the JSON's percent is rounded); null: prometheus_value of it.
  std::optional<double> (*prometheus_derived)(const Gpu &) = nullptr;
  History history = History::own_slot;
  // A reading every GPU nvidia-smi can read has (temperature, memory, utilization): when each of
  // them and the GPU's identity say "Unknown Error", the GPU is lost (parsers' lost_gpu.hpp).
  bool core = false;

  // The reading in `gpu`, for writing into it (not for a derived field).
  Reading &integer_in(Gpu &gpu) const { return integer_of(gpu); }
  RealReading &real_in(Gpu &gpu) const { return gpu.*gpu_real; }
  Text &text_in(Gpu &gpu) const { return text_of(gpu); }
  const Reading &integer_in(const Gpu &gpu) const { return integer_of(gpu); }
  const Text &text_in(const Gpu &gpu) const { return text_of(gpu); }
  // Whether it is a health reading that seldom changes (History::shared): its latest reading says
  // something of a whole log, which `report` shows; one that moves every sample does not.
  bool settled_health() const { return history == History::shared; }
  // The reading as a number in its unit, for either kind of number; nullopt where unknown.
  std::optional<double> number_in(const Gpu &gpu) const;
  // Calls `use` with the field's reading in `gpu`: a const Reading, RealReading or Text.
  template <typename Use> void with_reading(const Gpu &gpu, Use &&use) const {
    switch (kind) {
    case FieldKind::integer:
      use(integer_in(gpu));
      break;
    case FieldKind::real:
      use(part == FieldPart::derived ? derived(gpu) : gpu.*gpu_real);
      break;
    case FieldKind::text:
      use(text_in(gpu));
      break;
    }
  }

private:
  template <typename G>
  std::conditional_t<std::is_const_v<G>, const Text, Text> &text_of(G &gpu) const {
    return part == FieldPart::health ? gpu.health.*health_text : gpu.*gpu_text;
  }
  template <typename G>
  std::conditional_t<std::is_const_v<G>, const Reading, Reading> &integer_of(G &gpu) const {
    return part == FieldPart::health   ? gpu.health.*health_integer
           : part == FieldPart::clocks ? gpu.clocks.*clock
                                       : gpu.*gpu_integer;
  }
};

// The CSV log's host columns (host_log_columns) follow this column of the GPU's.
inline constexpr int csv_log_host_after = 11;

// One of the CSV log's host columns: its name, the unit its header shows and its value may carry,
// and the Host member it holds (a real or a whole reading), the same on every row of a sample. The
// CSV format writes them, report's CSV-log reader reads them back.
struct HostLogColumn {
  const char *name, *symbol;
  Unit unit;
  RealReading Host::*real = nullptr;
  Reading Host::*whole = nullptr;
};
// In the log's order. Every earlier agent's log has the first earlier_host_log_columns of them.
inline const std::vector<HostLogColumn> host_log_columns = {
    {"host.cpu", "%", Unit::percent, &Host::cpu_percent},
    {"host.memory.used", "MiB", Unit::mib, nullptr, &Host::memory_used_mib},
    {"host.disk.read", "B/s", Unit::none, &Host::disk_read_bytes_per_second},
    {"host.disk.write", "B/s", Unit::none, &Host::disk_write_bytes_per_second},
    {"host.network.receive", "B/s", Unit::none, &Host::network_receive_bytes_per_second},
    {"host.network.send", "B/s", Unit::none, &Host::network_send_bytes_per_second},
};
inline constexpr std::size_t earlier_host_log_columns = 2;
// How many of the GPU's logged columns the log had when all the host's columns came (the disk and
// network ones): a log with all of them and fewer of the GPU's is an earlier agent's too.
inline constexpr std::size_t all_host_log_columns_since = 12;

// In the order the JSON and /metrics write them (each at its place).
const std::vector<GpuField> &gpu_fields();

// The table's fields the CSV log writes, in its column order.
const std::vector<const GpuField *> &csv_logged_fields();

// A number in nvidia-smi's unit as Prometheus's base unit: MiB as bytes, percent as a ratio (0-1),
// MHz as hertz, KiB/s as bytes per second; the others as they are.
double prometheus_value(Unit unit, double value);

// The table's entry for a member (of Gpu, of its Clocks or of its GpuHealth), for an output that
// names readings by member (serve's DCGM names: formats/prometheus_dcgm.cpp). Throws
// std::logic_error for a member the table does not have.
const GpuField &gpu_field(Reading Gpu::*member);
const GpuField &gpu_field(RealReading Gpu::*member);
const GpuField &gpu_field(Reading Clocks::*member);
const GpuField &gpu_field(Reading GpuHealth::*member);

// Whether two GPUs' readings of every field of the table that serve's history shares
// (History::shared, health fields) are the same: those kept in slots of their own may differ.
bool same_field_readings(const GpuHealth &a, const GpuHealth &b);

// How many fields of the table of a kind serve's history keeps in slots of their own
// (History::own_slot), and the slot of one of them among those of its kind, in the table's order.
std::size_t own_slot_field_count(FieldKind kind);
// Throws std::logic_error for a member that is not such a field.
std::size_t own_slot_of(Reading Gpu::*member);
std::size_t own_slot_of(RealReading Gpu::*member);

} // namespace nvsmi
