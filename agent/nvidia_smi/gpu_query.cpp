#include "nvidia_smi/gpu_query.hpp"

#include "nvidia_smi/source.hpp"

#include "nvsmi/csv_reader.hpp"

#include <algorithm>

namespace nvsmi {
namespace {

// What tells one GPU and one sample from another: a query without them cannot be read.
constexpr std::string_view required_fields[] = {"timestamp", "driver_version", "count",     "index",
                                                "uuid",      "name",           "pci.bus_id"};

} // namespace

std::optional<std::string> refused_query_field(std::string_view message) {
  constexpr std::string_view before = "Field \"", after = "\" is not a valid field to query";
  std::size_t start = message.find(before);
  if (start == std::string_view::npos)
    return std::nullopt;
  start += before.size();
  std::size_t end = message.find(after, start);
  if (end == std::string_view::npos || end == start)
    return std::nullopt;
  return std::string(message.substr(start, end - start));
}

GpuQuery::GpuQuery(std::vector<std::string> extra_fields)
    : standard_(query_fields()), extra_(std::move(extra_fields)) {}

std::string GpuQuery::argument() const {
  std::vector<std::string> fields = standard_;
  fields.insert(fields.end(), extra_.begin(), extra_.end());
  return "--query-gpu=" + field_list(fields);
}

std::optional<std::string> GpuQuery::drop_refused(std::string_view message) {
  std::optional<std::string> field = refused_query_field(message);
  if (!field ||
      std::find(std::begin(required_fields), std::end(required_fields), *field) !=
          std::end(required_fields) ||
      std::find(extra_.begin(), extra_.end(), *field) != extra_.end())
    return std::nullopt;
  auto standard = std::find(standard_.begin(), standard_.end(), *field);
  if (standard == standard_.end())
    return std::nullopt;
  standard_.erase(standard);
  dropped_.push_back(*field);
  return field;
}

} // namespace nvsmi
