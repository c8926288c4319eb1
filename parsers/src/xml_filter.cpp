#include "xml_filter.hpp"

#include <array>
#include <cstring>

namespace nvsmi::detail {
namespace {

// XML name characters, as far as nvidia-smi uses them; any byte of a UTF-8 sequence too.
constexpr std::array<bool, 256> name_chars = [] {
  std::array<bool, 256> table{};
  for (int c = 0; c < 256; ++c)
    table[c] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               c == '_' || c == '-' || c == '.' || c == ':' || c >= 0x80;
  return table;
}();

bool name_char(char c) { return name_chars[static_cast<unsigned char>(c)]; }

bool space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

bool only_space(std::string_view text) {
  for (char c : text)
    if (!space(c))
      return false;
  return true;
}

constexpr std::size_t npos = std::string_view::npos;

// Where the tag whose name ends at `from` ends: its '>', the first outside a quoted attribute
// value. npos when it does not end, or a '<' outside quotes comes first.
std::size_t end_of_tag(std::string_view document, std::size_t from) {
  char quote = 0;
  for (std::size_t at = from; at < document.size(); ++at) {
    char c = document[at];
    if (quote) {
      quote = c == quote ? 0 : quote;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '>') {
      return at;
    } else if (c == '<') {
      return npos;
    }
  }
  return npos;
}

// Where the element `name`, whose start tag ends at `from`, ends: just past its end tag. Only its
// tags are looked at, each start tag to its end, so that a '<' in a quoted attribute value (which
// pugixml takes) is not taken for a tag. npos when there is no end tag, or when inside it an
// element of the same name opens (its end tag would be taken for ours), or a comment, CDATA or
// processing instruction could hide one: the full parser sorts those out.
// `next_equals` is where the document's first '=' at or after some earlier place is (npos: none
// left), kept across calls: '=' is rare in what nvidia-smi writes (the XML declaration, <gpu id=>),
// so telling whether a tag has one is a comparison, where a search of each tag cost a third of
// the walk.
std::size_t end_of_element(std::string_view document, std::string_view name, std::size_t from,
                           std::size_t &next_equals) {
  for (std::size_t at = document.find('<', from); at != npos; at = document.find('<', at + 1)) {
    if (at + 1 == document.size())
      return npos;
    char next = document[at + 1];
    if (next == '!' || next == '?')
      return npos;
    bool closing = next == '/';
    std::size_t start = at + 1 + closing;
    std::size_t end = start + name.size();
    // The first byte before the rest: most tags differ there, and a call to compare costs more
    // than that whole test.
    bool ours = start < document.size() && document[start] == name.front() &&
                document.substr(start, name.size()) == name &&
                !(end < document.size() && name_char(document[end])); // not a longer name
    if (!closing) {
      std::size_t close = ours ? npos : document.find('>', start);
      if (close == npos)
        return npos;
      // Only an attribute value can hold a '<' that pugixml takes, and no attribute is without
      // '=': most tags are passed at memchr's speed. (A '<' in a tag without one is a fault for
      // the full parse; what is dropped need not be read the same.)
      if (next_equals != npos && next_equals < start)
        next_equals = document.find('=', start);
      if (next_equals < close)
        close = end_of_tag(document, start);
      if ((at = close) == npos)
        return npos;
      continue;
    }
    if (!ours)
      continue;
    while (end < document.size() && space(document[end]))
      ++end;
    return end < document.size() && document[end] == '>' ? end + 1 : npos;
  }
  return npos;
}

} // namespace

bool find_unread_gpu_children(std::string_view document, bool (*read)(std::string_view name),
                              std::vector<ByteRange> &dropped) {
  dropped.clear();
  // The element names from the root down. nvidia-smi nests nothing deeper than 2 outside <gpu>
  // (whose children are skipped whole, kept or not); a deeper document is left to the parser.
  std::array<std::string_view, 16> open;
  std::size_t depth = 0;
  bool root_closed = false;
  std::size_t next_equals = 0; // end_of_element's, found when first needed
  for (std::size_t at = document.find('<'); at != npos; at = document.find('<', at)) {
    std::size_t tag = at;
    if (at + 1 == document.size())
      return false;
    char kind = document[at + 1];
    if (kind == '?' || kind == '!') {
      // Before the root only: the XML declaration, and a DOCTYPE without an internal subset.
      if (depth > 0 || root_closed)
        return false;
      std::size_t end = kind == '?' ? document.find("?>", at) : document.find_first_of("[>", at);
      if (end == npos || document[end] == '[' ||
          (kind == '!' && document.compare(at, 9, "<!DOCTYPE") != 0))
        return false;
      at = end + 1;
      continue;
    }
    if (kind == '/') {
      std::size_t end = document.find('>', at);
      if (end == npos || depth == 0)
        return false;
      std::string_view name = document.substr(at + 2, end - at - 2);
      while (!name.empty() && space(name.back()))
        name.remove_suffix(1);
      if (name != open[depth - 1])
        return false;
      --depth;
      at = end + 1;
      root_closed = depth == 0;
      continue;
    }

    std::size_t name_end = at + 1;
    while (name_end < document.size() && name_char(document[name_end]))
      ++name_end;
    std::string_view name = document.substr(at + 1, name_end - at - 1);
    if (name.empty() || root_closed || (depth == 0 && name != "nvidia_smi_log"))
      return false;
    std::size_t end = end_of_tag(document, name_end);
    if (end == npos)
      return false;
    bool empty = document[end - 1] == '/';
    at = end + 1;
    if (depth == 2 && open[1] == "gpu") {
      // A child of <gpu>: jump to its end, and drop it unless it is read. The DOM parser checks
      // what is kept.
      if (!empty && (at = end_of_element(document, name, at, next_equals)) == npos)
        return false;
      if (!read(name)) {
        if (!dropped.empty() &&
            only_space(document.substr(dropped.back().end, tag - dropped.back().end)))
          dropped.back().end = at; // one range for a run of neighbours and the space between
        else
          dropped.push_back({tag, at});
      }
    } else if (!empty) {
      // Deeper than a child of <gpu> outside one is only elements the parser checks; the scan
      // needs their names to match end tags, as deep as they go.
      if (depth == open.size())
        return false;
      open[depth++] = name;
    }
  }
  return root_closed;
}

std::size_t write_without(std::string_view document, const std::vector<ByteRange> &dropped,
                          char *out) {
  std::size_t written = 0, from = 0;
  for (ByteRange range : dropped) {
    std::memmove(out + written, document.data() + from, range.begin - from);
    written += range.begin - from;
    from = range.end;
  }
  std::memmove(out + written, document.data() + from, document.size() - from);
  return written + document.size() - from;
}

std::size_t offset_before_dropping(std::size_t offset, const std::vector<ByteRange> &dropped) {
  for (ByteRange range : dropped) {
    if (offset < range.begin)
      break;
    offset += range.end - range.begin;
  }
  return offset;
}

} // namespace nvsmi::detail
