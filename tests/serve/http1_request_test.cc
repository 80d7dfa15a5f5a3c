// The request head parser (src/serve/http1_request.h): where a head ends,
// what it says, and every way it is refused, with the status the server
// answers. Bodies are read by Http1ResponseReader::ForBody, tested at the
// end on every split of their bytes.
#include "serve/http1_request.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "serve/http1_response.h"

namespace compactor::serve {
namespace {

int Parse(const std::string& head, RequestHead* out = nullptr) {
  RequestHead ignored;
  std::string why;
  int status = ParseRequestHead(head, out != nullptr ? out : &ignored, &why);
  EXPECT_EQ(status == 0, why.empty()) << head;
  return status;
}

TEST(Http1RequestTest, TheHeadEndsAtTheFirstEmptyLine) {
  EXPECT_EQ(FindRequestHeadEnd(""), 0u);
  EXPECT_EQ(FindRequestHeadEnd("GET / HTTP/1.1\r\nHost: x\r\n"), 0u);
  EXPECT_EQ(FindRequestHeadEnd("GET / HTTP/1.1\r\nHost: x\r\n\r"), 0u);
  const std::string head = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
  EXPECT_EQ(FindRequestHeadEnd(head + "BODY"), head.size());
  EXPECT_EQ(FindRequestHeadEnd("GET / HTTP/1.1\nHost: x\n\nBODY"), 24u);
  // Empty lines before the request line belong to this head, not its end.
  EXPECT_EQ(FindRequestHeadEnd("\r\n\r\n" + head), 4 + head.size());
  EXPECT_EQ(FindRequestHeadEnd("\r\n\r\n"), 0u);
}

// A head that arrives in pieces is found where it is found whole, the scan
// resuming where the previous piece ended.
TEST(Http1RequestTest, TheHeadsEndIsFoundAcrossPieces) {
  for (const std::string head : {"GET / HTTP/1.1\r\nHost: x\r\n\r\nBODY",
                                 "\r\nGET / HTTP/1.1\nA: b\n\nBODY", "GET / HTTP/1.1\r\n\r\n"}) {
    const size_t whole = FindRequestHeadEnd(head);
    ASSERT_GT(whole, 0u) << head;
    for (size_t cut = 0; cut <= head.size(); ++cut) {
      size_t early = FindRequestHeadEnd(std::string_view(head).substr(0, cut));
      EXPECT_TRUE(early == 0 || early == whole) << head << " " << cut;
      if (early == 0) {
        EXPECT_EQ(FindRequestHeadEnd(head, cut), whole) << head << " " << cut;
      }
    }
  }
}

TEST(Http1RequestTest, AValidHeadKeepsItsFieldsInOrderWithTheirSpelling) {
  RequestHead h;
  ASSERT_EQ(Parse("\r\nPOST /v1/messages?beta=true HTTP/1.1\r\n"
                  "Host: 127.0.0.1\r\n"
                  "x-api-key:   k  \r\n"
                  "Anthropic-Version:2023-06-01\r\n"
                  "X-Empty:\r\n"
                  "content-length: 12\r\n"
                  "X-Twice: 1\r\nx-twice: 2\r\n\r\n",
                  &h),
            0);
  EXPECT_EQ(h.method, "POST");
  EXPECT_EQ(h.target, "/v1/messages?beta=true");
  EXPECT_FALSE(h.http10);
  HeaderList want = {
      {"Host", "127.0.0.1"}, {"x-api-key", "k"},       {"Anthropic-Version", "2023-06-01"},
      {"X-Empty", ""},       {"content-length", "12"}, {"X-Twice", "1"},
      {"x-twice", "2"}};
  EXPECT_EQ(h.headers, want);
  EXPECT_EQ(h.length, 12);
  EXPECT_FALSE(h.chunked);
  EXPECT_FALSE(h.close);
  EXPECT_FALSE(h.expect_continue);
}

TEST(Http1RequestTest, WhatTheFieldsSayAboutFramingAndTheConnection) {
  RequestHead h;
  ASSERT_EQ(Parse("POST / HTTP/1.1\nHost: h\nTransfer-Encoding: Chunked\nExpect: 100-continue\n"
                  "Connection: keep-alive, Close\n\n",
                  &h),
            0);
  EXPECT_TRUE(h.chunked);
  EXPECT_EQ(h.length, -1);
  EXPECT_TRUE(h.expect_continue);
  EXPECT_TRUE(h.close);
  // HTTP/1.0 closes unless it asks to keep the connection; it has no 100.
  ASSERT_EQ(Parse("GET / HTTP/1.0\r\nExpect: 100-continue\r\n\r\n", &h), 0);
  EXPECT_TRUE(h.http10);
  EXPECT_TRUE(h.close);
  EXPECT_FALSE(h.expect_continue);
  ASSERT_EQ(Parse("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", &h), 0);
  EXPECT_FALSE(h.close);
  ASSERT_EQ(
      Parse("POST / HTTP/1.0\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n", &h),
      0);
  EXPECT_TRUE(h.close);  // framed by a coding HTTP/1.0 does not have
  // The same length twice is one length.
  ASSERT_EQ(
      Parse("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n", &h), 0);
  EXPECT_EQ(h.length, 5);
  // A later minor version is read as 1.1 (RFC 9110 section 2.5).
  EXPECT_EQ(Parse("GET / HTTP/1.7\r\nHost: h\r\n\r\n"), 0);
}

TEST(Http1RequestTest, MalformedHeadsAreRefusedWithTheirStatus) {
  struct Case {
    std::string head;
    int status;
  };
  const std::vector<Case> cases = {
      {"GET /\r\n\r\n", 400},                           // no version
      {"GET  / HTTP/1.1\r\nHost: h\r\n\r\n", 400},      // an empty target
      {"GET / HTTP/1.1 x\r\n\r\n", 400},                // a version with a tail
      {"G(T / HTTP/1.1\r\nHost: h\r\n\r\n", 400},       // not a method
      {"GET /a\x01 HTTP/1.1\r\nHost: h\r\n\r\n", 400},  // a control character
      {"GET / HTTP/1.1\r\nHost: h\r\n\r\n", 0},         // (the same, well-formed)
      {"GET / HTTP/2.0\r\n\r\n", 505},
      {"GET / HTTPS/1.1\r\n\r\n", 400},
      {"GET / HTTP/1.1\r\nHost: h\r\nNoColon\r\n\r\n", 400},
      {"GET / HTTP/1.1\r\nHost: h\r\nName : v\r\n\r\n", 400},    // white space before ':'
      {"GET / HTTP/1.1\r\nHost: h\r\n: v\r\n\r\n", 400},         // no name
      {"GET / HTTP/1.1\r\nHost: h\r\nA: b\r\n c\r\n\r\n", 400},  // a folded line
      {std::string("GET / HTTP/1.1\r\nHost: h\r\nA: b") + '\0' + "c\r\n\r\n", 400},  // a NUL
      {"GET / HTTP/1.1\r\nHost: h\r\nA: b\rc\r\n\r\n", 400},  // a bare CR in a value
      {"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: -1\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: +1\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1x\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nHost: h\r\nContent-Length:\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 99999999999999999999\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 501},
      {"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: "
       "chunked\r\n\r\n",
       501},
      {"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n",
       400},
      {"GET /" + std::string(kMaxRequestTargetBytes, 'a') + " HTTP/1.1\r\nHost: h\r\n\r\n", 414},
      {"GET / HTTP/1.1\r\n\r\n", 400},                        // no Host
      {"GET / HTTP/1.1\r\nHost: a\r\nhost: a\r\n\r\n", 400},  // two
      {"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: -0\r\n\r\n", 400},
      {"\r\n\r\n\r\n\r\n\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n", 400},  // 5 empty lines
      {"\r\n\r\n\r\n\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n", 0},        // 4
      {"GET / HTTP/1.1\r\nHost: h\r\nX: " + std::string(kMaxRequestHeadBytes, 'a') + "\r\n\r\n",
       431},
  };
  for (const auto& c : cases) EXPECT_EQ(Parse(c.head), c.status) << c.head.substr(0, 80);
}

// Http1ResponseReader::ForBody reads a request body alone: by its length or
// chunked, with what follows it (a pipelined request) left unread, whole,
// at every split into two pieces, and byte by byte.
struct BodyOutcome {
  Http1ResponseReader::State state = Http1ResponseReader::State::kMore;
  std::string body;
  size_t used = 0;
  bool operator==(const BodyOutcome& o) const {
    return state == o.state && body == o.body && used == o.used;
  }
};

struct CollectBody final : Http1ResponseReader::Sink {
  std::string* body;
  explicit CollectBody(std::string* b) : body(b) {}
  void HeadLine(std::string_view) override {}
  bool Body(std::string_view data) override {
    body->append(data);
    return true;
  }
};

BodyOutcome ReadBody(bool chunked, uint64_t length, const std::vector<std::string_view>& pieces) {
  BodyOutcome out;
  auto reader = Http1ResponseReader::ForBody(chunked, length);
  CollectBody sink(&out.body);
  out.state = reader.state();
  for (std::string_view p : pieces) {
    if (out.state != Http1ResponseReader::State::kMore) break;
    size_t used = 0;
    out.state = reader.Feed(p, sink, &used);
    out.used += used;
  }
  return out;
}

void ExpectSameAtEverySplit(bool chunked, uint64_t length, std::string_view bytes,
                            const BodyOutcome& want) {
  EXPECT_EQ(ReadBody(chunked, length, {bytes}), want);
  for (size_t i = 0; i <= bytes.size(); ++i) {
    EXPECT_EQ(ReadBody(chunked, length, {bytes.substr(0, i), bytes.substr(i)}), want) << i;
  }
  std::vector<std::string_view> bytewise;
  for (size_t i = 0; i < bytes.size(); ++i) bytewise.push_back(bytes.substr(i, 1));
  EXPECT_EQ(ReadBody(chunked, length, bytewise), want);
}

TEST(Http1RequestTest, BodiesAreReadByLengthOrChunksAndStopAtTheirEnd) {
  using State = Http1ResponseReader::State;
  const std::string next = "GET /next HTTP/1.1\r\n\r\n";
  ExpectSameAtEverySplit(false, 5, "hello" + next, {State::kDone, "hello", 5});
  EXPECT_EQ(ReadBody(false, 0, {next}), (BodyOutcome{State::kDone, "", 0}));
  const std::string chunked = "5;ext=1\r\nhello\r\n1\r\n \r\n5\r\nworld\r\n0\r\nTrailer: x\r\n\r\n";
  ExpectSameAtEverySplit(true, 0, chunked + next, {State::kDone, "hello world", chunked.size()});
  // Cut short, or malformed.
  EXPECT_EQ(ReadBody(false, 5, {"hel"}).state, State::kMore);
  EXPECT_EQ(ReadBody(true, 0, {"zz\r\nhello\r\n"}).state, State::kFailed);
  EXPECT_EQ(ReadBody(true, 0, {"5\r\nhelloX\r\n"}).state, State::kFailed);
}

}  // namespace
}  // namespace compactor::serve
