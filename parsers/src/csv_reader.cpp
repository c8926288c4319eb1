#include "nvsmi/csv_reader.hpp"

#include "csv_cells.hpp"
#include "lost_gpu.hpp"
#include "nvsmi/gpu_fields.hpp"
#include "nvsmi/quantity.hpp"
#include "nvsmi/timestamp.hpp"
#include "nvsmi/unreadable_gpu.hpp"
#include "reader_text.hpp"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <limits>
#include <system_error>

namespace nvsmi {
namespace {

enum class Field {
  timestamp,
  driver_version,
  count,
  index,
  uuid,
  name,
  pci_bus_id,
  power_draw,
  power_draw_average,
  power_draw_instant,
  power_limit,
  enforced_power_limit,
  mig_mode,
  ecc_mode,
  ecc_pending_mode,
  ecc_corrected_volatile,
  ecc_corrected_aggregate,
  ecc_uncorrected_volatile,
  ecc_uncorrected_aggregate,
  retired_single_bit,
  retired_double_bit,
  retired_pending,
  remapped_correctable,
  remapped_uncorrectable,
  remapped_pending,
  remapped_failure,
  pcie_gen,
  pcie_gen_gpu,
  pcie_gen_max,
  pcie_gen_gpu_max,
  pcie_width,
  pcie_width_max,
  clock_reasons_supported,
  clock_reasons_active,
  clock_reason, // one reason's "Active"/"Not Active"; FieldSpec::bit says which
};

struct FieldSpec {
  std::string_view name;
  Field field;
  Unit unit;
  std::uint64_t bit = 0; // Field::clock_reason: the reason's bit in NVML's bitmask
};

// NVML's clock event reason bits (nvmlClocksEventReason*), as the CSV bitmasks
// clocks_event_reasons.supported/.active carry them, by the short names the XML uses.
struct ClockReason {
  std::uint64_t bit;
  std::string_view name;
};
constexpr ClockReason clock_reasons[] = {
    {0x1, "gpu_idle"},
    {0x2, "applications_clocks_setting"},
    {0x4, "sw_power_cap"},
    {0x8, "hw_slowdown"},
    {0x10, "sync_boost"},
    {0x20, "sw_thermal_slowdown"},
    {0x40, "hw_thermal_slowdown"},
    {0x80, "hw_power_brake_slowdown"},
    {0x100, "display_clocks_setting"},
};

// nvidia-smi's field names, with the older short aliases some scripts still use. Drivers from 535
// name the clock reasons clocks_event_reasons.*, and still accept clocks_throttle_reasons.*.
constexpr FieldSpec field_table[] = {
    {"timestamp", Field::timestamp, Unit::none},
    {"driver_version", Field::driver_version, Unit::none},
    {"count", Field::count, Unit::none},
    {"index", Field::index, Unit::none},
    {"uuid", Field::uuid, Unit::none},
    {"name", Field::name, Unit::none},
    {"gpu_name", Field::name, Unit::none},
    {"pci.bus_id", Field::pci_bus_id, Unit::none},
    {"gpu_bus_id", Field::pci_bus_id, Unit::none},
    {"power.draw", Field::power_draw, Unit::watt},
    {"power.draw.average", Field::power_draw_average, Unit::watt},
    {"power.draw.instant", Field::power_draw_instant, Unit::watt},
    {"power.limit", Field::power_limit, Unit::watt},
    {"enforced.power.limit", Field::enforced_power_limit, Unit::watt},
    {"mig.mode.current", Field::mig_mode, Unit::none},
    {"ecc.mode.current", Field::ecc_mode, Unit::none},
    {"ecc.mode.pending", Field::ecc_pending_mode, Unit::none},
    {"ecc.errors.corrected.volatile.total", Field::ecc_corrected_volatile, Unit::none},
    {"ecc.errors.corrected.aggregate.total", Field::ecc_corrected_aggregate, Unit::none},
    {"ecc.errors.uncorrected.volatile.total", Field::ecc_uncorrected_volatile, Unit::none},
    {"ecc.errors.uncorrected.aggregate.total", Field::ecc_uncorrected_aggregate, Unit::none},
    {"retired_pages.single_bit_ecc.count", Field::retired_single_bit, Unit::none},
    {"retired_pages.sbe", Field::retired_single_bit, Unit::none},
    {"retired_pages.double_bit.count", Field::retired_double_bit, Unit::none},
    {"retired_pages.dbe", Field::retired_double_bit, Unit::none},
    {"retired_pages.pending", Field::retired_pending, Unit::none},
    {"remapped_rows.correctable", Field::remapped_correctable, Unit::none},
    {"remapped_rows.sbe", Field::remapped_correctable, Unit::none},
    {"remapped_rows.uncorrectable", Field::remapped_uncorrectable, Unit::none},
    {"remapped_rows.dbe", Field::remapped_uncorrectable, Unit::none},
    {"remapped_rows.pending", Field::remapped_pending, Unit::none},
    {"remapped_rows.failure", Field::remapped_failure, Unit::none},
    {"pcie.link.gen.current", Field::pcie_gen, Unit::none},
    {"pcie.link.gen.gpucurrent", Field::pcie_gen_gpu, Unit::none},
    {"pcie.link.gen.max", Field::pcie_gen_max, Unit::none},
    {"pcie.link.gen.gpumax", Field::pcie_gen_gpu_max, Unit::none},
    {"pcie.link.width.current", Field::pcie_width, Unit::lanes},
    {"pcie.link.width.max", Field::pcie_width_max, Unit::lanes},
    {"clocks_event_reasons.supported", Field::clock_reasons_supported, Unit::none},
    {"clocks_throttle_reasons.supported", Field::clock_reasons_supported, Unit::none},
    {"clocks_event_reasons.active", Field::clock_reasons_active, Unit::none},
    {"clocks_throttle_reasons.active", Field::clock_reasons_active, Unit::none},
    {"clocks_event_reasons.gpu_idle", Field::clock_reason, Unit::none, 0x1},
    {"clocks_throttle_reasons.gpu_idle", Field::clock_reason, Unit::none, 0x1},
    {"clocks_event_reasons.applications_clocks_setting", Field::clock_reason, Unit::none, 0x2},
    {"clocks_throttle_reasons.applications_clocks_setting", Field::clock_reason, Unit::none, 0x2},
    {"clocks_event_reasons.sw_power_cap", Field::clock_reason, Unit::none, 0x4},
    {"clocks_throttle_reasons.sw_power_cap", Field::clock_reason, Unit::none, 0x4},
    {"clocks_event_reasons.hw_slowdown", Field::clock_reason, Unit::none, 0x8},
    {"clocks_throttle_reasons.hw_slowdown", Field::clock_reason, Unit::none, 0x8},
    {"clocks_event_reasons.sync_boost", Field::clock_reason, Unit::none, 0x10},
    {"clocks_throttle_reasons.sync_boost", Field::clock_reason, Unit::none, 0x10},
    {"clocks_event_reasons.sw_thermal_slowdown", Field::clock_reason, Unit::none, 0x20},
    {"clocks_throttle_reasons.sw_thermal_slowdown", Field::clock_reason, Unit::none, 0x20},
    {"clocks_event_reasons.hw_thermal_slowdown", Field::clock_reason, Unit::none, 0x40},
    {"clocks_throttle_reasons.hw_thermal_slowdown", Field::clock_reason, Unit::none, 0x40},
    {"clocks_event_reasons.hw_power_brake_slowdown", Field::clock_reason, Unit::none, 0x80},
    {"clocks_throttle_reasons.hw_power_brake_slowdown", Field::clock_reason, Unit::none, 0x80},
};

// Column numbers from here on are the field table's (nvsmi/gpu_fields.hpp), less this.
constexpr int table_base = static_cast<int>(std::size(field_table));

// The reader's own field, else the field table's (from table_base), else -1.
int find_field(std::string_view name) {
  for (std::size_t i = 0; i < std::size(field_table); ++i)
    if (field_table[i].name == name)
      return static_cast<int>(i);
  // The table's fields that the reader reads by their CSV column, found once: those read from
  // the XML alone (the PCIe throughput) or picked from several columns by hand are no candidates.
  static const std::vector<std::pair<std::string_view, int>> table_columns = [] {
    std::vector<std::pair<std::string_view, int>> columns;
    const std::vector<GpuField> &table = gpu_fields();
    for (std::size_t i = 0; i < table.size(); ++i)
      if (table[i].csv_read)
        for (std::string_view column : {table[i].csv_name, table[i].csv_alias})
          if (!column.empty())
            columns.emplace_back(column, table_base + static_cast<int>(i));
    return columns;
  }();
  for (const auto &[column, field] : table_columns)
    if (column == name)
      return field;
  return -1;
}

// Whether a column's field is the reader's own (field_table's), in one comparison: a row's every
// cell asks, and most are.
bool reader_field(int field) {
  return static_cast<unsigned>(field) < static_cast<unsigned>(table_base);
}

Unit field_unit(int field) {
  return field < table_base ? field_table[field].unit : gpu_fields()[field - table_base].unit;
}

CsvLayout::Column column_of(int field, std::string name, bool extra) {
  CsvLayout::Column column{field, std::move(name), extra};
  if (field >= table_base)
    column.table_field = &gpu_fields()[static_cast<std::size_t>(field - table_base)];
  return column;
}

bool blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

// Bit 7 of each byte that is a comma, and no other bit: each byte is compared with ',' without
// a carry from one byte into the next.
std::uint64_t commas_in(std::uint64_t word) {
  constexpr std::uint64_t low7 = 0x7F7F7F7F7F7F7F7FULL;
  std::uint64_t x = word ^ 0x2C2C2C2C2C2C2C2CULL; // zero where the byte is ','
  return ~(((x & low7) + low7) | x | low7);
}

} // namespace

namespace detail {

CsvCells::CsvCells(std::string_view line) {
  if (!line.empty() && line.back() == '\r')
    line.remove_suffix(1);
  if (line.find('"') != std::string_view::npos) {
    split_quoted(line);
    return;
  }
  const char *data = line.data(), *cell = data;
  std::size_t count = 0;
  // The cell up to `comma`, trimmed as trim() would.
  auto cut = [&](const char *comma) {
    const char *first = cell, *last = comma;
    while (first != last && blank(*first))
      ++first;
    while (last != first && blank(last[-1]))
      --last;
    add(first, last, count);
    cell = comma + 1;
  };
  std::size_t i = 0;
#if defined(__GNUC__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  // find() per cell was a call to memchr for a few characters, and a byte at a time the search
  // for commas was still most of a row's splitting: eight bytes at a time where the bytes of a
  // word are in the order of the line.
  for (; i + 8 <= line.size(); i += 8) {
    std::uint64_t word;
    std::memcpy(&word, data + i, sizeof word);
    for (std::uint64_t commas = commas_in(word); commas != 0; commas &= commas - 1)
      cut(data + i + (static_cast<unsigned>(__builtin_ctzll(commas)) >> 3));
  }
#endif
  for (; i < line.size(); ++i)
    if (data[i] == ',')
      cut(data + i);
  cut(data + line.size());
  finish(count);
}

// RFC 4180 quoting, as the agent's own CSV writes a cell holding a comma or quote.
void CsvCells::split_quoted(std::string_view line) {
  scratch_.reserve(line.size());
  std::size_t count = 0;
  while (true) {
    std::string_view rest = trim(line);
    if (!rest.empty() && rest.front() == '"') {
      std::size_t start = scratch_.size(), i = 1;
      for (; i < rest.size(); ++i) {
        if (rest[i] != '"') {
          scratch_ += rest[i];
        } else if (i + 1 < rest.size() && rest[i + 1] == '"') {
          scratch_ += '"';
          ++i;
        } else {
          break;
        }
      }
      std::size_t comma = rest.find(',', i);
      if (i < rest.size() && trim(rest.substr(i + 1, comma - i - 1)).empty()) {
        add(std::string_view(scratch_).substr(start), count);
        if (comma == std::string_view::npos)
          return finish(count);
        line = rest.substr(comma + 1);
        continue;
      }
      scratch_.resize(start); // no closing quote, or text after it: an ordinary cell after all
    }
    std::size_t comma = line.find(',');
    add(trim(line.substr(0, comma)), count);
    if (comma == std::string_view::npos)
      return finish(count);
    line.remove_prefix(comma + 1);
  }
}

bool names_a_field(const CsvCells &cells) {
  // Asked of every line `watch` reads. Every field name starts with a lower-case letter, and no
  // value nvidia-smi prints does (digits, "GPU-", "NVIDIA", "P0", "[N/A]"): a row's cells are let
  // go at their first characters.
  for (std::string_view cell : cells) {
    if (cell.empty() || cell.front() < 'a' || cell.front() > 'z')
      continue;
    std::string_view name, unit;
    split_header_cell(cell, name, unit);
    if (find_field(name) >= 0)
      return true;
  }
  return false;
}

} // namespace detail

const std::vector<std::string> &query_fields() {
  static const std::vector<std::string> fields = [] {
    // In the order every earlier agent asked for them: a headerless recording (noheader) is read
    // with these as its columns, so this order is never changed; a field added since is asked
    // for after them (csv_asked).
    std::vector<std::string> names{"timestamp",
                                   "driver_version",
                                   "count",
                                   "index",
                                   "uuid",
                                   "name",
                                   "pci.bus_id",
                                   "pstate",
                                   "temperature.gpu",
                                   "utilization.gpu",
                                   "utilization.memory",
                                   "memory.total",
                                   "memory.used",
                                   "memory.free",
                                   "power.draw",
                                   "power.limit",
                                   "enforced.power.limit",
                                   "fan.speed",
                                   "clocks.current.graphics",
                                   "clocks.current.sm",
                                   "clocks.current.memory",
                                   "clocks.current.video",
                                   "ecc.mode.current",
                                   "ecc.mode.pending",
                                   "ecc.errors.corrected.volatile.total",
                                   "ecc.errors.corrected.aggregate.total",
                                   "ecc.errors.uncorrected.volatile.total",
                                   "ecc.errors.uncorrected.aggregate.total",
                                   "retired_pages.sbe",
                                   "retired_pages.dbe",
                                   "retired_pages.pending",
                                   "remapped_rows.correctable",
                                   "remapped_rows.uncorrectable",
                                   "remapped_rows.pending",
                                   "remapped_rows.failure",
                                   "pcie.link.gen.current",
                                   "pcie.link.gen.max",
                                   "pcie.link.width.current",
                                   "pcie.link.width.max",
                                   "clocks_throttle_reasons.supported",
                                   "clocks_throttle_reasons.active"};
    for (const GpuField &field : gpu_fields())
      if (field.csv_asked)
        names.emplace_back(field.csv_name);
    return names;
  }();
  // Not gpu_recovery_action (csv_asked false): drivers before it (about 570) refuse the whole
  // query for a name they do not know. It is read where a header has it.
  return fields;
}

CsvLayout CsvLayout::from_header(std::string_view header_line,
                                 const std::vector<std::string> &extra_fields) {
  CsvLayout layout;
  detail::CsvCells cells(header_line);
  layout.columns_.reserve(cells.size());
  for (std::string_view cell : cells) {
    std::string_view name, unit;
    split_header_cell(cell, name, unit);
    int field = find_field(name);
    if (field >= 0 && !unit.empty() && unit != unit_symbol(field_unit(field)))
      throw ParseError(std::string(name) + ": header unit [" + std::string(unit) + "], expected [" +
                       std::string(unit_symbol(field_unit(field))) + "]");
    bool extra = field < 0 &&
                 std::find(extra_fields.begin(), extra_fields.end(), name) != extra_fields.end();
    layout.columns_.push_back(column_of(field, std::string(name), extra));
  }
  return layout;
}

CsvLayout CsvLayout::from_fields(const std::vector<std::string> &fields,
                                 const std::vector<std::string> &extra_fields) {
  CsvLayout layout;
  for (const std::string &name : fields)
    layout.columns_.push_back(column_of(find_field(name), name, false));
  for (const std::string &name : extra_fields)
    layout.columns_.push_back({-1, name, true});
  return layout;
}

bool CsvLayout::is_header(std::string_view line) {
  return detail::names_a_field(detail::CsvCells(line));
}

namespace {

// Readings that more than one column may give, settled once the whole row is read.
struct Alternatives {
  // Power columns renamed across drivers: the first known one wins, in this order.
  RealReading draw[3], limit[2];
  // The link's generation, else the GPU's own (pcie.link.gen.current is deprecated for it).
  Reading gen[2], gen_max[2];
  // NVML's bitmasks, else the per-reason columns: the bits reported, and those of them active.
  std::optional<std::uint64_t> supported, active;
  std::uint64_t flags_reported = 0, flags_active = 0;
};

// Most cells are plain: a whole number ("81559"), a decimal ("68.25"), one of a flag's two
// words. These read them without parse_integer's, parse_real's and parse_flag's trimming, marker
// and unit checks, which were a quarter of a row's time; any other cell goes to those, which know
// every rule and message. The cells come trimmed.
//
// They write into the reading rather than return it: returned, GCC built each optional on the
// stack with an 8-byte and a 1-byte store and copied it with one 16-byte load, which waits for
// both stores to reach the cache (a stall per number, a tenth of a row's time).
// "[N/A]", "[Not Supported]": unknown, as is_unknown says of any bracketed text, without the calls
// to the general parsers and to is_unknown.
bool bracketed(std::string_view cell) {
  return !cell.empty() && cell.front() == '[' && cell.back() == ']';
}

void integer_cell(std::string_view cell, Unit unit, std::string_view field, Reading &out) {
  // 18 digits stay below 2^63; more go the long way, which refuses what is out of range.
  if (!cell.empty() && cell.size() <= 18) {
    std::int64_t value = 0;
    std::size_t i = 0;
    for (; i < cell.size(); ++i) {
      unsigned digit = static_cast<unsigned>(static_cast<unsigned char>(cell[i])) - '0';
      if (digit > 9)
        break;
      value = value * 10 + digit;
    }
    if (i == cell.size()) {
      out = value;
      return;
    }
  }
  if (bracketed(cell))
    out = std::nullopt;
  else
    out = parse_integer(cell, unit, UnitPolicy::optional, field);
}

void real_cell(std::string_view cell, Unit unit, std::string_view field, RealReading &out) {
  // At most 15 digits, so that they are a whole number a double holds exactly, as it does every
  // power of ten up to 10^22: one correctly rounded division gives the double nearest the
  // decimal, which is what from_chars gives (Clinger's fast path).
  constexpr double powers_of_ten[] = {1e0, 1e1, 1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                      1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15};
  constexpr std::size_t max_digits = 15;
  if (!cell.empty() && cell.size() <= max_digits + 1) {
    std::int64_t digits = 0;
    std::size_t point = std::string_view::npos, i = 0;
    for (; i < cell.size(); ++i) {
      unsigned digit = static_cast<unsigned>(static_cast<unsigned char>(cell[i])) - '0';
      if (digit <= 9)
        digits = digits * 10 + digit;
      else if (cell[i] == '.' && point == std::string_view::npos)
        point = i;
      else
        break;
    }
    // "5." and ".5" go the long way: from_chars and require_digits judge them.
    bool whole = point == std::string_view::npos && cell.size() <= max_digits;
    bool decimal = point != std::string_view::npos && point > 0 && point + 1 < cell.size();
    if (i == cell.size() && (whole || decimal)) {
      out = static_cast<double>(digits) / powers_of_ten[whole ? 0 : cell.size() - point - 1];
      return;
    }
  }
  if (bracketed(cell))
    out = std::nullopt;
  else
    out = parse_real(cell, unit, UnitPolicy::optional, field);
}

std::optional<bool> flag_cell(std::string_view cell, std::string_view yes, std::string_view no,
                              std::string_view field) {
  // By hand: string_view's == called memcmp for a word of a few letters.
  auto same = [cell](std::string_view word) {
    if (cell.size() != word.size())
      return false;
    for (std::size_t i = 0; i < word.size(); ++i)
      if (cell[i] != word[i])
        return false;
    return true;
  };
  if (same(yes))
    return true;
  if (same(no))
    return false;
  if (bracketed(cell))
    return std::nullopt;
  return parse_flag(cell, yes, no, field);
}

// "0x00000000000001FF"; nullopt for an unknown marker. Written into `out`, as integer_cell does.
void parse_bitmask(std::string_view value, const std::string &field,
                   std::optional<std::uint64_t> &out) {
  value = trim(value);
  // As nvidia-smi prints it, read here: sixteen hex digits cannot overflow. Anything else is left
  // to from_chars below.
  if (value.size() > 2 && value.size() <= 18 && value[0] == '0' && value[1] == 'x') {
    std::uint64_t mask = 0;
    std::size_t i = 2;
    for (; i < value.size(); ++i) {
      auto c = static_cast<unsigned char>(value[i]);
      unsigned digit = c - '0', letter = (c | 0x20U) - 'a'; // 'A'-'F' and 'a'-'f' alike
      if (digit > 9)
        digit = letter <= 5 ? letter + 10 : 16;
      if (digit == 16)
        break;
      mask = mask << 4 | digit;
    }
    if (i == value.size()) {
      out = mask;
      return;
    }
  }
  if (is_unknown(value)) {
    out = std::nullopt;
    return;
  }
  std::uint64_t mask = 0;
  std::string_view digits = value.substr(std::min<std::size_t>(2, value.size()));
  auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), mask, 16);
  if (value.substr(0, 2) != "0x" || digits.empty() || error != std::errc() ||
      end != digits.data() + digits.size())
    throw ParseError(field + ": not a hexadecimal bitmask in \"" + std::string(value) + "\"");
  out = mask;
}

