// The XML reader on any bytes: a ParseError or a snapshot every format can print. Reading in place
// (the stream's way) must give exactly what reading from a view gives, the error message included.
#include "check_output.hpp"
#include "formats/formats.hpp"

#include "nvsmi/quantity.hpp"
#include "nvsmi/xml_reader.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

namespace {

// The snapshot as typed JSON, or nullopt and the error message in `error`.
std::optional<std::string> outcome(std::string_view input, std::string &error, bool in_place) {
  try {
    std::string buffer(in_place ? input : std::string_view());
    nvsmi::Snapshot snapshot =
        in_place ? nvsmi::read_xml_in_place(buffer.data(), buffer.size()) : nvsmi::read_xml(input);
    fuzz::check_formats(snapshot);
    return nvsmi::format_json(snapshot);
  } catch (const nvsmi::ParseError &parse_error) {
    error = parse_error.what();
    return std::nullopt;
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  std::string_view input(reinterpret_cast<const char *>(data), size);
  std::string view_error, in_place_error;
  std::optional<std::string> view = outcome(input, view_error, false);
  std::optional<std::string> in_place = outcome(input, in_place_error, true);
  if (in_place != view || in_place_error != view_error) {
    std::fprintf(stderr, "in place and from a view differ:\n%s\n%s\n",
                 in_place ? in_place->c_str() : in_place_error.c_str(),
                 view ? view->c_str() : view_error.c_str());
    std::abort();
  }
  return 0;
}
