#include "nvidia_smi/said_line.hpp"

#include "core/screen_text.hpp"

#include "nvsmi/quantity.hpp"

namespace nvsmi {
namespace {

constexpr std::size_t max_said_bytes = 300;

std::string quoted(std::string_view line) { return printable_text(line.substr(0, max_said_bytes)); }

} // namespace

std::optional<std::string> first_said_line(std::string_view bytes) {
  for (std::size_t start = 0; start < bytes.size();) {
    std::size_t end = bytes.find('\n', start);
    std::string_view line = trim(bytes.substr(start, end - start));
    if (!line.empty())
      return quoted(line);
    if (end == std::string_view::npos)
      break;
    start = end + 1;
  }
  return std::nullopt;
}

std::optional<std::string> last_said_line(std::string_view bytes) {
  std::optional<std::string_view> last;
  for (std::size_t start = 0; start < bytes.size();) {
    std::size_t end = bytes.find('\n', start);
    std::string_view line = trim(bytes.substr(start, end - start));
    if (!line.empty())
      last = line;
    if (end == std::string_view::npos)
      break;
    start = end + 1;
  }
  if (!last)
    return std::nullopt;
  return quoted(*last);
}

std::string first_message_line(const CommandResult &result) {
  for (const std::string *stream : {&result.out, &result.err})
    if (std::optional<std::string> line = first_said_line(*stream))
      return *line;
  return "(no message)";
}

} // namespace nvsmi
