#include "nn/data/file_io.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>

#include "core/error.h"

namespace tandem::data::detail {

namespace {

bool is_gzip(const std::vector<uint8_t>& bytes) { return bytes.size() >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b; }

// gzip members may follow each other (`cat a.gz b.gz` is a valid gzip file); each is inflated in turn.
std::vector<uint8_t> inflate_gzip(const std::vector<uint8_t>& in, const std::string& path) {
  TD_CHECK(in.size() <= std::numeric_limits<uInt>::max(), path, ": ", in.size(),
           " bytes of gzip data, more than the reader handles (4 GiB)");
  std::vector<uint8_t> out;
  // ISIZE, the last 4 bytes, is the uncompressed size mod 2^32 of the last member: a hint only.
  size_t n = in.size();
  // Deflate expands at most ~1032:1, which bounds what a corrupt trailer can make us reserve.
  if (n >= 18) {
    size_t hint =
        uint32_t{in[n - 4]} | uint32_t{in[n - 3]} << 8 | uint32_t{in[n - 2]} << 16 | uint32_t{in[n - 1]} << 24;
    out.reserve(std::min(hint, n * 1032));
  }
  z_stream stream;
  std::memset(&stream, 0, sizeof stream);
  // 16 + MAX_WBITS: expect a gzip header and trailer (whose CRC-32 and length zlib checks).
  TD_CHECK(inflateInit2(&stream, 16 + MAX_WBITS) == Z_OK, path, ": zlib cannot start inflating it");
  stream.next_in = const_cast<Bytef*>(in.data());
  stream.avail_in = static_cast<uInt>(n);
  std::vector<uint8_t> buffer(size_t{1} << 16);
  auto fail = [&](const std::string& what) {
    inflateEnd(&stream);
    TD_FAIL(path, ": ", what);
  };
  for (;;) {
    stream.next_out = buffer.data();
    stream.avail_out = static_cast<uInt>(buffer.size());
    int status = inflate(&stream, Z_NO_FLUSH);
    out.insert(out.end(), buffer.data(), buffer.data() + (buffer.size() - stream.avail_out));
    size_t consumed = n - stream.avail_in;
    if (status == Z_OK) continue;
    if (status == Z_STREAM_END) {
      if (stream.avail_in == 0) break;
      if (stream.avail_in < 2 || in[consumed] != 0x1f || in[consumed + 1] != 0x8b) {
        fail(std::to_string(stream.avail_in) + " bytes of trailing data after the gzip stream");
      }
      inflateReset(&stream);
    } else if (status == Z_BUF_ERROR) {
      // No progress possible with output space free: the input ended before the stream did.
      fail("truncated gzip data: the compressed stream ends after " + std::to_string(n) +
           " bytes, before its end marker");
    } else {
      fail("corrupt gzip data (zlib: " + std::string(stream.msg ? stream.msg : zError(status)) +
           ") near compressed byte " + std::to_string(consumed));
    }
  }
  inflateEnd(&stream);
  return out;
}

}  // namespace

bool file_exists(const std::string& path) {
  std::error_code error;
  return std::filesystem::is_regular_file(path, error);
}

std::string find_file(const std::string& path, const std::string& what) {
  if (file_exists(path)) return path;
  if (file_exists(path + ".gz")) return path + ".gz";
  TD_FAIL(what, ": neither ", path, " nor ", path, ".gz exists");
}

std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  TD_CHECK(file.is_open(), path, ": cannot open it (", std::strerror(errno), ")");
  // A directory opens too, and reports a size of 2^63 - 1.
  std::error_code error;
  TD_CHECK(std::filesystem::is_regular_file(path, error), path, ": not a regular file (a data file was expected)");
  file.seekg(0, std::ios::end);
  std::streamoff size = file.tellg();
  file.seekg(0, std::ios::beg);
  TD_CHECK(size >= 0 && file.good(), path, ": cannot determine its size");
  std::vector<uint8_t> bytes(static_cast<size_t>(size));
  file.read(reinterpret_cast<char*>(bytes.data()), size);
  TD_CHECK(file.gcount() == size, path, ": read error: got ", file.gcount(), " of its ", size, " bytes");
  return is_gzip(bytes) ? inflate_gzip(bytes, path) : bytes;
}

}  // namespace tandem::data::detail
