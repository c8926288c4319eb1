// Less for the DOM parser to build: most of what `nvidia-smi -q -x` prints about a GPU (ECC
// counters, retired pages, supported clocks, ...) is never read.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace nvsmi::detail {

// A copy of an nvidia-smi XML document without the children of each /nvidia_smi_log/gpu that
// `read` does not name. The tags outside the dropped elements are matched to their end tags, so a
// truncated or mis-nested document is still noticed; inside a dropped element only its own end tag
// is looked for, and nothing else in it is checked. nullopt for anything this scan leaves to the
// full parser: a comment, CDATA, a processing instruction or DOCTYPE subset inside the document, a
// root other than <nvidia_smi_log>, a tag that does not close or match. The caller then parses the
// original.
std::optional<std::string> without_unread_gpu_children(std::string_view document,
                                                       bool (*read)(std::string_view name));

} // namespace nvsmi::detail
