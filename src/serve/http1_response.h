// Reads one HTTP/1.x response from the bytes an upstream sends, in whatever
// pieces they arrive (RFC 9112): the status line and fields, interim 1xx
// answers skipped, then the body by its framing (none for HEAD, 204 and 304;
// chunked, with extensions and trailers; Content-Length; else until the
// connection closes), handed on with the transfer coding removed.
//
// The built-in upstream client's parser (upstream_builtin.cc), on its own so
// that it is tested on every split of its input and fuzzed
// (fuzz/http1_response_fuzzer.cc): what an upstream sends is untrusted.
//
// Thread safety: none (one reader per response).
#ifndef COMPACTOR_SRC_SERVE_HTTP1_RESPONSE_H_
#define COMPACTOR_SRC_SERVE_HTTP1_RESPONSE_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "serve/upstream.h"

namespace compactor::serve {

class Http1ResponseReader {
 public:
  class Sink {
   public:
    virtual ~Sink() = default;
    // Each line of each head, line ends removed: the status line, the
    // fields (a folded continuation line as it came), the empty line.
    virtual void HeadLine(std::string_view line) = 0;
    // Body bytes; false stops the reader (kStopped).
    virtual bool Body(std::string_view data) = 0;
  };

  enum class State {
    kMore,     // the response is not complete yet
    kDone,     // complete; bytes after it were not consumed (Feed's `used`)
    kFailed,   // not a valid response: failure() and error() say why
    kStopped,  // the sink refused body bytes
  };

  // Limits on what an upstream may send before its body: far above any
  // real API's, low enough that a broken server cannot make the reader grow.
  static constexpr size_t kMaxHeadBytes = 256 * 1024;
  static constexpr size_t kMaxChunkLine = 4096;

  // `head_request`: the request was a HEAD (its answer has no body).
  explicit Http1ResponseReader(bool head_request) : head_request_(head_request) {}
  // A reader of a body alone, whose head was read elsewhere (a request's,
  // by the server): chunked, or else `length` bytes.
  static Http1ResponseReader ForBody(bool chunked, uint64_t length);

  // Reads `data`. `used` (may be null) gets how many bytes were part of the
  // response (less than data.size() only when it completed). REQUIRES: the
  // state is kMore.
  State Feed(std::string_view data, Sink& sink, size_t* used = nullptr);
  // The connection closed: kDone when the body runs until the close, else
  // kFailed (kReset).
  State EndOfStream();

  State state() const { return state_; }
  // The response lets its connection carry another request (HTTP/1.1
  // without "Connection: close", or HTTP/1.0 with keep-alive, and a body
  // framed by length or chunks). Meaningful once kDone.
  bool reusable() const;
  // For kFailed: kReset (malformed chunking, closed early) or kOther (not
  // HTTP/1.x, a bad Content-Length, a head too large).
  UpstreamFailure failure() const { return failure_; }
  const std::string& error() const { return error_; }

 private:
  enum class Framing { kNone, kLength, kChunked, kUntilClose };
  enum class Chunk { kSize, kData, kDataEnd, kTrailers };

  std::string_view FeedHead(std::string_view data, Sink& sink);
  bool HeadLine(std::string_view line, Sink& sink);
  bool ParseStatusLine(std::string_view line);
  void NoteField(std::string_view line);
  void StartBody();
  std::string_view FeedBody(std::string_view data, Sink& sink);
  std::string_view FeedChunked(std::string_view data, Sink& sink);
  void ChunkLine(std::string_view line);
  bool Deliver(std::string_view data, Sink& sink);
  void Fail(UpstreamFailure f, std::string_view why);

  const bool head_request_;
  State state_ = State::kMore;
  UpstreamFailure failure_ = UpstreamFailure::kNone;
  std::string error_;
  // The head.
  bool in_body_ = false;
  std::string head_in_;  // the head's bytes so far
  size_t line_start_ = 0;
  bool expect_status_ = true;
  int status_ = 0;
  bool http10_ = false;
  bool chunked_ = false;
  bool close_ = false;
  bool keep_alive_ = false;
  int64_t length_ = -1;
  bool bad_length_ = false;
  // The body.
  Framing framing_ = Framing::kNone;
  uint64_t remaining_ = 0;
  Chunk chunk_ = Chunk::kSize;
  std::string chunk_line_;
};

}  // namespace compactor::serve

#endif  // COMPACTOR_SRC_SERVE_HTTP1_RESPONSE_H_
