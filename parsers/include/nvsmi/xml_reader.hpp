#pragma once

#include "nvsmi/snapshot.hpp"

#include <string_view>

namespace nvsmi {

// Reads one `nvidia-smi -q -x` document (schema v10 to v13, Linux or Windows, one or many GPUs,
// MIG). Unknown elements are ignored; missing ones are unknown readings. Throws ParseError for
// input that is not well-formed nvidia-smi XML, or a value with the wrong unit.
Snapshot read_xml(std::string_view document);

} // namespace nvsmi
