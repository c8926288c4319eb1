#include "files/json_log.hpp"

#include "core/exit_codes.hpp"
#include "files/file_io.hpp"
#include "formats/formats.hpp"

#include <string_view>

namespace nvsmi {
namespace {

// How every line of format_json begins; the schema's version may grow.
constexpr std::string_view snapshot_line_start = R"({"schema":"nvsmi-agent.snapshot/)";

RotatingLog::FoundFile check_first_line(const std::string &path) {
  return [path](int fd) -> std::optional<RotatingLog::MoveAside> {
    std::string start;
    read_up_to(fd, snapshot_line_start.size(), 0, start);
    if (start == snapshot_line_start)
      return std::nullopt;
    throw AgentError(exit_io, "JSON log " + path +
                                  " holds something other than nvsmi-agent snapshots; refusing "
                                  "to mix them. Use a new file.");
  };
}

} // namespace

JsonLog::JsonLog(const std::string &path, RotationSettings rotation)
    : log_("JSON log", path, rotation, "", check_first_line(path)) {}

void JsonLog::append(const Snapshot &snapshot) { log_.append(format_json(snapshot) + "\n"); }

} // namespace nvsmi
