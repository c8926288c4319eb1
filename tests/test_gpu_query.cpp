#include "nvidia_smi/gpu_query.hpp"

#include "nvsmi/csv_reader.hpp"

#include <catch2/catch.hpp>

#include <algorithm>

namespace test_gpu_query {

using namespace nvsmi;

TEST_CASE("GPU query: the field nvidia-smi refuses, from its message") {
  CHECK(refused_query_field("Field \"remapped_rows.pending\" is not a valid field to query.") ==
        "remapped_rows.pending");
  CHECK(refused_query_field("nvidia-smi exited with code 2: Field \"x.y\" is not a valid field "
                            "to query.") == "x.y");
  CHECK_FALSE(refused_query_field("Field \"\" is not a valid field to query."));
  CHECK_FALSE(refused_query_field("No devices were found"));
  CHECK_FALSE(refused_query_field("Field \"x.y\" is something else"));
}

TEST_CASE("GPU query: drops a standard reading it is refused, never a GPU's name or --fields") {
  GpuQuery query({"clocks.max.sm", "serial"});
  CHECK(query.argument() == "--query-gpu=" + [] {
    std::string joined;
    for (const std::string &field : query_fields())
      joined += field + ",";
    return joined;
  }() + "clocks.max.sm,serial");

  CHECK(query.drop_refused("Field \"remapped_rows.failure\" is not a valid field to query.") ==
        "remapped_rows.failure");
  CHECK(query.standard().size() == query_fields().size() - 1);
  CHECK(std::find(query.standard().begin(), query.standard().end(), "remapped_rows.failure") ==
        query.standard().end());
  CHECK(query.dropped() == std::vector<std::string>{"remapped_rows.failure"});
  CHECK(query.argument().find("remapped_rows.failure") == std::string::npos);
  CHECK(query.argument().find(",remapped_rows.pending,pcie.link.gen.current,") !=
        std::string::npos);

  // Once dropped it is not in the query: a second refusal of it is something else.
  CHECK_FALSE(query.drop_refused("Field \"remapped_rows.failure\" is not a valid field to query."));
  for (const char *required :
       {"timestamp", "driver_version", "count", "index", "uuid", "name", "pci.bus_id"})
    CHECK_FALSE(query.drop_refused(std::string("Field \"") + required +
                                   "\" is not a valid field to query."));
  CHECK_FALSE(query.drop_refused("Field \"serial\" is not a valid field to query."));
  CHECK_FALSE(query.drop_refused("Field \"no.such.field\" is not a valid field to query."));
  CHECK_FALSE(query.drop_refused("NVIDIA-SMI has failed because it couldn't communicate"));
  CHECK(query.standard().size() == query_fields().size() - 1);
  CHECK(query.extra() == std::vector<std::string>{"clocks.max.sm", "serial"});
}

} // namespace test_gpu_query