std::vector<std::string> reason_names(std::uint64_t mask) {
  std::vector<std::string> names;
  // Reserved: grown a name at a time, the nine names of a row were five allocations.
  std::size_t count = 0;
  for (const ClockReason &reason : clock_reasons)
    count += (mask & reason.bit) != 0;
  names.reserve(count);
  for (const ClockReason &reason : clock_reasons)
    if (mask & reason.bit)
      names.emplace_back(reason.name);
  return names;
}

// Reads each known cell into the row; readings with several candidate columns into
// `alternatives`. A ParseError names the field only.
void read_cells(const detail::CsvCells &cells, const CsvLayout &layout,
                const detail::RowTarget &row, Alternatives &alternatives) {
  Gpu &gpu = row.gpu;
  GpuHealth &health = gpu.health;
  auto &draw = alternatives.draw;
  auto &limit = alternatives.limit;
  const CsvLayout::Column *column_at = layout.columns().data();
  for (std::string_view value : cells) {
    const CsvLayout::Column &column = *column_at++;
    if (!reader_field(column.field)) {
      if (column.field < 0) {
        if (column.extra)
          gpu.extras.push_back({column.name, parse_text(value)});
        continue;
      }
      const GpuField &field = *column.table_field;
      if (field.kind == FieldKind::integer)
        integer_cell(value, field.unit, column.name, field.integer_in(gpu));
      else if (field.kind == FieldKind::real)
        real_cell(value, field.unit, column.name, field.real_in(gpu));
      else
        field.text_in(gpu) = parse_text(value);
      continue;
    }
    const FieldSpec &spec = field_table[column.field];
    auto integer = [&](Reading &out) { integer_cell(value, spec.unit, column.name, out); };
    auto real = [&](RealReading &out) { real_cell(value, spec.unit, column.name, out); };
    auto flag = [&](std::string_view yes, std::string_view no) {
      return flag_cell(value, yes, no, column.name);
    };
    switch (spec.field) {
    case Field::timestamp:
      // nvidia-smi's own "2024/03/14 10:21:33.123", or the agent's CSV's ISO 8601.
      row.timestamp = parse_csv_timestamp(value);
      if (!row.timestamp)
        row.timestamp = parse_iso8601_timestamp(value);
      break;
    case Field::driver_version:
      row.driver_version = parse_text(value);
      break;
    case Field::count:
      integer(row.gpu_count);
      break;
    case Field::index: {
      Reading index;
      integer(index);
      if (index) {
        // Cast as it is, 4294967296 would become GPU 0 and 2147483648 GPU -2147483648.
        if (*index > std::numeric_limits<int>::max())
          throw ParseError(column.name + ": number out of range in \"" + std::string(trim(value)) +
                           "\"");
        gpu.index = static_cast<int>(*index);
      }
      break;
    }
    case Field::uuid:
      gpu.uuid = parse_text(value);
      break;
    case Field::name:
      gpu.name = parse_text(value);
      break;
    case Field::pci_bus_id:
      gpu.pci_bus_id = parse_text(value);
      break;
    case Field::power_draw:
      real(draw[0]);
      break;
    case Field::power_draw_average:
      real(draw[1]);
      break;
    case Field::power_draw_instant:
      real(draw[2]);
      break;
    case Field::power_limit:
      real(limit[0]);
      break;
    case Field::enforced_power_limit:
      real(limit[1]);
      break;
    case Field::mig_mode:
      if (Text mode = parse_text(value))
        gpu.mig_enabled = *mode == "Enabled";
      break;
    case Field::ecc_mode:
      health.ecc_enabled = flag("Enabled", "Disabled");
      break;
    case Field::ecc_pending_mode:
      health.ecc_pending_enabled = flag("Enabled", "Disabled");
      break;
    case Field::ecc_corrected_volatile:
      integer(health.ecc_volatile.corrected);
      break;
    case Field::ecc_corrected_aggregate:
      integer(health.ecc_aggregate.corrected);
      break;
    case Field::ecc_uncorrected_volatile:
      integer(health.ecc_volatile.uncorrected);
      break;
    case Field::ecc_uncorrected_aggregate:
      integer(health.ecc_aggregate.uncorrected);
      break;
    case Field::retired_single_bit:
      integer(health.retired_pages_single_bit);
      break;
    case Field::retired_double_bit:
      integer(health.retired_pages_double_bit);
      break;
    case Field::retired_pending:
      health.retired_pages_pending = flag("Yes", "No");
      break;
    case Field::remapped_correctable:
      integer(health.remapped_rows_correctable);
      break;
    case Field::remapped_uncorrectable:
      integer(health.remapped_rows_uncorrectable);
      break;
    case Field::remapped_pending:
      health.remapped_rows_pending = flag("Yes", "No");
      break;
    case Field::remapped_failure:
      health.remapped_rows_failure = flag("Yes", "No");
      break;
    case Field::pcie_gen:
      integer(alternatives.gen[0]);
      break;
    case Field::pcie_gen_gpu:
      integer(alternatives.gen[1]);
      break;
    case Field::pcie_gen_max:
      integer(alternatives.gen_max[0]);
      break;
    case Field::pcie_gen_gpu_max:
      integer(alternatives.gen_max[1]);
      break;
    case Field::pcie_width:
      integer(health.pcie_link_width);
      break;
    case Field::pcie_width_max:
      integer(health.pcie_link_width_max);
      break;
    case Field::clock_reasons_supported:
      parse_bitmask(value, column.name, alternatives.supported);
      break;
    case Field::clock_reasons_active:
      parse_bitmask(value, column.name, alternatives.active);
      break;
    case Field::clock_reason:
      if (std::optional<bool> on = flag("Active", "Not Active")) {
        alternatives.flags_reported |= spec.bit;
        if (*on)
          alternatives.flags_active |= spec.bit;
      }
      break;
    }
  }
}

