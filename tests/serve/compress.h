// Request bodies compressed the way clients compress them, for the serve
// tests (header-only: the codecs are linked into compactor_tests alone).
#ifndef COMPACTOR_TESTS_SERVE_COMPRESS_H_
#define COMPACTOR_TESTS_SERVE_COMPRESS_H_

#include <brotli/encode.h>
#include <gtest/gtest.h>
#include <zlib.h>
#include <zstd.h>

#include <string>

namespace compactor::testing {

// zlib's deflate with `window_bits` as deflateInit2 takes them: 31 gzip,
// 15 zlib, -15 raw deflate.
inline std::string Zlib(const std::string& in, int window_bits) {
  z_stream z{};
  EXPECT_EQ(deflateInit2(&z, 6, Z_DEFLATED, window_bits, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&z, in.size()) + 32, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

inline std::string Gzip(const std::string& in) { return Zlib(in, 31); }

inline std::string Brotli(const std::string& in) {
  size_t n = BrotliEncoderMaxCompressedSize(in.size());
  std::string out(n, '\0');
  EXPECT_TRUE(BrotliEncoderCompress(
      BROTLI_DEFAULT_QUALITY, BROTLI_DEFAULT_WINDOW, BROTLI_DEFAULT_MODE, in.size(),
      reinterpret_cast<const uint8_t*>(in.data()), &n, reinterpret_cast<uint8_t*>(out.data())));
  out.resize(n);
  return out;
}

inline std::string Zstd(const std::string& in) {
  std::string out(ZSTD_compressBound(in.size()), '\0');
  size_t n = ZSTD_compress(out.data(), out.size(), in.data(), in.size(), 3);
  EXPECT_FALSE(ZSTD_isError(n));
  out.resize(n);
  return out;
}

}  // namespace compactor::testing

#endif  // COMPACTOR_TESTS_SERVE_COMPRESS_H_
