// gzip (RFC 1952) for the JSON log: a sample's line compressed on its own as one gzip member, so
// that the members appended one after another are always one whole gzip file (gzip -d, zcat,
// zgrep and Python's gzip read every member in turn), and reading such a file back a part at a
// time, with what it decompresses to handed on in bounded pieces. zlib does the work.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace nvsmi {

// `text` as one gzip member (no file name, time 0: the same text gives the same bytes).
std::string gzip_member(std::string_view text);

// Whether `bytes` begin as gzip data does (its two magic bytes).
bool starts_as_gzip(std::string_view bytes);

// Decompresses gzip data given in parts, member after member.
class GzipReader {
public:
  GzipReader();
  ~GzipReader();
  GzipReader(const GzipReader &) = delete;
  GzipReader &operator=(const GzipReader &) = delete;

  // Hands what `compressed` decompresses to to `out`, at most 64 KiB a call, until `out` returns
  // false (then this returns false and the rest is not decompressed). Throws ParseError for data
  // that is not gzip, naming the byte where it breaks.
  bool feed(std::string_view compressed, const std::function<bool(std::string_view)> &out);
  // Whether a member has begun and not ended: data that stops here was cut off.
  bool inside_member() const { return inside_; }

private:
  struct Stream;
  std::unique_ptr<Stream> stream_;
  bool inside_ = false;
  unsigned long long offset_ = 0; // compressed bytes read so far, for messages
};

} // namespace nvsmi
