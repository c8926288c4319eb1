// The fields a `--query-gpu` asks for: the readers' standard ones, then the user's --fields.
// Drivers learn new fields over the years and refuse a whole query that names one they do not
// know (one before R450 knows no remapped_rows.*): a standard reading the agent can do without is
// then dropped from the query, and stays unknown, rather than leaving every GPU unwatched.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace nvsmi {

// The field nvidia-smi names where it refuses a query (`Field "remapped_rows.pending" is not a
// valid field to query.`); nullopt for any other message.
std::optional<std::string> refused_query_field(std::string_view message);

class GpuQuery {
public:
  explicit GpuQuery(std::vector<std::string> extra_fields = {});

  // The standard fields still asked for, in the readers' order.
  const std::vector<std::string> &standard() const { return standard_; }
  const std::vector<std::string> &extra() const { return extra_; }
  // "--query-gpu=" and the standard fields, then the extra ones, comma-separated.
  std::string argument() const;
  // Where `message` refuses a standard reading the query can go without, drops it and returns its
  // name. nullopt, and no change, for any other message, for a field that names a GPU or a sample
  // (timestamp, count, index, uuid, name, pci.bus_id, driver_version: the rows cannot be read
  // without them) and for a field of the user's --fields (asked for by name: refusing it is an
  // error to show).
  std::optional<std::string> drop_refused(std::string_view message);
  // The standard fields dropped so far, in the order they were.
  const std::vector<std::string> &dropped() const { return dropped_; }

private:
  std::vector<std::string> standard_, extra_, dropped_;
};

} // namespace nvsmi
