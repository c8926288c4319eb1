#include "nvsmi/xml_reader.hpp"

#include "lost_gpu.hpp"

#include "nvsmi/gpu_fields.hpp"
#include "nvsmi/pci_address.hpp"
#include "nvsmi/quantity.hpp"
#include "nvsmi/reading_parts.hpp"
#include "nvsmi/stream_readings.hpp"
#include "nvsmi/timestamp.hpp"

#include <pugixml.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <iterator>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace nvsmi {
namespace {

// One element and the way to it. Its path ("nvidia_smi_log/gpu[2]/fb_memory_usage") is spelled
// out only for an error message, so that reading a value allocates nothing.
class Element {
public:
  Element(pugi::xml_node node, const char *name, const Element *parent = nullptr, int position = -1)
      : node_(node), name_(name), parent_(parent), position_(position) {}
  // A copy lists its children again if the original lists them: copying the list would cost
  // more.
  Element(const Element &other)
      : node_(other.node_), name_(other.name_), parent_(other.parent_), position_(other.position_),
        listed_(other.listed_ > capacity ? other.listed_ : unlisted) {}
  Element &operator=(const Element &other) {
    node_ = other.node_;
    name_ = other.name_;
    parent_ = other.parent_;
    position_ = other.position_;
    listed_ = other.listed_ > capacity ? other.listed_ : unlisted;
    return *this;
  }

  pugi::xml_node node() const { return node_; }
  explicit operator bool() const { return static_cast<bool>(node_); }
  Element child(const char *name) const { return {find(name), name, this}; }
  // The same, listing its children on its first lookup, for an element asked many times.
  Element listed_child(const char *name) const {
    Element element(find(name), name, this);
    element.listed_ = unlisted;
    return element;
  }
  // Calls `visit` for every child named `name`, numbered in the path: "gpu[2]".
  template <typename Visit> void each(const char *name, Visit visit) const {
    int position = 0;
    for (pugi::xml_node node : node_.children(name)) {
      Element element(node, name, this, position++);
      element.listed_ = unlisted;
      visit(element);
    }
  }

  std::string_view raw(const char *name) const { return find(name).child_value(); }
  Text text(const char *name) const { return parse_text(raw(name)); }
  Reading integer(const char *name, Unit unit) const { return integer_of(find(name), name, unit); }
  std::optional<bool> flag(const char *name, std::string_view yes, std::string_view no) const {
    try {
      return parse_flag(raw(name), yes, no, name);
    } catch (const ParseError &error) {
      throw ParseError(path() + "/" + error.what());
    }
  }
  std::optional<bool> yes_no(const char *name) const { return flag(name, "Yes", "No"); }
  // The same as a part of a whole (nvsmi/reading_parts.hpp): nullopt where the element is absent
  // (this driver has no such part), else its reading.
  Part<std::int64_t> integer_part(const char *name, Unit unit) const {
    if (pugi::xml_node node = find(name))
      return integer_of(node, name, unit);
    return std::nullopt;
  }
  Part<bool> yes_no_part(const char *name) const {
    if (find(name))
      return yes_no(name);
    return std::nullopt;
  }
  // The same of a child in hand, as a walk of the children has it: looking it up again by its
  // name cost a strcmp for every child before it.
  std::optional<bool> flag_of(pugi::xml_node child, std::string_view yes,
                              std::string_view no) const {
    try {
      return parse_flag(child.child_value(), yes, no, child.name());
    } catch (const ParseError &error) {
      throw ParseError(path() + "/" + error.what());
    }
  }
  // The first known reading among elements that replaced one another across drivers.
  RealReading first_real(std::initializer_list<const char *> names, Unit unit) const {
    try {
      for (const char *name : names)
        if (auto value = parse_real(raw(name), unit, UnitPolicy::required, name))
          return value;
    } catch (const ParseError &error) {
      throw ParseError(path() + "/" + error.what());
    }
    return std::nullopt;
  }

private:
  Reading integer_of(pugi::xml_node node, const char *name, Unit unit) const {
    try {
      return parse_integer(node.child_value(), unit, UnitPolicy::required, name);
    } catch (const ParseError &error) {
      throw ParseError(path() + "/" + error.what());
    }
  }

