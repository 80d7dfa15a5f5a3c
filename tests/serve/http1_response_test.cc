// Http1ResponseReader (src/serve/http1_response.h): every case is read whole,
// at every split into two pieces and byte by byte, and must come out the same
// each time: an upstream's bytes arrive in whatever pieces the network makes.
#include "serve/http1_response.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace compactor::serve {
namespace {

using State = Http1ResponseReader::State;

struct Outcome {
  State state = State::kMore;
  std::vector<std::string> lines;
  std::string body;
  size_t used = 0;  // bytes of the input that were part of the response
  bool reusable = false;
  UpstreamFailure failure = UpstreamFailure::kNone;

  bool operator==(const Outcome& o) const {
    // (How much of the input a failed read took in says nothing.)
    return state == o.state && lines == o.lines && body == o.body &&
           (state != State::kDone || used == o.used) && reusable == o.reusable &&
           failure == o.failure;
  }
};

struct Collect : Http1ResponseReader::Sink {
  Outcome* out;
  size_t stop_after = SIZE_MAX;  // refuse body bytes beyond this many
  explicit Collect(Outcome* o) : out(o) {}
  void HeadLine(std::string_view line) override { out->lines.emplace_back(line); }
  bool Body(std::string_view data) override {
    if (out->body.size() + data.size() > stop_after) return false;
    out->body.append(data);
    return true;
  }
};

// Feeds `pieces` in order; `eof`: the connection closes after them.
Outcome Read(const std::vector<std::string_view>& pieces, bool head, bool eof,
             size_t stop_after = SIZE_MAX) {
  Outcome o;
  Collect sink(&o);
  sink.stop_after = stop_after;
  Http1ResponseReader reader(head);
  for (std::string_view p : pieces) {
    if (reader.state() != State::kMore) break;
    size_t used = 0;
    reader.Feed(p, sink, &used);
    o.used += used;
  }
  if (eof) reader.EndOfStream();
  o.state = reader.state();
  o.reusable = reader.reusable();
  o.failure = reader.failure();
  if (o.state == State::kFailed) {
    EXPECT_FALSE(reader.error().empty());
  }
  return o;
}

// The outcome of reading `text` whole; checked equal for every split.
Outcome ReadEverySplit(std::string_view text, bool head = false, bool eof = false,
                       size_t stop_after = SIZE_MAX) {
  Outcome whole = Read({text}, head, eof, stop_after);
  for (size_t at = 1; at < text.size(); ++at) {
    Outcome split = Read({text.substr(0, at), text.substr(at)}, head, eof, stop_after);
    EXPECT_TRUE(split == whole) << "split at " << at << " of " << text.size();
  }
  std::vector<std::string_view> bytes;
  for (size_t i = 0; i < text.size(); ++i) bytes.push_back(text.substr(i, 1));
  EXPECT_TRUE(Read(bytes, head, eof, stop_after) == whole) << "byte by byte";
  return whole;
}

TEST(Http1Response, ContentLengthBodyAndWhatFollowsIt) {
  std::string text = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-A:  b \r\n\r\nhelloEXTRA";
  Outcome o = ReadEverySplit(text);
  EXPECT_EQ(o.state, State::kDone);
  EXPECT_EQ(o.lines,
            (std::vector<std::string>{"HTTP/1.1 200 OK", "Content-Length: 5", "X-A:  b ", ""}));
  EXPECT_EQ(o.body, "hello");
  EXPECT_EQ(o.used, text.size() - 5);  // "EXTRA" is not the response's
  EXPECT_TRUE(o.reusable);
}

TEST(Http1Response, ChunkedWithExtensionsAndTrailers) {
  Outcome o = ReadEverySplit(
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"
      "5;x=y\r\nhello\r\n1\r\n\n\r\nA \r\n0123456789\r\n0\r\nTrailer: t\r\n\r\n");
  EXPECT_EQ(o.state, State::kDone);
  EXPECT_EQ(o.body, "hello\n0123456789");
  EXPECT_EQ(o.lines.size(), 3u);  // the trailer is not a head line
  EXPECT_TRUE(o.reusable);
}

TEST(Http1Response, BareLineFeedsAndNoReason) {
  Outcome o = ReadEverySplit("HTTP/1.1 200\nContent-Length: 2\n\nok");
  EXPECT_EQ(o.state, State::kDone);
  EXPECT_EQ(o.lines.front(), "HTTP/1.1 200");
  EXPECT_EQ(o.body, "ok");
}

TEST(Http1Response, InterimAnswersAreSkipped) {
  Outcome o = ReadEverySplit(
      "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"
      "HTTP/1.1 201 Created\r\nContent-Length: 1\r\n\r\nx");
  EXPECT_EQ(o.state, State::kDone);
  EXPECT_EQ(o.lines.size(), 8u);  // every head's lines go to the sink
  EXPECT_EQ(o.lines[5], "HTTP/1.1 201 Created");
  EXPECT_EQ(o.body, "x");
}

TEST(Http1Response, AnswersWithoutABody) {
  for (std::string_view text : {"HTTP/1.1 204 No Content\r\nContent-Length: 9\r\n\r\n",
                                "HTTP/1.1 304 Not Modified\r\n\r\n"}) {
    Outcome o = ReadEverySplit(text);
    EXPECT_EQ(o.state, State::kDone) << text;
    EXPECT_TRUE(o.body.empty());
    EXPECT_TRUE(o.reusable);
  }
  Outcome head = ReadEverySplit("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n", /*head=*/true);
  EXPECT_EQ(head.state, State::kDone);
  EXPECT_TRUE(head.body.empty());
}

TEST(Http1Response, ABodyUntilTheConnectionCloses) {
  std::string text = "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nall of it";
  Outcome open = ReadEverySplit(text);
  EXPECT_EQ(open.state, State::kMore);
  Outcome closed = ReadEverySplit(text, false, /*eof=*/true);
  EXPECT_EQ(closed.state, State::kDone);
  EXPECT_EQ(closed.body, "all of it");
  EXPECT_FALSE(closed.reusable);
}

TEST(Http1Response, WhichConnectionsAreKept) {
  struct Case {
    std::string_view text;
    bool reusable;
  };
  for (const Case& c : std::vector<Case>{
           {"HTTP/1.1 200 OK\r\nConnection: keep-alive, Close\r\nContent-Length: 0\r\n\r\n", false},
           {"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", false},
           {"HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 0\r\n\r\n", true},
           {"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nContent-Length: 0\r\n\r\n", true}}) {
    Outcome o = ReadEverySplit(c.text);
    EXPECT_EQ(o.state, State::kDone) << c.text;
    EXPECT_EQ(o.reusable, c.reusable) << c.text;
  }
}

TEST(Http1Response, MalformedAnswersFailWithTheirKind) {
  struct Case {
    std::string_view text;
    UpstreamFailure failure;
  };
  for (const Case& c : std::vector<Case>{
           {"garbage\r\n\r\n", UpstreamFailure::kOther},
           {"HTTP/2.0 200 OK\r\n\r\n", UpstreamFailure::kOther},
           {"HTTP/1.1 2000 OK\r\n\r\n", UpstreamFailure::kOther},
           {"HTTP/1.1 099 Low\r\n\r\n", UpstreamFailure::kOther},
           {"HTTP/1.1 200 OK\r\nContent-Length: abc\r\n\r\n", UpstreamFailure::kOther},
           {"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", UpstreamFailure::kOther},
           {"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
            UpstreamFailure::kOther},
           {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", UpstreamFailure::kReset},
           {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabX\r\n",
            UpstreamFailure::kReset},
           {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\r\n", UpstreamFailure::kReset},
       }) {
    Outcome o = ReadEverySplit(c.text);
    EXPECT_EQ(o.state, State::kFailed) << c.text;
    EXPECT_EQ(o.failure, c.failure) << c.text;
    EXPECT_FALSE(o.reusable);
  }
}

TEST(Http1Response, AnAnswerCutShortIsAReset) {
  for (std::string_view text : {"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort",
                                "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab",
                                "HTTP/1.1 200 OK\r\nContent-Le"}) {
    Outcome o = ReadEverySplit(text, false, /*eof=*/true);
    EXPECT_EQ(o.state, State::kFailed) << text;
    EXPECT_EQ(o.failure, UpstreamFailure::kReset) << text;
  }
}

TEST(Http1Response, LimitsOnHeadAndChunkLines) {
  std::string big_head =
      "HTTP/1.1 200 OK\r\nX: " + std::string(Http1ResponseReader::kMaxHeadBytes, 'a') + "\r\n\r\n";
  Outcome head = Read({big_head}, false, false);
  EXPECT_EQ(head.state, State::kFailed);
  EXPECT_EQ(head.failure, UpstreamFailure::kOther);
  std::string long_chunk_line = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1;" +
                                std::string(Http1ResponseReader::kMaxChunkLine, 'e');
  Outcome chunk = Read({long_chunk_line}, false, false);
  EXPECT_EQ(chunk.state, State::kFailed);
  EXPECT_EQ(chunk.failure, UpstreamFailure::kReset);
}

TEST(Http1Response, ASinkThatRefusesStopsTheReader) {
  Outcome o = ReadEverySplit("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n0123456789", false,
                             false, /*stop_after=*/0);
  EXPECT_EQ(o.state, State::kStopped);
  EXPECT_TRUE(o.body.empty());
  EXPECT_FALSE(o.reusable);
}

}  // namespace
}  // namespace compactor::serve
