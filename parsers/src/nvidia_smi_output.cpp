#include "nvsmi/nvidia_smi_output.hpp"

#include "nvsmi/csv_reader.hpp"
#include "nvsmi/quantity.hpp"
#include "nvsmi/stream.hpp"
#include "nvsmi/unreadable_gpu.hpp"
#include "nvsmi/xml_reader.hpp"

#include <string>

namespace nvsmi {
namespace {

std::string_view content_of(std::string_view bytes) {
  if (bytes.substr(0, 3) == "\xEF\xBB\xBF")
    bytes.remove_prefix(3);
  return trim(bytes);
}

} // namespace

Source output_kind(std::string_view bytes) {
  std::string_view document = after_unreadable_gpu_lines(content_of(bytes));
  return !document.empty() && document.front() == '<' ? Source::xml : Source::csv;
}

Snapshot read_xml_output(std::string_view text) {
  std::vector<UnreadableGpu> unreadable;
  std::string_view document = after_unreadable_gpu_lines(text, &unreadable);
  if (document.empty() || document.front() != '<')
    return read_xml(text); // no document after all: the XML reader says what it lacks
  Snapshot snapshot = read_xml(document);
  add_unreadable_gpus(snapshot, unreadable);
  return snapshot;
}

namespace {

// read_xml_output_in_place's work, on the `size` bytes at `text`.
Snapshot xml_output_in_place(char *text, std::size_t size) {
  std::string_view trimmed = trim(std::string_view(text, size));
  std::vector<UnreadableGpu> unreadable;
  std::string_view document = after_unreadable_gpu_lines(trimmed, &unreadable);
  if (document.empty() || document.front() != '<')
    return read_xml(trimmed); // no document after all: the XML reader says what it lacks
  Snapshot snapshot = read_xml_in_place(text + (document.data() - text), document.size());
  add_unreadable_gpus(snapshot, unreadable);
  return snapshot;
}

} // namespace

Snapshot read_xml_output_in_place(std::string &text) {
  return xml_output_in_place(text.data(), text.size());
}

Snapshot read_nvidia_smi_output(std::string_view bytes) {
  std::string_view content = content_of(bytes);
  if (content.empty())
    throw ParseError("empty output");
  // CSV names its unreadable GPUs among its rows, which its reader reads itself.
  return output_kind(content) == Source::xml ? read_xml_output(content) : read_csv(content);
}

Snapshot read_nvidia_smi_output_in_place(char *bytes, std::size_t size) {
  std::string_view content = content_of(std::string_view(bytes, size));
  if (content.empty())
    throw ParseError("empty output");
  if (output_kind(content) != Source::xml)
    return read_csv(content);
  return xml_output_in_place(bytes + (content.data() - bytes), content.size());
}

std::vector<Snapshot> read_nvidia_smi_recording(std::string_view bytes,
                                                const std::vector<std::string> &extra_fields) {
  std::string_view content = content_of(bytes);
  std::vector<Snapshot> samples;
  StreamPieces pieces;
  // Nothing longer than the whole can be a piece of it.
  std::size_t most = content.size() + 1;
  if (!content.empty() && output_kind(content) == Source::xml) {
    XmlDocumentSplitter(most).feed(content, pieces);
    for (std::string &document : pieces.pieces)
      samples.push_back(read_xml_output_in_place(document));
  } else {
    LineSplitter(most).feed(std::string(content) + "\n", pieces);
    CsvSampleAssembler assembler(CsvLayout::from_fields(query_fields(), extra_fields));
    for (const std::string &line : pieces.pieces)
      if (auto sample = assembler.add_line(line).sample)
        samples.push_back(std::move(*sample));
  }
  if (samples.empty())
    samples.push_back(read_nvidia_smi_output(content));
  return samples;
}

} // namespace nvsmi
