// The XML reader on any bytes: a ParseError or a snapshot every format can print. Reading with
// unread elements skipped must give what the full parse gives where both accept, and refuse
// whatever the full parse refuses except a document whose only fault lies inside an element it
// skipped; when both refuse, they may name different faults. Reading in place (the stream's way)
// must give exactly what reading from a view gives, the error message included.
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
std::optional<std::string> outcome(std::string_view input, nvsmi::XmlParse mode, std::string &error,
                                   bool in_place = false) {
  try {
    std::string buffer(in_place ? input : std::string_view());
    nvsmi::Snapshot snapshot = in_place
                                   ? nvsmi::read_xml_in_place(buffer.data(), buffer.size(), mode)
                                   : nvsmi::read_xml(input, mode);
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
  std::string skip_error, full_error;
  std::optional<std::string> skipped = outcome(input, nvsmi::XmlParse::skip_unread, skip_error);
  std::optional<std::string> full = outcome(input, nvsmi::XmlParse::full, full_error);
  std::string in_place_error;
  std::optional<std::string> in_place =
      outcome(input, nvsmi::XmlParse::skip_unread, in_place_error, true);
  if (in_place != skipped || in_place_error != skip_error) {
    std::fprintf(stderr, "in place and from a view differ:\n%s\n%s\n",
                 in_place ? in_place->c_str() : in_place_error.c_str(),
                 skipped ? skipped->c_str() : skip_error.c_str());
    std::abort();
  }
  bool same = skipped ? (!full || *skipped == *full) : !full;
  if (!same) {
    std::fprintf(stderr, "skip_unread and full differ:\n%s\n%s\n",
                 skipped ? skipped->c_str() : skip_error.c_str(),
                 full ? full->c_str() : full_error.c_str());
    std::abort();
  }
  return 0;
}
