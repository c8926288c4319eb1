#include "files/json_log.hpp"

#include "core/exit_codes.hpp"
#include "files/file_io.hpp"
#include "files/gzip_text.hpp"
#include "formats/formats.hpp"

#include "nvsmi/quantity.hpp"

#include <string_view>

namespace nvsmi {
namespace {

// How every line of format_json begins; the schema's version may grow.
constexpr std::string_view snapshot_line_start = R"({"schema":"nvsmi-agent.snapshot/)";

bool compressed_path(const std::string &path) {
  return path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0;
}

// The first bytes of the first line: of the file, or of what its first gzip member holds.
std::string line_start(int fd, bool compressed) {
  std::string start;
  if (!compressed) {
    read_up_to(fd, snapshot_line_start.size(), 0, start);
    return start;
  }
  std::string bytes;
  read_up_to(fd, 64 * 1024, 0, bytes);
  if (!starts_as_gzip(bytes))
    return {};
  try {
    GzipReader reader;
    reader.feed(bytes, [&](std::string_view text) {
      start.append(text.substr(0, snapshot_line_start.size() - start.size()));
      return start.size() < snapshot_line_start.size();
    });
  } catch (const ParseError &) {
    return {};
  }
  return start;
}

RotatingLog::FoundFile check_first_line(const std::string &path) {
  bool compressed = compressed_path(path);
  return [path, compressed](int fd) -> std::optional<RotatingLog::MoveAside> {
    if (line_start(fd, compressed) == snapshot_line_start)
      return std::nullopt;
    throw AgentError(exit_io, "JSON log " + path + " holds something other than " +
                                  (compressed ? "gzip-compressed " : "") +
                                  "nvsmi-agent snapshots; refusing to mix them. Use a new file.");
  };
}

} // namespace

JsonLog::JsonLog(const std::string &path, RotationSettings rotation)
    : log_("JSON log", path, rotation, "", check_first_line(path)),
      compressed_(compressed_path(path)) {}

void JsonLog::append(const Snapshot &snapshot) {
  std::string line = format_json(snapshot) + "\n";
  log_.append(compressed_ ? gzip_member(line) : line);
}

} // namespace nvsmi
