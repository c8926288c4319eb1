#include "report/report_log.hpp"

#include "core/exit_codes.hpp"
#include "core/screen_text.hpp"
#include "files/file_io.hpp"
#include "files/gzip_text.hpp"
#include "report/report_json_log.hpp"

#include "nvsmi/gpu_fields.hpp"
#include "nvsmi/quantity.hpp"
#include "nvsmi/timestamp.hpp"
#include "nvsmi/utf8.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <memory>
#include <optional>
#include <sys/stat.h>
#include <unistd.h>

namespace nvsmi {
namespace {

constexpr std::size_t max_csv_line_bytes = 64 * 1024; // nvidia-smi's widest header is ~6 KiB
// A JSON sample carries every GPU's processes, command lines included: far wider than a CSV row.
constexpr std::size_t max_json_line_bytes = 1024 * 1024;
constexpr std::size_t chunk_bytes = 1 << 20;
// Enough for a whole first line of either kind, where the first timestamp is looked for.
constexpr std::size_t peek_bytes = max_json_line_bytes;

bool is_json_line(std::string_view line) { return !line.empty() && line.front() == '{'; }

// Cuts bytes into lines, kept across reads. A line over the cap of its kind ends the file's
// reading (a file with no newline, such as /dev/zero, would otherwise be read for ever). A last
// line without its newline is not a row: it may be a log's row still being written.
class LogLineSplitter {
public:
  // Calls `line(text)` for each whole line, without its "\n". False once the file's reading is
  // to end: `line` said so, or a line passed the cap (then `too_long(cap)` has been called).
  template <typename OnLine, typename OnTooLong>
  bool feed(std::string_view bytes, OnLine line, OnTooLong too_long) {
    while (!bytes.empty()) {
      std::size_t newline = bytes.find('\n');
      std::string_view part = bytes.substr(0, newline);
      std::size_t cap =
          is_json_line(carry_.empty() ? part : carry_) ? max_json_line_bytes : max_csv_line_bytes;
      if (carry_.size() + part.size() > cap) {
        carry_.clear();
        too_long(cap);
        return false;
      }
      if (newline == std::string_view::npos) {
        carry_.append(part);
        return true;
      }
      bytes.remove_prefix(newline + 1);
      bool go_on;
      if (carry_.empty()) {
        go_on = line(part);
      } else {
        carry_.append(part);
        go_on = line(std::string_view(carry_));
        carry_.clear();
      }
      if (!go_on)
        return false;
    }
    return true;
  }
  // What is left after the last newline.
  const std::string &rest() const { return carry_; }

private:
  std::string carry_;
};

// One log, opened once and read once. A pipe or a FIFO (`report <(zcat log.csv.gz)`) cannot give
// its bytes a second time, so what was read to find its first timestamp is kept and read again
// from here; a regular file is peeked at with pread, which leaves its offset at the start.
struct LogInput {
  std::string path;
  Descriptor fd;
  bool regular = false;
  std::string peeked;       // bytes already taken from a stream that cannot seek
  std::optional<bool> gzip; // whether its first bytes are gzip's, once read

  explicit LogInput(const std::string &name)
      : path(name), fd(::open(name.c_str(), O_RDONLY | O_CLOEXEC)) {
    if (fd.get() < 0)
      io_failure("cannot open log", path);
    struct stat info {};
    if (::fstat(fd.get(), &info) != 0)
      io_failure("cannot read log", path);
    regular = S_ISREG(info.st_mode);
  }

  // Up to `count` bytes from the start, without losing them for the reading after: of what the
  // log holds, decompressed where it is gzip (a JSON log named .gz, or any log gzip made).
  std::string peek(std::size_t count) {
    std::string bytes;
    if (!read_up_to(fd.get(), count, regular ? std::optional<off_t>(0) : std::nullopt, bytes))
      io_failure("cannot read", path);
    if (!regular)
      peeked = bytes;
    gzip = starts_as_gzip(bytes);
    if (!*gzip)
      return bytes;
    std::string text;
    try {
      GzipReader reader;
      reader.feed(bytes, [&](std::string_view part) {
        text.append(part.substr(0, count - text.size()));
        return text.size() < count;
      });
    } catch (const ParseError &) { // said when the log is read
    }
    return text;
  }

