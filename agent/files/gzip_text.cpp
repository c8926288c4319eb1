#include "files/gzip_text.hpp"

#include "nvsmi/quantity.hpp"

#include <algorithm>
#include <stdexcept>
#include <zlib.h>

namespace nvsmi {
namespace {

// zlib's window bits for the gzip wrapper (15 + 16): no zlib or raw deflate stream is taken.
constexpr int gzip_window_bits = 15 + 16;
constexpr std::size_t out_part_bytes = 64 * 1024;

} // namespace

std::string gzip_member(std::string_view text) {
  z_stream stream{};
  if (deflateInit2(&stream, Z_DEFAULT_COMPRESSION, Z_DEFLATED, gzip_window_bits, 8,
                   Z_DEFAULT_STRATEGY) != Z_OK)
    throw std::runtime_error("zlib: cannot start compressing");
  std::string out(deflateBound(&stream, static_cast<uLong>(text.size())), '\0');
  stream.next_in = reinterpret_cast<Bytef *>(const_cast<char *>(text.data()));
  stream.avail_in = static_cast<uInt>(text.size());
  stream.next_out = reinterpret_cast<Bytef *>(out.data());
  stream.avail_out = static_cast<uInt>(out.size());
  int result = deflate(&stream, Z_FINISH);
  out.resize(stream.total_out);
  deflateEnd(&stream);
  if (result != Z_STREAM_END) // deflateBound is enough for any input: not reached
    throw std::runtime_error("zlib: cannot compress");
  return out;
}

bool starts_as_gzip(std::string_view bytes) {
  return bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
         static_cast<unsigned char>(bytes[1]) == 0x8b;
}

struct GzipReader::Stream {
  z_stream z{};
  Stream() {
    if (inflateInit2(&z, gzip_window_bits) != Z_OK)
      throw std::runtime_error("zlib: cannot start decompressing");
  }
  ~Stream() { inflateEnd(&z); }
};

GzipReader::GzipReader() : stream_(std::make_unique<Stream>()) {}
GzipReader::~GzipReader() = default;

bool GzipReader::feed(std::string_view compressed,
                      const std::function<bool(std::string_view)> &out) {
  z_stream &z = stream_->z;
  char part[out_part_bytes];
  bool pending = false; // the last call filled `part`: zlib may hold more output
  while (!compressed.empty() || pending) {
    z.next_in = reinterpret_cast<Bytef *>(const_cast<char *>(compressed.data()));
    z.avail_in = static_cast<uInt>(std::min<std::size_t>(compressed.size(), 1u << 30));
    z.next_out = reinterpret_cast<Bytef *>(part);
    z.avail_out = sizeof part;
    uInt given = z.avail_in;
    int result = inflate(&z, Z_NO_FLUSH);
    std::size_t used = given - z.avail_in;
    offset_ += used;
    compressed.remove_prefix(used);
    std::size_t made = sizeof part - z.avail_out;
    pending = z.avail_out == 0;
    if (used > 0 || made > 0)
      inside_ = true;
    // What came before a break is handed on first: the lines it ends are whole.
    if (made > 0 && !out(std::string_view(part, made)))
      return false;
    if (result != Z_OK && result != Z_STREAM_END && result != Z_BUF_ERROR)
      throw ParseError("gzip data broken at byte " + std::to_string(offset_) +
                       (z.msg ? std::string(" (") + z.msg + ")" : std::string()));
    if (result == Z_STREAM_END) { // the next member, if any, starts afresh
      inside_ = false;
      inflateReset(&z);
    } else if (made == 0 && used == 0) {
      break; // nothing more without more input
    }
  }
  return true;
}

} // namespace nvsmi
