// The head of an HTTP/1.x request as a client sends it (RFC 9112 sections 3
// and 5): the request line and the fields, checked strictly enough that a
// proxy in front of an upstream cannot be made to read one request where the
// upstream would read another (no field-name white space, no folded lines, no
// conflicting or malformed Content-Length, no Transfer-Encoding but chunked).
//
// The server's request reader (http_server.cc), on its own so that it is
// tested case by case and fuzzed (fuzz/http1_request_fuzzer.cc): what a
// client sends is untrusted.
//
// Thread safety: pure functions.
#ifndef COMPACTOR_SRC_SERVE_HTTP1_REQUEST_H_
#define COMPACTOR_SRC_SERVE_HTTP1_REQUEST_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "serve/http_util.h"

namespace compactor::serve {

// Limits on a request head: above what any client sends, low enough that a
// client cannot make the server grow without bound.
constexpr size_t kMaxRequestHeadBytes = 64 * 1024;
constexpr size_t kMaxRequestTargetBytes = 8 * 1024;

struct RequestHead {
  std::string method;
  std::string target;
  bool http10 = false;  // HTTP/1.0 (else HTTP/1.1)
  HeaderList headers;   // every field in order, names as sent, values trimmed
  // --- what the fields say ---
  bool chunked = false;          // Transfer-Encoding: chunked
  int64_t length = -1;           // Content-Length, -1 when absent
  bool close = false;            // the connection ends after this request
  bool expect_continue = false;  // Expect: 100-continue (HTTP/1.1)
};

// Where the head ends in `data`: the size of the head including its empty
// line ("\r\n\r\n" or "\n\n"), or 0 when it is not complete yet. Empty lines
// before the request line (RFC 9112 section 2.2; at most 4) count as part of
// the head. `from`: the size `data` had at the previous call for the same
// head (0 at the first), so that a head arriving in many pieces is scanned
// once, not once per piece.
size_t FindRequestHeadEnd(std::string_view data, size_t from = 0);

// Parses a complete head (as FindRequestHeadEnd delimits it) into `out`.
// Returns 0, or the HTTP status to answer with: 400 (malformed; an
// HTTP/1.1 request without a Host field; more than one Host field), 414
// (target too long), 431 (head too large), 501 (a Transfer-Encoding other
// than chunked), 505 (not HTTP/1.x). `why` (may be null) gets a short reason.
int ParseRequestHead(std::string_view head, RequestHead* out, std::string* why = nullptr);

}  // namespace compactor::serve

#endif  // COMPACTOR_SRC_SERVE_HTTP1_REQUEST_H_