  // Calls `line` for each whole line: the peeked bytes, then the rest of the stream, through
  // gzip where the log is compressed. Returns what follows the last newline, when the reading was
  // not ended early; `broken(why)` where compressed data breaks, and the rest is not read.
  template <typename OnLine, typename OnTooLong, typename OnBroken>
  std::string for_each_line(OnLine line, OnTooLong too_long, OnBroken broken) {
    LogLineSplitter lines;
    std::optional<GzipReader> reader;
    // False once the reading is to end.
    auto feed = [&](std::string_view raw) {
      if (!gzip)
        gzip = starts_as_gzip(raw);
      if (!*gzip)
        return lines.feed(raw, line, too_long);
      if (!reader)
        reader.emplace();
      try {
        return reader->feed(
            raw, [&](std::string_view text) { return lines.feed(text, line, too_long); });
      } catch (const ParseError &error) {
        broken(error.what());
        return false;
      }
    };
    if (!peeked.empty() && !feed(peeked))
      return {};
    std::string().swap(peeked);
    std::unique_ptr<char[]> chunk(new char[chunk_bytes]);
    while (true) {
      ssize_t n = ::read(fd.get(), chunk.get(), chunk_bytes);
      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0)
        io_failure("cannot read", path);
      if (n == 0)
        return lines.rest();
      if (!feed(std::string_view(chunk.get(), static_cast<std::size_t>(n))))
        return {};
    }
  }
};

bool starts_with_digit(std::string_view line) {
  return !line.empty() && line[0] >= '0' && line[0] <= '9';
}

bool has_column(const CsvLayout &layout, std::string_view name) {
  for (const CsvLayout::Column &column : layout.columns())
    if (column.name == name)
      return true;
  return false;
}

// The timestamp of the log's first row that has one, from its first bytes (`start`).
std::optional<Timestamp> first_timestamp(std::string_view start) {
  CsvLayout layout = CsvLayout::from_fields(query_fields());
  std::optional<Timestamp> found;
  LogLineSplitter lines;
  lines.feed(
      start,
      [&](std::string_view line) {
        line = trim(line);
        if (line.empty())
          return true;
        try {
          if (is_json_line(line)) {
            found = read_json_log_line(line).timestamp;
          } else if (!starts_with_digit(line) && CsvLayout::is_header(line)) {
            layout = CsvLayout::from_header(line);
            return true;
          } else {
            found = read_csv_row(line, layout, 0).timestamp;
          }
        } catch (const ParseError &) {
        }
        return !found;
      },
      [](std::size_t) {});
  return found;
}

// What a file's first bytes say it is. A log of watch or serve, or nvidia-smi's --query-gpu -l
// output, starts with a JSON object on one line, a CSV header with a timestamp column, or (no
// header) a CSV row that starts with its timestamp; anything else (README.md, a binary, another
// program's CSV) would only be counted row by row as bad ("CSV row 1 has 1 values, but there are
// 41 columns"), which does not say that the file is not a log at all.
enum class LogStart { log, empty, not_text, other };

LogStart log_start(std::string_view start, std::string &first_line) {
  if (start.find('\0') != std::string_view::npos)
    return LogStart::not_text;
  std::string_view rest = start;
  while (!rest.empty()) {
    std::size_t newline = rest.find('\n');
    std::string_view line = trim(rest.substr(0, newline));
    rest = newline == std::string_view::npos ? std::string_view() : rest.substr(newline + 1);
    if (line.empty())
      continue;
    if (!is_valid_utf8(line))
      return LogStart::not_text;
    first_line = std::string(line);
    if (line.front() == '{')
      return line.back() == '}' || newline == std::string_view::npos ? LogStart::log
                                                                     : LogStart::other;
    std::string_view first_cell = trim(line.substr(0, line.find(',')));
    if (parse_csv_timestamp(first_cell) || parse_iso8601_timestamp(first_cell))
      return LogStart::log;
    for (std::string_view cells = line; !cells.empty();) {
      std::size_t comma = cells.find(',');
      if (trim(cells.substr(0, comma)) == "timestamp")
        return LogStart::log;
      cells = comma == std::string_view::npos ? std::string_view() : cells.substr(comma + 1);
    }
    return LogStart::other;
  }
  return LogStart::empty;
}

// Refuses, in one line, a file that is not a log: before any row is read, so that the answer is
// what the file is and what a log looks like. An empty file is refused only where every file is
// (a log just rotated or not yet written to is empty beside the others).
class LogGate {
public:
  void admit(const std::string &path, std::string_view start) {
    std::string first_line;
    LogStart what = log_start(start, first_line);
    if (what == LogStart::not_text)
      throw AgentError(exit_bad_output, shown(path) +
                                            " is not a log of watch or serve: it is not "
                                            "text" +
                                            expected);
    if (what == LogStart::other)
      throw AgentError(exit_bad_output,
                       shown(path) + " is not a log of watch or serve: its first line is '" +
                           cut_to_columns(marked_text(first_line), 40) + "'" + expected);
    if (first_path_.empty())
      first_path_ = path;
    all_empty_ = all_empty_ && what == LogStart::empty;
  }
  void finish() const {
    if (all_empty_ && !first_path_.empty())
      throw AgentError(exit_bad_output,
                       shown(first_path_) + " is empty: no sample in it yet" + expected);
  }

private:
  static std::string shown(const std::string &path) {
    return cut_to_columns(marked_text(path), 200);
  }
  // What a log looks like, after each refusal.
  static inline const std::string expected =
      " (a CSV log starts with a header such as 'timestamp,index,...'; a JSON log has one JSON "
      "object per line)";
  bool all_empty_ = true;
  std::string first_path_;
};

// The host's real readings (CPU, disk, network: report reads no other) from the agent's own host
// columns (nvsmi/gpu_fields.hpp host_log_columns), kept as extras by the layout; unknown where the
// log has no such column. Throws ParseError for a bad value.
Host host_of(const Gpu &gpu) {
  Host host;
  for (const ExtraField &extra : gpu.extras)
    for (const HostLogColumn &column : host_log_columns)
      if (column.real && extra.name == column.name && extra.value)
        host.*column.real =
            parse_real(*extra.value, column.unit, UnitPolicy::optional, column.name);
  return host;
}

// The names of the host columns host_of reads, which the CSV layout keeps as extras.
std::vector<std::string> host_column_names() {
  std::vector<std::string> names;
  for (const HostLogColumn &column : host_log_columns)
    if (column.real)
      names.emplace_back(column.name);
  return names;
}

// A JSON line: one row for each of its GPUs, or one bad row when it cannot be read.
void take_json_line(std::string_view line, const std::string &path, std::int64_t number,
                    BadRows &bad, LogTotals &totals,
                    const std::function<void(const LogRow &)> &take) {
  Snapshot snapshot;
  try {
    snapshot = read_json_log_line(line);
  } catch (const ParseError &error) {
    ++totals.rows;
    bad.add(BadRows::unparsable, path + ":" + std::to_string(number), error.what());
    return;
  }
  take_sample(snapshot, path, number, bad, totals, take);
}

// Days since 1970-01-01 of a proleptic Gregorian date.
std::int64_t days_from_civil(std::int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  unsigned yoe = static_cast<unsigned>(y - era * 400);
  unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

} // namespace

void take_sample(const Snapshot &snapshot, const std::string &path, std::int64_t number,
                 BadRows &bad, LogTotals &totals, const std::function<void(const LogRow &)> &take) {
  std::string where = path + ":" + std::to_string(number);
  if (snapshot.gpus.empty()) {
    ++totals.rows;
    bad.add(BadRows::unparsable, where, "a sample without GPUs");
    return;
  }
  auto rows = static_cast<std::int64_t>(snapshot.gpus.size());
  totals.rows += rows;
  if (!snapshot.timestamp) {
    bad.add(BadRows::no_timestamp, where, "no timestamp that can be read");
    bad.counts[BadRows::no_timestamp] += rows - 1; // one example for the line
    return;
  }
  Host host = snapshot.host.value_or(Host{});
  for (const Gpu &gpu : snapshot.gpus)
    take(LogRow{path, number, gpu, *snapshot.timestamp, host, &snapshot.gpus});
}

void BadRows::add(Kind kind, const std::string &where, const std::string &why) {
  ++counts[kind];
  if (examples.size() < max_examples)
    examples.push_back(where + ": " + why);
}

std::int64_t BadRows::total() const {
  std::int64_t sum = 0;
  for (std::int64_t count : counts)
    sum += count;
  return sum;
}

const char *BadRows::name(Kind kind) {
  switch (kind) {
  case unparsable:
    return "unparsable";
  case no_timestamp:
    return "no_timestamp";
  case out_of_order:
    return "out_of_order";
  case too_long:
    return "too_long";
  case bad_header:
    return "bad_header";
  case too_many_gpus:
    return "too_many_gpus";
  case unfinished:
    return "unfinished";
  case kind_count:
    break;
  }
  return "";
}

double wall_seconds(const Timestamp &t) {
  std::int64_t days =
      days_from_civil(t.year, static_cast<unsigned>(t.month), static_cast<unsigned>(t.day));
  double seconds = static_cast<double>(days * 86400 + t.hour * 3600 + t.minute * 60 + t.second);
  return seconds + t.millisecond.value_or(0) / 1000.0;
}

double instant_seconds(const Timestamp &t) {
  return wall_seconds(t) - 60.0 * t.utc_offset_minutes.value_or(0);
}

bool earlier(const Timestamp &a, const Timestamp &b) {
  if (a.utc_offset_minutes && b.utc_offset_minutes)
    return instant_seconds(a) < instant_seconds(b);
  return wall_seconds(a) < wall_seconds(b);
}

LogTotals read_logs(const std::vector<std::string> &paths, BadRows &bad,
                    const std::function<void(const LogRow &)> &take) {
  LogTotals totals;
  std::vector<std::unique_ptr<LogInput>> inputs;
  for (const std::string &path : paths)
    inputs.push_back(std::make_unique<LogInput>(path));
  LogGate gate;
  std::vector<std::optional<Timestamp>> starts;
  for (const auto &input : inputs) {
    std::string start = input->peek(peek_bytes);
    gate.admit(input->path, start);
    starts.push_back(first_timestamp(start));
  }
  gate.finish();
  std::vector<std::size_t> order(paths.size());
  for (std::size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  if (std::all_of(starts.begin(), starts.end(), [](const auto &start) { return bool(start); }))
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return earlier(*starts[a], *starts[b]); });

