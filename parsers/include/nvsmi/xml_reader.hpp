#pragma once

#include "nvsmi/snapshot.hpp"

#include <cstddef>
#include <string_view>

namespace nvsmi {

// Reads one `nvidia-smi -q -x` document (schema v10 to v13, Linux or Windows, one or many GPUs,
// MIG). Unknown elements are ignored; missing ones are unknown readings. Throws ParseError for
// input that is not well-formed nvidia-smi XML, or a value with the wrong unit.
// `skip_unread` (the default) drops the children of each <gpu> that the reader never looks at
// before the DOM is built, which takes 40 % off its cost; `full` builds the whole DOM. Both give
// the same Snapshot for any document both accept. `skip_unread` does not look inside the elements
// it drops: it accepts a document whose only fault lies there, and where a document has faults both
// inside and outside them, it may name a different one.
enum class XmlParse { skip_unread, full };
Snapshot read_xml(std::string_view document, XmlParse mode = XmlParse::skip_unread);

// The same, read where it lies: the `size` bytes at `document` are the parser's to overwrite (the
// kept elements moved down over the dropped ones, then pugixml's strings), so that no copy of the
// document is made. For a caller that holds the document in a buffer of its own and is done with
// it, as the stream is with each document it cuts.
Snapshot read_xml_in_place(char *document, std::size_t size, XmlParse mode = XmlParse::skip_unread);

} // namespace nvsmi