  // The first child named `name`, as pugi::xml_node::child finds it. An element from each() (a
  // <gpu>, a process, a MIG device) lists its children on the first lookup, and the list is
  // searched by the names' first two bytes before comparing the rest: a <gpu> has some 60 to 70
  // children, looked up about 40 times, and pugixml's child() calls strcmp for every child it
  // passes. Other elements are asked once or twice: listing would cost more.
  pugi::xml_node find(const char *name) const {
    if (listed_ == unlisted)
      list_children();
    if (listed_ > capacity)
      return node_.child(name);
    for (int i = 0; i < listed_; ++i) {
      const char *candidate = names_[i];
      // name is never empty, so a candidate that matches its first byte has a second.
      if (candidate[0] == name[0] && candidate[1] == name[1] && std::strcmp(candidate, name) == 0)
        return pugi::xml_node(nodes_[i]);
    }
    return {};
  }
  void list_children() const {
    listed_ = 0;
    for (pugi::xml_node child = node_.first_child(); child; child = child.next_sibling()) {
      if (listed_ == capacity) {
        listed_ = capacity + 1; // too many: looked up in pugixml's list
        return;
      }
      names_[listed_] = child.name();
      nodes_[listed_++] = child.internal_object();
    }
  }

  std::string path() const {
    std::string out = parent_ ? parent_->path() + "/" + name_ : std::string(name_);
    if (position_ >= 0)
      out += "[" + std::to_string(position_) + "]";
    return out;
  }

