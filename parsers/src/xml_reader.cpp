#include "nvsmi/xml_reader.hpp"

#include "nvsmi/quantity.hpp"
#include "nvsmi/timestamp.hpp"

#include <pugixml.hpp>

#include <cstring>
#include <functional>
#include <initializer_list>
#include <string>

namespace nvsmi {
namespace {

// One element, with its path kept so that a bad value can be named in the error message.
class Element {
public:
  Element(pugi::xml_node node, std::string path) : node_(node), path_(std::move(path)) {}

  pugi::xml_node node() const { return node_; }
  explicit operator bool() const { return static_cast<bool>(node_); }
  Element child(const char *name) const { return {node_.child(name), path_ + "/" + name}; }
  // Calls `visit` for every child named `name`, numbered in the path: "gpu[2]".
  void each(const char *name, const std::function<void(const Element &)> &visit) const {
    int position = 0;
    for (pugi::xml_node node : node_.children(name))
      visit(Element(node, path_ + "/" + name + "[" + std::to_string(position++) + "]"));
  }

  std::string_view raw(const char *name) const { return node_.child(name).child_value(); }
  Text text(const char *name) const { return parse_text(raw(name)); }
  Reading integer(const char *name, Unit unit) const {
    return parse_integer(raw(name), unit, UnitPolicy::required, path_ + "/" + name);
  }
  // The first known reading among elements that replaced one another across drivers.
  RealReading first_real(std::initializer_list<const char *> names, Unit unit) const {
    for (const char *name : names)
      if (auto value = parse_real(raw(name), unit, UnitPolicy::required, path_ + "/" + name))
        return value;
    return std::nullopt;
  }

private:
  pugi::xml_node node_;
  std::string path_;
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
    process.type = info.text("type");
    process.name = info.text("process_name");
    process.used_memory_mib = info.integer("used_memory", Unit::mib);
    process.gpu_instance_id = info.integer("gpu_instance_id", Unit::none);
    process.compute_instance_id = info.integer("compute_instance_id", Unit::none);
    processes.push_back(std::move(process));
  });
  return processes;
}

// Drivers before 530 say clocks_throttle_reasons/clocks_throttle_reason_X, later ones
// clocks_event_reasons/clocks_event_reason_X; both list each reason as "Active" or "Not Active".
std::optional<std::vector<std::string>> read_active_clock_reasons(const Element &gpu) {
  struct Naming {
    const char *block, *prefix;
  };
  for (Naming naming : {Naming{"clocks_event_reasons", "clocks_event_reason_"},
                        Naming{"clocks_throttle_reasons", "clocks_throttle_reason_"}}) {
    pugi::xml_node block = gpu.node().child(naming.block);
    if (!block)
      continue;
    std::vector<std::string> active;
    std::size_t prefix_length = std::strlen(naming.prefix);
    for (pugi::xml_node reason : block.children()) {
      std::string_view name = reason.name();
      if (trim(reason.child_value()) == "Active" &&
          name.compare(0, prefix_length, naming.prefix) == 0)
        active.emplace_back(name.substr(prefix_length));
    }
    return active;
  }
  return std::nullopt;
}

Gpu read_gpu(const Element &gpu, int index) {
  Gpu out;
  out.index = index;
  out.name = gpu.text("product_name");
  out.uuid = gpu.text("uuid");
  // v10 files can lack <pci>; the <gpu id="..."> attribute holds the same bus id.
  Element pci = gpu.child("pci");
  out.pci_bus_id = pci.node().child("pci_bus_id") ? pci.text("pci_bus_id")
                                                  : parse_text(gpu.node().attribute("id").value());
  out.pstate = gpu.text("performance_state");
  out.fan_speed_percent = gpu.integer("fan_speed", Unit::percent);
  out.temperature_c = gpu.child("temperature").integer("gpu_temp", Unit::celsius);
  read_memory(gpu.child("fb_memory_usage"), out.memory_total_mib, out.memory_used_mib,
              out.memory_free_mib);
  Element utilization = gpu.child("utilization");
  out.utilization_gpu_percent = utilization.integer("gpu_util", Unit::percent);
  out.utilization_memory_percent = utilization.integer("memory_util", Unit::percent);

  // The GPU's own power, never <module_power_readings> (the whole module's, on Grace-Hopper).
  Element power = gpu.child("gpu_power_readings");
  if (!power)
    power = gpu.child("power_readings");
  out.power_draw_w =
      power.first_real({"power_draw", "average_power_draw", "instant_power_draw"}, Unit::watt);
  out.power_limit_w =
      power.first_real({"current_power_limit", "enforced_power_limit", "power_limit"}, Unit::watt);

  Element clocks = gpu.child("clocks");
  out.clocks.graphics_mhz = clocks.integer("graphics_clock", Unit::mhz);
  out.clocks.sm_mhz = clocks.integer("sm_clock", Unit::mhz);
  out.clocks.memory_mhz = clocks.integer("mem_clock", Unit::mhz);
  out.clocks.video_mhz = clocks.integer("video_clock", Unit::mhz);

  if (Text mig = gpu.child("mig_mode").text("current_mig"))
    out.mig_enabled = *mig == "Enabled";
  // An absent list is unknown (old schemas); a present, empty one means there are none.
  if (Element list = gpu.child("mig_devices"))
    out.mig_devices = read_mig_devices(list);
  if (Element list = gpu.child("processes"))
    out.processes = read_processes(list);
  out.clock_event_reasons_active = read_active_clock_reasons(gpu);
  return out;
}

} // namespace

Snapshot read_xml(std::string_view document) {
  pugi::xml_document xml;
  pugi::xml_parse_result result =
      xml.load_buffer(document.data(), document.size(), pugi::parse_default, pugi::encoding_utf8);
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
  log.each("gpu", [&](const Element &gpu) { snapshot.gpus.push_back(read_gpu(gpu, index++)); });
  return snapshot;
}

} // namespace nvsmi
