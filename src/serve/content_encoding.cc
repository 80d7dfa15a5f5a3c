#include "serve/content_encoding.h"

#include <brotli/decode.h>
#include <zlib.h>
#include <zstd.h>

#include <memory>
#include <vector>

#include "serve/http_util.h"

namespace compactor::serve {
namespace {

constexpr size_t kChunk = 64 * 1024;

Status TooLarge(size_t limit) {
  return Status::FailedPrecondition("the decoded request body exceeds " + std::to_string(limit) +
                                    " bytes");
}

// zlib for gzip (window bits 15 + 16), zlib-wrapped deflate (15) and raw
// deflate (-15).
Result<std::string> Inflate(std::string_view in, int window_bits, size_t limit,
                            std::string_view name) {
  z_stream z{};
  if (inflateInit2(&z, window_bits) != Z_OK) return Status::Internal("inflateInit2 failed");
  std::unique_ptr<z_stream, int (*)(z_stream*)> guard(&z, inflateEnd);
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  std::string out;
  char buf[kChunk];
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    z.next_out = reinterpret_cast<Bytef*>(buf);
    z.avail_out = sizeof buf;
    rc = inflate(&z, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR) {
      return Status::InvalidArgument("the " + std::string(name) + " request body does not decode");
    }
    size_t produced = sizeof buf - z.avail_out;
    if (out.size() + produced > limit) return TooLarge(limit);
    out.append(buf, produced);
    if (rc == Z_BUF_ERROR && z.avail_in == 0) {
      return Status::InvalidArgument("the " + std::string(name) + " request body is truncated");
    }
    // gzip allows several members one after the other.
    if (rc == Z_STREAM_END && z.avail_in > 0 && window_bits > 15) {
      if (inflateReset(&z) != Z_OK) return Status::Internal("inflateReset failed");
      rc = Z_OK;
    }
  }
  return out;
}

Result<std::string> Brotli(std::string_view in, size_t limit) {
  std::unique_ptr<BrotliDecoderState, void (*)(BrotliDecoderState*)> st(
      BrotliDecoderCreateInstance(nullptr, nullptr, nullptr), BrotliDecoderDestroyInstance);
  if (!st) return Status::Internal("BrotliDecoderCreateInstance failed");
  const auto* next_in = reinterpret_cast<const uint8_t*>(in.data());
  size_t avail_in = in.size();
  std::string out;
  uint8_t buf[kChunk];
  while (true) {
    uint8_t* next_out = buf;
    size_t avail_out = sizeof buf;
    BrotliDecoderResult r = BrotliDecoderDecompressStream(st.get(), &avail_in, &next_in, &avail_out,
                                                          &next_out, nullptr);
    size_t produced = sizeof buf - avail_out;
    if (out.size() + produced > limit) return TooLarge(limit);
    out.append(reinterpret_cast<char*>(buf), produced);
    if (r == BROTLI_DECODER_RESULT_SUCCESS) return out;
    if (r == BROTLI_DECODER_RESULT_ERROR) {
      return Status::InvalidArgument("the br request body does not decode");
    }
    if (r == BROTLI_DECODER_RESULT_NEEDS_MORE_INPUT) {
      return Status::InvalidArgument("the br request body is truncated");
    }
  }
}

Result<std::string> Zstd(std::string_view in, size_t limit) {
  std::unique_ptr<ZSTD_DCtx, size_t (*)(ZSTD_DCtx*)> ctx(ZSTD_createDCtx(), ZSTD_freeDCtx);
  if (!ctx) return Status::Internal("ZSTD_createDCtx failed");
  ZSTD_inBuffer input{in.data(), in.size(), 0};
  std::string out;
  std::vector<char> buf(ZSTD_DStreamOutSize());
  size_t last = 0;
  while (input.pos < input.size) {
    ZSTD_outBuffer output{buf.data(), buf.size(), 0};
    last = ZSTD_decompressStream(ctx.get(), &output, &input);
    if (ZSTD_isError(last)) return Status::InvalidArgument("the zstd request body does not decode");
    if (out.size() + output.pos > limit) return TooLarge(limit);
    out.append(buf.data(), output.pos);
  }
  // Flush what the decoder still holds once all input is consumed.
  while (last != 0) {
    ZSTD_outBuffer output{buf.data(), buf.size(), 0};
    last = ZSTD_decompressStream(ctx.get(), &output, &input);
    if (ZSTD_isError(last)) return Status::InvalidArgument("the zstd request body does not decode");
    if (output.pos == 0 && last != 0) {
      return Status::InvalidArgument("the zstd request body is truncated");
    }
    if (out.size() + output.pos > limit) return TooLarge(limit);
    out.append(buf.data(), output.pos);
  }
  return out;
}

Result<std::string> DecodeOne(std::string_view coding, std::string_view in, size_t limit) {
  if (coding.empty() || EqualsIgnoreCase(coding, "identity")) {
    if (in.size() > limit) return TooLarge(limit);
    return std::string(in);
  }
  if (EqualsIgnoreCase(coding, "gzip") || EqualsIgnoreCase(coding, "x-gzip")) {
    return Inflate(in, 15 + 16, limit, "gzip");
  }
  if (EqualsIgnoreCase(coding, "deflate")) {
    // RFC 9110 deflate is zlib-wrapped; some clients send raw deflate.
    auto wrapped = Inflate(in, 15, limit, "deflate");
    if (wrapped.ok() || wrapped.status().code() != StatusCode::kInvalidArgument) return wrapped;
    return Inflate(in, -15, limit, "deflate");
  }
  if (EqualsIgnoreCase(coding, "br")) return Brotli(in, limit);
  if (EqualsIgnoreCase(coding, "zstd")) return Zstd(in, limit);
  return Status::Unsupported("unsupported Content-Encoding \"" + std::string(coding) +
                             "\" (gzip, deflate, br, zstd)");
}

std::vector<std::string_view> Codings(std::string_view encoding) {
  std::vector<std::string_view> out;
  while (!encoding.empty()) {
    size_t comma = encoding.find(',');
    std::string_view c = encoding.substr(0, comma);
    while (!c.empty() && (c.front() == ' ' || c.front() == '\t')) c.remove_prefix(1);
    while (!c.empty() && (c.back() == ' ' || c.back() == '\t')) c.remove_suffix(1);
    if (!c.empty()) out.push_back(c);
    if (comma == std::string_view::npos) break;
    encoding.remove_prefix(comma + 1);
  }
  return out;
}

}  // namespace

bool IsIdentityEncoding(std::string_view encoding) {
  for (std::string_view c : Codings(encoding)) {
    if (!EqualsIgnoreCase(c, "identity")) return false;
  }
  return true;
}

Result<std::string> DecodeContent(std::string_view encoding, std::string_view body, size_t limit) {
  std::vector<std::string_view> codings = Codings(encoding);
  if (codings.empty()) return DecodeOne("", body, limit);
  std::string current(body);
  for (auto it = codings.rbegin(); it != codings.rend(); ++it) {
    COMPACTOR_ASSIGN_OR_RETURN(current, DecodeOne(*it, current, limit));
  }
  return current;
}

}  // namespace compactor::serve
