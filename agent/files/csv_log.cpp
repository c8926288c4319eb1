#include "files/csv_log.hpp"

#include "core/exit_codes.hpp"
#include "files/file_io.hpp"
#include "formats/formats.hpp"

#include <algorithm>

namespace nvsmi {
namespace {

// Where a log with an earlier version's columns goes: gpu-log.csv.old-columns, a name that says
// why it is there.
constexpr const char *old_columns_suffix = ".old-columns";

// The file's first line without its line end, reading no more than the longest of `headers`
// and a line end take: a longer first line is none of them. Empty where no whole line was read.
std::string first_line(int fd, const std::vector<std::string> &headers, std::string &shown) {
  std::size_t longest = 0;
  for (const std::string &header : headers)
    longest = std::max(longest, header.size());
  std::string bytes;
  read_up_to(fd, longest + 2, 0, bytes); // "\r\n"; what could not be read is no header
  std::size_t newline = bytes.find('\n');
  shown = bytes.substr(0, std::min<std::size_t>(newline, 120));
  if (newline == std::string::npos)
    return {};
  std::string line = bytes.substr(0, newline);
  if (!line.empty() && line.back() == '\r')
    line.pop_back();
  return line;
}

RotatingLog::FoundFile check_header(const CsvLogSettings &settings) {
  return [header = csv_header(settings.extra_fields),
          earlier = earlier_csv_headers(settings.extra_fields),
          path = settings.path](int fd) -> std::optional<RotatingLog::MoveAside> {
    std::vector<std::string> known = earlier;
    known.push_back(header);
    std::string shown;
    std::string line = first_line(fd, known, shown);
    if (line == header)
      return std::nullopt;
    if (std::find(earlier.begin(), earlier.end(), line) != earlier.end())
      return RotatingLog::MoveAside{old_columns_suffix,
                                    "has the columns of an earlier nvsmi-agent"};
    throw AgentError(exit_io, "CSV log " + path +
                                  " has other columns; refusing to mix them (its header: \"" +
                                  shown + "\"). Use a new file.");
  };
}

} // namespace

CsvLog::CsvLog(CsvLogSettings settings)
    : log_("CSV log", settings.path, settings.rotation, csv_header(settings.extra_fields) + "\n",
           check_header(settings)) {}

void CsvLog::append(const Snapshot &snapshot) { log_.append(format_csv(snapshot, false)); }

} // namespace nvsmi