  CsvLayout layout = CsvLayout::from_fields(query_fields());
  bool indexed = true, header_ok = true;
  for (std::size_t i : order) {
    LogInput &input = *inputs[i];
    const std::string &path = input.path;
    totals.files.push_back(path);
    std::int64_t number = 0;
    auto where = [&] { return path + ":" + std::to_string(number); };
    std::string unfinished = input.for_each_line(
        [&](std::string_view line) {
          ++number;
          line = trim(line);
          if (line.empty())
            return true;
          if (is_json_line(line)) {
            take_json_line(line, path, number, bad, totals, take);
            return true;
          }
          if (!starts_with_digit(line) && CsvLayout::is_header(line)) {
            try {
              layout = CsvLayout::from_header(line, host_column_names());
              indexed = has_column(layout, "index");
              header_ok = true;
            } catch (const ParseError &error) {
              header_ok = false;
              if (bad.examples.size() < BadRows::max_examples)
                bad.examples.push_back(where() + ": header: " + error.what());
            }
            return true;
          }
          ++totals.rows;
          if (!header_ok) {
            ++bad.counts[BadRows::bad_header];
            return true;
          }
          try {
            CsvRow row = read_csv_row(line, layout, static_cast<int>(number - 1));
            if (!indexed)
              row.gpu.index = 0;
            Host host = host_of(row.gpu);
            if (!row.timestamp)
              bad.add(BadRows::no_timestamp, where(), "no timestamp that can be read");
            else
              take(LogRow{path, number, row.gpu, *row.timestamp, host});
          } catch (const ParseError &error) {
            bad.add(BadRows::unparsable, where(), error.what());
          }
          return true;
        },
        [&](std::size_t cap) {
          ++number;
          ++totals.rows;
          bad.add(BadRows::too_long, where(),
                  "line longer than " + std::to_string(cap) +
                      " bytes; the rest of the file is not read");
        },
        [&](const std::string &why) {
          ++number;
          ++totals.rows;
          bad.add(BadRows::unparsable, where(), why + "; the rest of the file is not read");
        });
    if (!trim(unfinished).empty()) {
      ++number;
      ++totals.rows;
      bad.add(BadRows::unfinished, where(),
              "last line has no newline (a row still being written?); not used");
    }
    inputs[i].reset(); // closed once read
  }
  return totals;
}

} // namespace nvsmi
