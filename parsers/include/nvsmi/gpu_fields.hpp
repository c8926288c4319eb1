// The one declarative table of a GPU's scalar health readings: each field once, with where every
// reader finds it and every output puts it. The CSV and XML readers, the JSON format, the CSV log,
// the Prometheus gauges, serve's history and the JSON-log reader walk this table, so that a new
// field is a member of GpuHealth, an entry in gpu_fields.cpp and a test (docs/ARCHITECTURE.md).
//
// A reading that moves every sample (the PCIe throughput) is a field like any other: its
// `history` says that serve's history keeps it in a slot of its own per sample rather than in the
// health block that samples share while it stays the same.
//
// Not in it, and read and written by hand where they are:
// - what is not one scalar: processes, MIG devices, the clock event reasons (NVML's bitmasks and
//   the per-reason columns), ECC counts summed over locations (the JSON's nested ecc_errors),
//   the retired-page and remapped-row objects, the PCIe generation read from one of two columns,
//   the power draw and limit read from the first known of several columns or elements, the
//   recovery action that older drivers' gpu_reset_status stands in for;
// - the GPU's own readings, members of Gpu rather than GpuHealth (pstate, temperature, memory,
//   utilization, power, fan, clocks): each output writes them in an order of its own that
//   predates the table (the JSON's, the CSV log's fixed first columns, /metrics' gauges with a
//   ratio divided by 100), the CSV reader knows their older names (clocks.gr, gpu_name), and the
//   dashboard's series read them from CompactGpu::numbers by position. Moving them needs a
//   pointer kind for Gpu members and a per-output position in this table (issue 24, item 3);
// - the legacy format, the table for people and `top`, which show only what their layouts have
//   room for.
#pragma once

#include "nvsmi/quantity.hpp"
#include "nvsmi/snapshot.hpp"

#include <string_view>
#include <vector>

namespace nvsmi {

enum class FieldKind { integer, text };

// Where the JSON snapshot puts a field: at the end of the GPU's "health" object, or in its "pcie"
// object after the link's hand-written keys.
enum class JsonPlace { health, health_pcie };

// How serve's history keeps a field: `shared` with the health block, one copy for all the samples
// that have the same block (readings that seldom change), or in a slot of the sample's own
// (`own_slot`, readings that move every sample, which would otherwise cost a block per sample).
enum class History { shared, own_slot };

struct GpuField {
  FieldKind kind;
  Reading GpuHealth::*integer; // where an integer field lives; nullptr for a text field
  Text GpuHealth::*text;       // where a text field lives; nullptr for an integer field
  Unit unit;                   // the unit nvidia-smi prints after it (XML, CSV header)

  // Key in the GPU's "health" object of the JSON snapshot (and read back by `report`).
  std::string_view json_key;
  // The CSV column name: nvidia-smi's --query-gpu name where it has one, else the agent's own
  // (then only its CSV log carries it). Empty: not read from CSV.
  std::string_view csv_name;
  // Whether query_fields() asks nvidia-smi for it: an older driver refuses the whole query for one
  // name it does not know, so only names every supported driver knows are asked for.
  bool csv_asked;
  // Whether the agent's CSV log has a column for it (after the host's, in this table's order).
  bool csv_logged;
  // Under <gpu> in `nvidia-smi -q -x`: `xml_parent`/`xml_leaf`, or `xml_leaf` alone where
  // xml_parent is empty. An empty leaf: read by hand in xml_reader.cpp.
  const char *xml_parent;
  const char *xml_leaf;
  // Prometheus: a family per field, one series per GPU, value times `scale`. Empty name: none.
  const char *prometheus_name;
  const char *prometheus_help;
  const char *prometheus_type; // "gauge" or "counter"
  double scale;
  JsonPlace json_place;
  History history;
};

// In the order the JSON, the CSV log and /metrics write them.
const std::vector<GpuField> &gpu_fields();

// Whether two GPUs' readings of every field of the table that serve's history shares
// (History::shared) are the same: those kept in slots of their own may differ.
bool same_field_readings(const GpuHealth &a, const GpuHealth &b);

// How many fields of the table serve's history keeps in slots of their own (History::own_slot).
std::size_t own_slot_field_count();

} // namespace nvsmi
