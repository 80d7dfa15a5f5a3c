#include "serve/http1_request.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstring>

namespace compactor::serve {
namespace {

// The line starting at *pos without its line end ("\r\n" or "\n"); *pos
// moves past it. The whole rest when no line end follows.
std::string_view NextLine(std::string_view head, size_t* pos) {
  size_t nl = head.find('\n', *pos);
  size_t end = nl == std::string_view::npos ? head.size() : nl;
  std::string_view line = head.substr(*pos, end - *pos);
  *pos = nl == std::string_view::npos ? head.size() : nl + 1;
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line;
}

// Where the request line starts: after the empty lines a client may send
// first (RFC 9112 section 2.2), at most kLeadingEmptyLines of them (more
// make an empty request line, refused; the bound keeps the scan short).
constexpr int kLeadingEmptyLines = 4;
size_t SkipEmptyLines(std::string_view data) {
  size_t start = 0;
  for (int lines = 0; lines < kLeadingEmptyLines && start < data.size(); ++lines) {
    if (data[start] == '\n') {
      ++start;
    } else if (data[start] == '\r' && start + 1 < data.size() && data[start + 1] == '\n') {
      start += 2;
    } else {
      break;
    }
  }
  return start;
}

// "HTTP/1.x": 0 when it is, else the status to answer with.
int CheckVersion(std::string_view v, bool* http10) {
  bool shape = v.size() == 8 && v.substr(0, 5) == "HTTP/" && std::isdigit(v[5]) != 0 &&
               v[6] == '.' && std::isdigit(v[7]) != 0;
  if (!shape) return 400;
  if (v[5] != '1') return 505;
  *http10 = v[7] == '0';
  return 0;
}

}  // namespace

size_t FindRequestHeadEnd(std::string_view data, size_t from) {
  const size_t start = SkipEmptyLines(data);
  // The end is an empty line after the request line: a '\n' right after
  // the '\n' that ends the line before ("\n\n" or "\n\r\n"). Looking back two
  // bytes from each '\n' finds it across the pieces the head came in.
  for (size_t i = data.find('\n', std::max(start, from)); i != std::string_view::npos;
       i = data.find('\n', i + 1)) {
    if (i >= start + 1 && data[i - 1] == '\n') return i + 1;
    if (i >= start + 2 && data[i - 1] == '\r' && data[i - 2] == '\n') return i + 1;
  }
  return 0;
}

int ParseRequestHead(std::string_view head, RequestHead* out, std::string* why) {
  auto fail = [why](int status, const char* reason) {
    if (why != nullptr) *why = reason;
    return status;
  };
  *out = RequestHead();
  if (head.size() > kMaxRequestHeadBytes) return fail(431, "the request head exceeds 64 KiB");
  size_t pos = SkipEmptyLines(head);
  std::string_view line = NextLine(head, &pos);
  size_t sp1 = line.find(' ');
  size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos) return fail(400, "the request line is malformed");
  std::string_view method = line.substr(0, sp1);
  std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  if (!IsHttpToken(method) || target.empty() || !IsSafeFieldValue(target) ||
      target.find('\t') != std::string_view::npos) {
    return fail(400, "the request line is malformed");
  }
  if (target.size() > kMaxRequestTargetBytes) return fail(414, "the request target exceeds 8 KiB");
  if (int status = CheckVersion(line.substr(sp2 + 1), &out->http10)) {
    return fail(status,
                status == 505 ? "the HTTP version is not 1.x" : "the request line is malformed");
  }
  out->method = std::string(method);
  out->target = std::string(target);
  bool keep_alive = false;
  bool transfer_coding = false;
  int hosts = 0;
  while (pos < head.size()) {
    line = NextLine(head, &pos);
    if (line.empty()) break;
    // A folded line (obs-fold) or white space before the colon: rejected
    // (RFC 9112 sections 5.1 and 5.2), not guessed at.
    size_t colon = line.find(':');
    if (colon == std::string_view::npos || !IsHttpToken(line.substr(0, colon))) {
      return fail(400, "a header line is malformed");
    }
    std::string_view name = line.substr(0, colon);
    std::string_view value = TrimOws(line.substr(colon + 1));
    if (!IsSafeFieldValue(value)) return fail(400, "a header value holds a control character");
    if (EqualsIgnoreCase(name, "content-length")) {
      int64_t n = -1;
      auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
      if (ec != std::errc() || p != value.data() + value.size() || value[0] == '-' ||
          (out->length >= 0 && n != out->length)) {
        return fail(400, "the Content-Length is not valid");
      }
      out->length = n;
    } else if (EqualsIgnoreCase(name, "transfer-encoding")) {
      transfer_coding = true;
      if (!EqualsIgnoreCase(value, "chunked") || out->chunked) {
        return fail(501, "a Transfer-Encoding other than chunked");
      }
      out->chunked = true;
    } else if (EqualsIgnoreCase(name, "connection")) {
      out->close = out->close || ListHasToken(value, "close");
      keep_alive = keep_alive || ListHasToken(value, "keep-alive");
    } else if (EqualsIgnoreCase(name, "host")) {
      if (++hosts > 1) return fail(400, "more than one Host field");
    } else if (EqualsIgnoreCase(name, "expect")) {
      out->expect_continue = !out->http10 && EqualsIgnoreCase(value, "100-continue");
    }
    out->headers.emplace_back(std::string(name), std::string(value));
  }
  // Both framings: a request smuggling attempt more often than a mistake.
  if (transfer_coding && out->length >= 0) {
    return fail(400, "both Transfer-Encoding and Content-Length");
  }
  // RFC 9112 section 3.2: every HTTP/1.1 request names its host, once.
  if (!out->http10 && hosts == 0) return fail(400, "no Host field");
  // An HTTP/1.0 message with a transfer coding may have been framed
  // differently by whatever sent it: read it, then close (section 6.1).
  out->close = out->close || (out->http10 && (!keep_alive || transfer_coding));
  return 0;
}

}  // namespace compactor::serve
