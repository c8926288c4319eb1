#include "formats/formats.hpp"

namespace nvsmi {

std::optional<Format> format_from_name(std::string_view name) {
  if (name == "legacy")
    return Format::legacy;
  if (name == "json")
    return Format::json;
  if (name == "csv")
    return Format::csv;
  if (name == "table")
    return Format::table;
  return std::nullopt;
}

std::string format_name(Format format) {
  switch (format) {
  case Format::legacy:
    return "legacy";
  case Format::json:
    return "json";
  case Format::csv:
    return "csv";
  case Format::table:
    return "table";
  }
  return "legacy";
}

std::string format_snapshot(const Snapshot &snapshot, Format format, const TableStyle &style) {
  switch (format) {
  case Format::legacy:
    return format_legacy(snapshot) + "\n";
  case Format::json:
    return format_json(snapshot) + "\n";
  case Format::csv:
    return format_csv(snapshot);
  case Format::table:
    return format_table(snapshot, style);
  }
  return {};
}

} // namespace nvsmi