// Whether the row's cells say that nvidia-smi listed the GPU but could not read it; kept apart
// from read_cells, which reads each value for what it is.
Text lost_reason(const detail::CsvCells &cells, const CsvLayout &layout) {
  detail::LostEvidence evidence;
  const CsvLayout::Column *column = layout.columns().data();
  for (std::string_view value : cells) {
    const CsvLayout::Column &at = *column++;
    int field = at.field;
    if (!reader_field(field)) {
      if (field < 0)
        continue;
      if (at.table_field->core)
        evidence.core_reading(value);
      else
        evidence.reading(value);
      continue;
    }
    switch (field_table[field].field) {
    case Field::uuid:
    case Field::name:
      evidence.core_reading(value);
      break;
    case Field::timestamp:
    case Field::driver_version:
    case Field::count:
    case Field::index:
    case Field::pci_bus_id:
      break; // the sample's or the slot's, not the GPU's readings
    default:
      evidence.reading(value);
    }
  }
  return evidence.reason();
}

} // namespace

CsvRow read_csv_row(std::string_view line, const CsvLayout &layout, int position) {
  return detail::read_csv_row(detail::CsvCells(line), layout, position);
}

CsvRow detail::read_csv_row(const CsvCells &cells, const CsvLayout &layout, int position) {
  CsvRow row;
  read_csv_row(cells, layout, position,
               {row.gpu, row.timestamp, row.driver_version, row.gpu_count});
  return row;
}

