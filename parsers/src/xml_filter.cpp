#include "xml_filter.hpp"

#include <array>
#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

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

// Where the name that starts at `from` ends: its first byte that is not a name byte. Four bytes
// a step where four are left: names are some 15 bytes, and a test of the end for each byte cost
// as much as the rest of the step.
std::size_t end_of_name(std::string_view document, std::size_t from) {
  const char *bytes = document.data();
  std::size_t at = from;
  for (; at + 4 <= document.size(); at += 4) {
    if (!name_char(bytes[at]))
      return at;
    if (!name_char(bytes[at + 1]))
      return at + 1;
    if (!name_char(bytes[at + 2]))
      return at + 2;
    if (!name_char(bytes[at + 3]))
      return at + 3;
  }
  while (at < document.size() && name_char(bytes[at]))
    ++at;
  return at;
}

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
std::size_t end_of_element_tag_by_tag(std::string_view document, std::string_view name,
                                      std::size_t from, std::size_t &next_equals) {
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

// Where `name` may begin among the 64 places from `bytes`: bit i where byte i is the name's first
// and byte i + size - 1 its last (needs 63 + size bytes). Two bytes a name's length apart rule out
// nearly every other place at once, nested names that begin alike included
// (<supported_clocks><supported_mem_clock>), for a few instructions per 16 places and no call.
// Made once for an element, so that the two bytes are spread over a register once, not per step.
class NameCandidates {
public:
  explicit NameCandidates(std::string_view name) : name_(name) {
#if defined(__SSE2__)
    first_ = _mm_set1_epi8(name.front());
    last_ = _mm_set1_epi8(name.back());
#endif
  }

  std::uint64_t in_64(const char *bytes) const {
#if defined(__SSE2__)
    const char *lasts = bytes + name_.size() - 1;
    return in_16(bytes, lasts) | in_16(bytes + 16, lasts + 16) << 16 |
           in_16(bytes + 32, lasts + 32) << 32 | in_16(bytes + 48, lasts + 48) << 48;
#else
    std::uint64_t mask = 0;
    for (std::size_t i = 0; i < 64; ++i)
      mask |= static_cast<std::uint64_t>(bytes[i] == name_.front() &&
                                         bytes[i + name_.size() - 1] == name_.back())
              << i;
    return mask;
#endif
  }

private:
#if defined(__SSE2__)
  std::uint64_t in_16(const char *firsts, const char *lasts) const {
    __m128i first = _mm_cmpeq_epi8(load(firsts), first_);
    __m128i last = _mm_cmpeq_epi8(load(lasts), last_);
    return static_cast<std::uint64_t>(
        static_cast<unsigned>(_mm_movemask_epi8(_mm_and_si128(first, last))));
  }
  static __m128i load(const char *bytes) {
    return _mm_loadu_si128(reinterpret_cast<const __m128i *>(bytes));
  }
  __m128i first_, last_;
#endif
  std::string_view name_;
};

// The same for the `places` (< 64) places at `bytes` where the name still fits in the document.
std::uint64_t name_candidates_tail(const char *bytes, std::size_t places, std::string_view name) {
  std::uint64_t mask = 0;
  for (std::size_t i = 0; i < places; ++i)
    mask |= static_cast<std::uint64_t>(bytes[i] == name.front() &&
                                       bytes[i + name.size() - 1] == name.back())
            << i;
  return mask;
}

// The same end, found by looking for the name alone, where nothing in the element can hide a tag:
// `plain` says the document has no '!' or '?' past its root's start tag (so no comment, CDATA or
// processing instruction), and no '=' lies between `from` and the end found (so no attribute,
// whose value alone could hold a '<' that is not a tag). Every '<' there then starts a tag as
// pugixml reads it, so the name right after a '<' or "</" is a tag of it, and the first end tag
// of `name` with no start tag of `name` before it is the element's own: no tag is read to its '>'.
// Anything else goes to the walk above.
std::size_t end_of_element(std::string_view document, std::string_view name, std::size_t from,
                           std::size_t &next_equals, bool plain) {
  if (!plain)
    return end_of_element_tag_by_tag(document, name, from, next_equals);
  const char *bytes = document.data();
  const std::size_t size = document.size();
  if (size - from < name.size())
    return npos;
  // The places where the name fits: [from, past).
  const std::size_t past = size - name.size() + 1;
  const NameCandidates candidates(name);
  for (std::size_t block = from; block < past; block += 64) {
    std::uint64_t mask = past - block >= 64
                             ? candidates.in_64(bytes + block)
                             : name_candidates_tail(bytes + block, past - block, name);
    for (; mask; mask &= mask - 1) {
      std::size_t start = block + static_cast<std::size_t>(__builtin_ctzll(mask));
      std::size_t end = start + name.size();
      // A tag of the name: "<" or "</" before it (never before `from`, the '>' of its start
      // tag), and no name byte after it (not a longer name).
      bool opening = bytes[start - 1] == '<';
      bool closing = !opening && bytes[start - 1] == '/' && bytes[start - 2] == '<';
      if ((!opening && !closing) || (end < size && name_char(bytes[end])) ||
          std::memcmp(bytes + start, name.data(), name.size()) != 0)
        continue;                           // text, or another element's tag
      std::size_t at = start - 1 - closing; // its '<'
      if (next_equals < from)
        next_equals = document.find('=', from);
      if (next_equals < at)
        return end_of_element_tag_by_tag(document, name, from, next_equals);
      if (!closing)
        return npos; // an element of its own name inside: left to the full parser, as above
      while (end < size && space(bytes[end]))
        ++end;
      return end < size && bytes[end] == '>' ? end + 1 : npos;
    }
  }
  return npos;
}

// The next '<' at or after `from`. Between the elements the scan steps over there is mostly a
// line break and indentation: passed byte by byte, for less than a call to memchr.
std::size_t next_tag(std::string_view document, std::size_t from) {
  while (from < document.size() && space(document[from]))
    ++from;
  return from < document.size() && document[from] == '<' ? from : document.find('<', from);
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
  bool plain = false;          // end_of_element's, set at the root's start tag
  for (std::size_t at = document.find('<'); at != npos; at = next_tag(document, at)) {
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

    std::size_t name_end = end_of_name(document, at + 1);
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
      if (!empty && (at = end_of_element(document, name, at, next_equals, plain)) == npos)
        return false;
      if (!read(name)) {
        if (!dropped.empty() &&
            only_space(document.substr(dropped.back().end, tag - dropped.back().end)))
          dropped.back().end = at; // one range for a run of neighbours and the space between
        else
          dropped.push_back({tag, at});
      }
    } else if (!empty) {
      if (depth == 0) {
        std::string_view body = document.substr(at);
        plain = body.find('!') == npos && body.find('?') == npos;
      }
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
