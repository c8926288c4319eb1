#include "nvidia_smi/source.hpp"

#include "core/exit_codes.hpp"
#include "core/privilege.hpp"
#include "nvidia_smi/command_line.hpp"

#include "nvsmi/compute_apps.hpp"
#include "nvsmi/csv_reader.hpp"
#include "nvsmi/quantity.hpp"
#include "nvsmi/unreadable_gpu.hpp"
#include "nvsmi/xml_reader.hpp"

#include <cstdlib>
#include <stdexcept>

namespace nvsmi {

std::string field_list(const std::vector<std::string> &names) {
  std::string joined;
  for (const std::string &name : names)
    joined += (joined.empty() ? "" : ",") + name;
  return joined;
}

std::vector<std::string> compute_apps_arguments() {
  return {"--query-compute-apps=" + field_list(compute_apps_fields()), "--format=csv"};
}

std::vector<std::string> compute_apps_loop_arguments(std::chrono::milliseconds interval) {
  return {"--query-compute-apps=" + field_list(compute_apps_loop_fields()), "--format=csv,nounits",
          "-lms", std::to_string(interval.count())};
}

std::vector<std::string> nvidia_smi_argv(const std::optional<std::string> &option) {
  std::string command = "nvidia-smi";
  if (option)
    command = *option;
  else if (std::optional<std::string> variable = caller_named_variable("NVIDIA_SMI"))
    command = *variable;
  std::vector<std::string> argv;
  try {
    argv = split_command(command);
  } catch (const std::invalid_argument &error) {
    throw AgentError(exit_usage, error.what());
  }
  if (argv.empty())
    throw AgentError(exit_usage, "--nvidia-smi is empty");
  return argv;
}

std::optional<Snapshot> read_xml_after_unreadable_lines(std::string_view content) {
  std::vector<UnreadableGpu> unreadable;
  std::string_view document = after_unreadable_gpu_lines(content, &unreadable);
  if (document.empty() || document.front() != '<')
    return std::nullopt;
  Snapshot snapshot = read_xml(document);
  add_unreadable_gpus(snapshot, unreadable);
  return snapshot;
}

Snapshot parse_output(const std::string &bytes, const std::string &origin) {
  std::string_view content = bytes;
  if (content.substr(0, 3) == "\xEF\xBB\xBF") // a UTF-8 byte order mark, as Windows may write
    content.remove_prefix(3);
  content = trim(content);
  if (content.empty())
    throw AgentError(exit_bad_output, origin + ": empty output");
  try {
    if (content.front() != '<')
      if (auto xml = read_xml_after_unreadable_lines(content))
        return *xml;
    return content.front() == '<' ? read_xml(content) : read_csv(content);
  } catch (const ParseError &error) {
    throw AgentError(exit_bad_output, origin + ": " + error.what());
  }
}

} // namespace nvsmi