  pugi::xml_node node_;
  const char *name_;
  const Element *parent_;
  int position_;
  // The children's names and nodes in document order, once listed (not initialized before);
  // `listed_` is their count, `unlisted` before the first lookup, over `capacity` for pugixml's.
  static constexpr int capacity = 128, unlisted = -1;
  mutable int listed_ = capacity + 1;
  mutable const char *names_[capacity];
  mutable pugi::xml_node_struct *nodes_[capacity];
};

void read_memory(const Element &usage, Reading &total, Reading &used, Reading &free) {
  total = usage.integer("total", Unit::mib);
  used = usage.integer("used", Unit::mib);
  free = usage.integer("free", Unit::mib);
}

std::vector<MigDevice> read_mig_devices(const Element &list) {
  std::vector<MigDevice> devices;
  list.each("mig_device", [&](const Element &device) {
    MigDevice mig;
    mig.index = device.integer("index", Unit::none);
    mig.gpu_instance_id = device.integer("gpu_instance_id", Unit::none);
    mig.compute_instance_id = device.integer("compute_instance_id", Unit::none);
    read_memory(device.child("fb_memory_usage"), mig.memory_total_mib, mig.memory_used_mib,
                mig.memory_free_mib);
    devices.push_back(std::move(mig));
  });
  return devices;
}

std::vector<Process> read_processes(const Element &list) {
  std::vector<Process> processes;
  list.each("process_info", [&](const Element &info) {
    Process process;
    process.pid = info.integer("pid", Unit::none);
    // Only a type nvidia-smi documents (C, G, C+G, ...); any other text is unknown.
    if (Text type = info.text("type"))
      process.type = process_type(*type);
    process.name = info.text("process_name");
    process.used_memory_mib = info.integer("used_memory", Unit::mib);
    process.gpu_instance_id = info.integer("gpu_instance_id", Unit::none);
    process.compute_instance_id = info.integer("compute_instance_id", Unit::none);
    processes.push_back(std::move(process));
  });
  return processes;
}

// Drivers before 535 say clocks_throttle_reasons/clocks_throttle_reason_X, later ones
// clocks_event_reasons/clocks_event_reason_X; both list each reason as "Active" or "Not Active".
// A reason whose value is unknown is neither reported nor active; none known leaves both nullopt.
void read_clock_reasons(const Element &gpu, Gpu &out) {
  struct Naming {
    const char *block, *prefix;
  };
  for (Naming naming : {Naming{"clocks_event_reasons", "clocks_event_reason_"},
                        Naming{"clocks_throttle_reasons", "clocks_throttle_reason_"}}) {
    Element block = gpu.child(naming.block);
    if (!block)
      continue;
    std::vector<std::string> reported, active;
    // Room for the reasons a driver lists (about a dozen), rather than growing five times.
    reported.reserve(16);
    std::size_t prefix_length = std::strlen(naming.prefix);
    for (pugi::xml_node reason : block.node().children()) {
      std::string_view name = reason.name();
      if (name.compare(0, prefix_length, naming.prefix) != 0)
        continue;
      std::optional<bool> on = block.flag_of(reason, "Active", "Not Active");
      if (!on)
        continue;
      reported.emplace_back(name.substr(prefix_length));
      if (*on)
        active.emplace_back(name.substr(prefix_length));
    }
    if (!reported.empty()) {
      out.clock_event_reasons_reported = std::move(reported);
      out.clock_event_reasons_active = std::move(active);
    }
    return;
  }
}

// One scope (ecc_errors/volatile or /aggregate). Only its own children are read: a MIG device's
// ecc_error_count repeats the names sram_uncorrectable etc. deeper down, for its slice only.
EccErrorCounts read_ecc_scope(const Element &scope) {
  EccErrorCounts counts;
  if (Element single = scope.child("single_bit")) {
    // Before Turing: per unit, with nvidia-smi's own total.
    counts.corrected = single.integer("total", Unit::none);
    counts.uncorrected = scope.child("double_bit").integer("total", Unit::none);
    return counts;
  }
  // The locations this driver prints; one of them N/A makes the count unknown, never the sum of
  // the others.
  counts.corrected = sum_of_parts({scope.integer_part("sram_correctable", Unit::none),
                                   scope.integer_part("dram_correctable", Unit::none)});
  // 570 and later split SRAM's uncorrectable count into parity and SEC-DED. Not
  // sram_threshold_exceeded (a flag) nor aggregate_uncorrectable_sram_sources (the same errors
  // again, by where they happened).
  counts.uncorrected = sum_of_parts({scope.integer_part("sram_uncorrectable", Unit::none),
                                     scope.integer_part("sram_uncorrectable_parity", Unit::none),
                                     scope.integer_part("sram_uncorrectable_secded", Unit::none),
                                     scope.integer_part("dram_uncorrectable", Unit::none)});
  return counts;
}

// gpu_recovery_action where the driver has it (570 and later); before it, 535's
// gpu_reset_status in the words of the action it stands for.
Text read_recovery_action(const Element &gpu) {
  Element status = gpu.child("gpu_reset_status");
  std::optional<bool> reset = status.yes_no("reset_required");
  std::optional<bool> drain = status.yes_no("drain_and_reset_recommended");
  if (Text action = gpu.text("gpu_recovery_action"))
    return action;
  if (reset.value_or(false))
    return std::string("GPU Reset Required");
  if (drain.value_or(false))
    return std::string("Drain and Reset");
  if (reset && drain)
    return std::string("None");
  return std::nullopt; // one of the two unknown: "None" would be a guess
}

GpuHealth read_health(const Element &gpu) {
  GpuHealth health;
  Element mode = gpu.child("ecc_mode");
  health.ecc_enabled = mode.flag("current_ecc", "Enabled", "Disabled");
  health.ecc_pending_enabled = mode.flag("pending_ecc", "Enabled", "Disabled");
  Element ecc = gpu.child("ecc_errors");
  // Seven lookups each among some ten children.
  health.ecc_volatile = read_ecc_scope(ecc.listed_child("volatile"));
  health.ecc_aggregate = read_ecc_scope(ecc.listed_child("aggregate"));

  Element retired = gpu.child("retired_pages");
  health.retired_pages_single_bit =
      retired.child("multiple_single_bit_retirement").integer("retired_count", Unit::none);
  health.retired_pages_double_bit =
      retired.child("double_bit_retirement").integer("retired_count", Unit::none);
  // 418 has only pending_retirement; later drivers print pending_blacklist beside it: pending
  // where either says so, not pending only where both that are printed say no.
  health.retired_pages_pending = any_of_parts(
      {retired.yes_no_part("pending_retirement"), retired.yes_no_part("pending_blacklist")});

  // A container on GPUs that remap rows, a bare "N/A" on the others: its children then read as
  // absent.
  Element remapped = gpu.child("remapped_rows");
  health.remapped_rows_correctable = remapped.integer("remapped_row_corr", Unit::none);
  health.remapped_rows_uncorrectable = remapped.integer("remapped_row_unc", Unit::none);
  health.remapped_rows_pending = remapped.yes_no("remapped_row_pending");
  health.remapped_rows_failure = remapped.yes_no("remapped_row_failure");

  Element pci = gpu.child("pci");
  Element link = pci.child("pci_gpu_link_info");
  Element gen = link.child("pcie_gen");
  health.pcie_link_gen = gen.integer("current_link_gen", Unit::none);
  // The most this GPU in this host can train at (525 adds the GPU's and the host's own).
  health.pcie_link_gen_max = gen.integer("max_link_gen", Unit::none);
  Element widths = link.child("link_widths");
  health.pcie_link_width = widths.integer("current_link_width", Unit::lanes);
  health.pcie_link_width_max = widths.integer("max_link_width", Unit::lanes);

  health.recovery_action = read_recovery_action(gpu);
  return health;
}

// The element that holds a field of the table in a <gpu>: the GPU's own, or its child named by the
// field's xml_parent. Fields of one parent mostly sit together in the table, so the child is
// looked up again only where the parent changes.
class FieldParents {
public:
  explicit FieldParents(const Element &gpu) : gpu_(gpu) {}
  const Element &of(const GpuField &field) {
    if (field.xml_parent != name_ && std::strcmp(field.xml_parent, name_) != 0) {
      name_ = field.xml_parent;
      parent_ = *name_ == '\0' ? &gpu_ : &held_.emplace(gpu_.child(name_));
    }
    return *parent_;
  }

private:
  const Element &gpu_;
  const char *name_ = "";
  const Element *parent_ = &gpu_; // the GPU's own, whose children are listed once, or `held_`
  std::optional<Element> held_;
};

// The field table's leaves, into whichever part of the GPU holds each. Ada on 595 gives only
// offsets from T.Limit (gpu_temp_slow_tlimit_threshold ...), from which no absolute temperature
// follows: the thresholds stay nullopt there.
void read_table_fields(const Element &gpu, Gpu &out) {
  FieldParents parents(gpu);
  for (const GpuField &field : gpu_fields()) {
    if (*field.xml_leaf == '\0')
      continue;
    const Element &parent = parents.of(field);
    if (field.kind == FieldKind::integer)
      field.integer_in(out) = parent.integer(field.xml_leaf, field.unit);
    else if (field.kind == FieldKind::real)
      field.real_in(out) = parent.first_real({field.xml_leaf}, field.unit);
    else
      field.text_in(out) = parent.text(field.xml_leaf);
  }
}

// The field table's children of <gpu> that read_by_read_gpu's own list lacks, found once: it is
// asked of every child of every <gpu>, and walking the whole table there was a cost per field.
// Apart from it, and without std::find: GCC inlines read_by_read_gpu's std::find over its
// constant list (sizes compared first, each memcmp of a known length) only while it has the one
// caller; out of line it cost the XML reader 2 % more instructions.
const std::vector<std::string_view> &table_only_children(const std::string_view *read_begin,
                                                         const std::string_view *read_end) {
  static const std::vector<std::string_view> names = [&] {
    std::vector<std::string_view> out;
    for (const GpuField &field : gpu_fields()) {
      std::string_view child = *field.xml_parent == '\0' ? field.xml_leaf : field.xml_parent;
      bool listed = child.empty();
      for (const std::string_view *read = read_begin; read != read_end && !listed; ++read)
        listed = *read == child;
      for (std::string_view name : out)
        listed = listed || name == child;
      if (!listed)
        out.push_back(child);
    }
    return out;
  }();
  return names;
}

// The children of <gpu> that read_gpu looks at: lost_reason looks for a marker under these alone.
bool read_by_read_gpu(std::string_view name) {
  static constexpr std::string_view read[] = {"pci",
                                              "uuid",
                                              "ecc_mode",
                                              "ecc_errors",
                                              "retired_pages",
                                              "remapped_rows",
                                              "gpu_reset_status",
                                              "gpu_recovery_action",
                                              "clocks",
                                              "mig_mode",
                                              "fan_speed",
                                              "processes",
                                              "temperature",
                                              "utilization",
                                              "mig_devices",
                                              "product_name",
                                              "power_readings",
                                              "fb_memory_usage",
                                              "performance_state",
                                              "gpu_power_readings",
                                              "clocks_event_reasons",
                                              "clocks_throttle_reasons"};
  if (std::find(std::begin(read), std::end(read), name) != std::end(read))
    return true;
  for (std::string_view child : table_only_children(std::begin(read), std::end(read)))
    if (child == name)
      return true;
  return false;
}

Reading kib_as_bytes(Reading kib, const char *name) {
  if (kib && *kib > std::numeric_limits<std::int64_t>::max() / 1024)
    throw ParseError(std::string(name) + ": number out of range");
  return kib ? Reading(*kib * 1024) : std::nullopt;
}

Gpu read_gpu(const Element &gpu, int index) {
  Gpu out;
  out.index = index;
  out.name = gpu.text("product_name");
  out.uuid = gpu.text("uuid");
  // v10 files can lack <pci>, and a lost GPU's reads `[GPU is lost]`: the <gpu id="..."> attribute
  // holds the same bus id, taken only where it is one (never a guess from other text).
  Element pci = gpu.child("pci");
  out.pci_bus_id = pci.text("pci_bus_id");
  if (!out.pci_bus_id) {
    Text id = parse_text(gpu.node().attribute("id").value());
    if (id && parse_pci_address(*id))
      out.pci_bus_id = id;
  }
  // The GPU's own power, never <module_power_readings> (the whole module's, on Grace-Hopper).
  Element power = gpu.child("gpu_power_readings");
  if (!power)
    power = gpu.child("power_readings");
  out.power_draw_w =
      power.first_real({"power_draw", "average_power_draw", "instant_power_draw"}, Unit::watt);
  out.power_limit_w =
      power.first_real({"current_power_limit", "enforced_power_limit", "power_limit"}, Unit::watt);
  // The traffic the agent keeps in bytes per second, which dmon gives in MiB/s: the XML's "KB/s"
  // is nvidia-smi's KiB/s.
  out.pcie_tx_bytes_per_second = kib_as_bytes(pci.integer("tx_util", Unit::kib_per_s), "tx_util");
  out.pcie_rx_bytes_per_second = kib_as_bytes(pci.integer("rx_util", Unit::kib_per_s), "rx_util");

  if (Text mig = gpu.child("mig_mode").text("current_mig"))
    out.mig_enabled = *mig == "Enabled";
  // An absent list is unknown (old schemas); a present, empty one means there are none.
  if (Element list = gpu.child("mig_devices"))
    out.mig_devices = read_mig_devices(list);
  if (Element list = gpu.child("processes"))
    out.processes = read_processes(list);
  read_clock_reasons(gpu, out);
  out.health = read_health(gpu);
  read_table_fields(gpu, out);
  return out;
}

// Hands every value at or under an element (its own, and each descendant's) to the evidence.
// pugixml's walk is a loop, not a recursion: a document nested a million deep costs no stack.
class ValueWalker : public pugi::xml_tree_walker {
public:
  explicit ValueWalker(detail::LostEvidence &evidence) : evidence_(evidence) {}
  bool begin(pugi::xml_node &node) override { return for_each(node); }
  bool for_each(pugi::xml_node &node) override {
    if (node.type() == pugi::node_element)
      evidence_.reading(node.child_value());
    return true;
  }

private:
  detail::LostEvidence &evidence_;
};

// Whether nvidia-smi says in this <gpu>'s readings that the GPU itself is gone; kept apart from
// read_gpu, which reads each value for what it is. Like the CSV reader, which looks at every
// column it asked for, "GPU is lost" in any reading the reader knows marks the GPU: every value
// under the children read_gpu reads, but never a process's:
// its name is whatever its owner chose, and an unprivileged user's process called
// "[GPU is lost]" must not take a GPU out of service.
// `any_marker`: whether the document could hold a message at all (detail::may_hold_lost_marker);
// where it cannot, only the core readings are looked at, for "Unknown Error".
Text lost_reason(const Element &gpu, bool any_marker) {
  detail::LostEvidence evidence;
  for (const char *name : {"product_name", "uuid"})
    evidence.core_reading(gpu.raw(name));
  // The table's core readings.
  FieldParents parents(gpu);
  for (const GpuField &field : gpu_fields())
    if (field.core)
      evidence.core_reading(parents.of(field).raw(field.xml_leaf));
  if (!any_marker)
    return evidence.reason();
  for (pugi::xml_node child : gpu.node().children())
    if (child.type() == pugi::node_element && read_by_read_gpu(child.name()) &&
        std::strcmp(child.name(), "processes") != 0) {
      ValueWalker walker(evidence);
      child.traverse(walker);
    }
  return evidence.reason();
}

// pugixml decodes a character reference to U+0000 into a NUL byte, and its strings end at the
// first NUL: "GPU&#0;X" would become the name "GPU" without a word. XML allows no reference to
// U+0000 (nor past U+10FFFF, which pugixml's arithmetic wraps, &#x100000000; to 0 as well), and
// nvidia-smi never writes one, so the document is refused rather than read with a name cut short
// or one rebuilt with a character that was never there. Looked for anywhere in the document, in
// the forms pugixml decodes ("&#" digits ";" or "&#x" hex digits ";").
// Returns whether the document holds a character reference ("&#"), decoded or not.
bool refuse_bad_character_references(std::string_view document) {
  constexpr std::uint64_t past_unicode = 0x110000;
  bool any = false;
  for (std::size_t at = document.find("&#"); at != std::string_view::npos;
       at = document.find("&#", at + 2)) {
    any = true;
    std::size_t start = at + 2;
    bool hex = start < document.size() && document[start] == 'x';
    start += hex;
    std::uint64_t value = 0;
    std::size_t end = start;
    for (; end < document.size(); ++end) {
      char c = document[end];
      int digit = c >= '0' && c <= '9'                            ? c - '0'
                  : hex && (c | 0x20) >= 'a' && (c | 0x20) <= 'f' ? (c | 0x20) - 'a' + 10
                                                                  : -1;
      if (digit < 0)
        break;
      value = std::min(value * (hex ? 16 : 10) + static_cast<std::uint64_t>(digit), past_unicode);
    }
    if (end == start || end == document.size() || document[end] != ';')
      continue; // not a reference pugixml decodes: it stays text
    if (value == 0 || value == past_unicode) {
      std::string_view reference = document.substr(at, std::min<std::size_t>(end + 1 - at, 24));
      throw ParseError("not well-formed XML: character reference \"" + std::string(reference) +
                       "\" at byte " + std::to_string(at) + " is not an XML character");
    }
  }
  return any;
}

// Parses the `size` bytes at `buffer` in place (pugixml writes its strings into them) and reads
// them.
Snapshot parse_and_read(char *buffer, std::size_t size, bool references) {
  // Looked at before pugixml writes its strings into the buffer.
  bool any_marker = references || detail::may_hold_lost_marker(std::string_view(buffer, size));
  pugi::xml_document xml;
  // The text kept in its element rather than a node of its own: fewer nodes to build.
  pugi::xml_parse_result result = xml.load_buffer_inplace(
      buffer, size, pugi::parse_default | pugi::parse_embed_pcdata, pugi::encoding_utf8);
  if (!result)
    throw ParseError(std::string("not well-formed XML: ") + result.description() + " at byte " +
                     std::to_string(result.offset));
  pugi::xml_node root = xml.document_element();
  if (std::strcmp(root.name(), "nvidia_smi_log") != 0)
    throw ParseError(std::string("not nvidia-smi XML: root element is <") + root.name() +
                     ">, expected <nvidia_smi_log>");

  Snapshot snapshot;
  snapshot.source = Source::xml;
  Element log(root, "nvidia_smi_log");
  snapshot.timestamp = parse_xml_timestamp(log.raw("timestamp"));
  snapshot.driver_version = log.text("driver_version");
  snapshot.cuda_version = log.text("cuda_version");
  int index = 0;
  log.each("gpu", [&](const Element &gpu) {
    snapshot.gpus.push_back(read_gpu(gpu, index++));
    snapshot.gpus.back().lost_reason = lost_reason(gpu, any_marker);
  });
  return snapshot;
}

} // namespace

Snapshot read_xml(std::string_view document) {
  bool references = refuse_bad_character_references(document);
  // pugixml parses in a buffer of its own.
  std::unique_ptr<char[]> buffer(new char[document.size()]);
  std::copy(document.begin(), document.end(), buffer.get());
  return parse_and_read(buffer.get(), document.size(), references);
}

Snapshot read_xml_in_place(char *document, std::size_t size) {
  bool references = refuse_bad_character_references(std::string_view(document, size));
  return parse_and_read(document, size, references);
}

} // namespace nvsmi
