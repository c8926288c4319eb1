#pragma once

#include "nvsmi/snapshot.hpp"

#include <cstddef>
#include <string_view>

namespace nvsmi {

// Reads one `nvidia-smi -q -x` document (schema v10 to v13, Linux or Windows, one or many GPUs,
// MIG). Unknown elements are ignored; missing ones are unknown readings. Throws ParseError for
// input that is not well-formed nvidia-smi XML, or a value with the wrong unit.
Snapshot read_xml(std::string_view document);

// The same, read where it lies: the `size` bytes at `document` are the parser's to overwrite
// (pugixml writes its strings into them), so that no copy of the document is made. For a caller
// that holds the document in a buffer of its own and is done with it, as the stream is with each
// document it cuts.
Snapshot read_xml_in_place(char *document, std::size_t size);

} // namespace nvsmi