void detail::read_csv_row(const CsvCells &cells, const CsvLayout &layout, int position,
                          const RowTarget &row) {
  auto row_name = [position] { return "row " + std::to_string(position + 1); };
  if (cells.size() != layout.size())
    throw ParseError("CSV " + row_name() + " has " + std::to_string(cells.size()) +
                     " values, but there are " + std::to_string(layout.size()) + " columns");
  Gpu &gpu = row.gpu;
  gpu.index = position;
  Alternatives alternatives;
  try {
    read_cells(cells, layout, row, alternatives);
  } catch (const ParseError &error) {
    throw ParseError(row_name() + " " + error.what()); // the field names itself; add the row
  }
  gpu.lost_reason = lost_reason(cells, layout);
  auto first_known = [](auto &reading, const auto &candidates) {
    for (const auto &candidate : candidates)
      if (!reading)
        reading = candidate;
  };
  first_known(gpu.power_draw_w, alternatives.draw);
  first_known(gpu.power_limit_w, alternatives.limit);
  first_known(gpu.health.pcie_link_gen, alternatives.gen);
  first_known(gpu.health.pcie_link_gen_max, alternatives.gen_max);
  // The per-reason columns have no display_clocks_setting: the bitmasks, where known, say more.
  if (alternatives.supported)
    gpu.clock_event_reasons_reported = reason_names(*alternatives.supported);
  else if (alternatives.flags_reported)
    gpu.clock_event_reasons_reported = reason_names(alternatives.flags_reported);
  if (alternatives.active)
    gpu.clock_event_reasons_active = reason_names(*alternatives.active);
  else if (alternatives.flags_reported)
    gpu.clock_event_reasons_active = reason_names(alternatives.flags_active);
}

