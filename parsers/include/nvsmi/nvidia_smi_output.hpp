// The readers' front door: a whole output of nvidia-smi, or a recording of many, to Snapshots.
// Whether bytes are XML (`-q -x`) or CSV (`--query-gpu`) is told here, and only here.
#pragma once

#include "nvsmi/snapshot.hpp"

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace nvsmi {

// XML where, past a UTF-8 byte order mark (as Windows may write), blank space and the lines in
// which nvidia-smi names the GPUs it cannot read, the bytes begin with '<'; else CSV.
Source output_kind(std::string_view bytes);

// One `-q -x` document, after any lines naming GPUs nvidia-smi cannot read, which it may print
// before it on stdout: those GPUs are in the snapshot, lost. Throws ParseError.
Snapshot read_xml_output(std::string_view text);
// The same, on `text` trimmed, and read where it lies: its bytes are the reader's to overwrite (no
// copy of the document is made), and it is left holding no document.
Snapshot read_xml_output_in_place(std::string &text);

// One sample of either output. Throws ParseError for empty output, or for what the reader of its
// kind refuses.
Snapshot read_nvidia_smi_output(std::string_view bytes);
// The same, an XML document read where it lies: the `size` bytes at `bytes` are the reader's to
// overwrite (no copy of the document is made). For a caller done with them, as `snapshot` is
// with the file it read.
Snapshot read_nvidia_smi_output_in_place(char *bytes, std::size_t size);

// Every sample of a recording: a document or CSV sample, or several recorded from nvidia-smi's
// loop (`-lms`); a CSV recording without the loop's structure is one sample. `extra_fields` are
// the CSV columns asked for after the standard query (--fields). Throws ParseError as above.
std::vector<Snapshot> read_nvidia_smi_recording(std::string_view bytes,
                                                const std::vector<std::string> &extra_fields = {});

} // namespace nvsmi
