// Request bodies with a Content-Encoding, decoded where the proxy must read
// them: gzip (and x-gzip), deflate (zlib, or raw deflate as some clients send
// it), br, zstd and identity, through Debian's zlib, brotli and zstd. A list
// ("gzip, br") is undone in reverse order, as RFC 9110 says.
#ifndef COMPACTOR_SRC_SERVE_CONTENT_ENCODING_H_
#define COMPACTOR_SRC_SERVE_CONTENT_ENCODING_H_

#include <cstddef>
#include <string>
#include <string_view>

#include "compactor/status.h"

namespace compactor::serve {

// Decodes `body`. Errors: kUnsupported for an unknown coding (HTTP 415),
// kInvalidArgument for data that does not decode (400), kFailedPrecondition
// when the decoded body would exceed `limit` bytes (413; decoding stops
// there, so a small bomb never takes more than `limit` of memory).
Result<std::string> DecodeContent(std::string_view encoding, std::string_view body, size_t limit);

// Whether `encoding` is empty or only "identity".
bool IsIdentityEncoding(std::string_view encoding);

}  // namespace compactor::serve

#endif  // COMPACTOR_SRC_SERVE_CONTENT_ENCODING_H_