Snapshot read_csv(std::string_view text, const std::vector<std::string> &fields) {
  std::vector<std::string_view> lines;
  // nvidia-smi prints a GPU it cannot read as a message in place of its row: not a bad row, a GPU
  // that is there and lost.
  std::vector<UnreadableGpu> unreadable;
  while (!text.empty()) {
    std::size_t newline = text.find('\n');
    std::string_view line = trim(text.substr(0, newline));
    if (auto gpu = parse_unreadable_gpu_line(line))
      unreadable.push_back(std::move(*gpu));
    else if (!line.empty())
      lines.push_back(line);
    text.remove_prefix(newline == std::string_view::npos ? text.size() : newline + 1);
  }
  if (lines.empty())
    throw ParseError(unreadable.empty() ? "empty CSV: no header and no rows"
                                        : "CSV has no rows: nvidia-smi could not read any GPU");

  bool has_header = CsvLayout::is_header(lines.front());
  CsvLayout layout =
      has_header ? CsvLayout::from_header(lines.front()) : CsvLayout::from_fields(fields);
  std::size_t first_row = has_header ? 1 : 0;
  if (lines.size() == first_row)
    throw ParseError(unreadable.empty() ? "CSV has a header but no rows"
                                        : "CSV has no rows: nvidia-smi could not read any GPU");

  Snapshot snapshot;
  snapshot.source = Source::csv;
  snapshot.gpus.reserve(lines.size() - first_row);
  Reading expected_rows;
  for (std::size_t i = first_row; i < lines.size(); ++i) {
    std::optional<Timestamp> timestamp;
    Text driver_version;
    Reading gpu_count;
    detail::read_csv_row(detail::CsvCells(lines[i]), layout, static_cast<int>(i - first_row),
                         {snapshot.gpus.emplace_back(), timestamp, driver_version, gpu_count});
    if (i == first_row) {
      snapshot.timestamp = timestamp;
      snapshot.driver_version = driver_version;
      expected_rows = gpu_count;
    }
  }
  std::size_t rows = snapshot.gpus.size();
  add_unreadable_gpus(snapshot, unreadable);
  if (expected_rows && static_cast<std::int64_t>(snapshot.gpus.size()) != *expected_rows)
    throw ParseError(
        "CSV has " + std::to_string(rows) + " rows" +
        (snapshot.gpus.size() == rows
             ? std::string()
             : " and " + std::to_string(snapshot.gpus.size() - rows) + " GPUs it could not read") +
        ", but its count column says " + std::to_string(*expected_rows) +
        " GPUs (a partial sample, or several samples)");
  return snapshot;
}

} // namespace nvsmi
