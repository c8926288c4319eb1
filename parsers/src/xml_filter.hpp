// Less for the DOM parser to build: most of what `nvidia-smi -q -x` prints about a GPU (ECC
// counters, retired pages, supported clocks, ...) is never read.
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

namespace nvsmi::detail {

// Bytes [begin, end) of a document.
struct ByteRange {
  std::size_t begin, end;
};

// Where the children of each /nvidia_smi_log/gpu that `read` does not name lie in an nvidia-smi
// XML document, in document order, in `dropped` (cleared first). The tags outside them are matched
// to their end tags, so a truncated or mis-nested document is still noticed; inside a dropped
// element only its own end tag is looked for, and nothing else in it is checked. False for
// anything this scan leaves to the full parser: a comment, CDATA, a processing instruction or
// DOCTYPE subset inside the document, a root other than <nvidia_smi_log>, a tag that does not close
// or match. The caller then parses the whole document.
bool find_unread_gpu_children(std::string_view document, bool (*read)(std::string_view name),
                              std::vector<ByteRange> &dropped);

// Writes the document less its `dropped` ranges to `out`, which may be the document's own first
// byte (the kept bytes then move down in place: no copy is made) or a buffer of its size less
// theirs. Returns the size written.
std::size_t write_without(std::string_view document, const std::vector<ByteRange> &dropped,
                          char *out);

// Where the byte at `offset` of what write_without wrote was in the document.
std::size_t offset_before_dropping(std::size_t offset, const std::vector<ByteRange> &dropped);

} // namespace nvsmi::detail
