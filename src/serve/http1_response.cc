#include "serve/http1_response.h"

#include <algorithm>
#include <charconv>

#include "serve/http_util.h"

namespace compactor::serve {
namespace {

std::string_view StripCr(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line;
}

}  // namespace

Http1ResponseReader::State Http1ResponseReader::Feed(std::string_view data, Sink& sink,
                                                     size_t* used) {
  std::string_view rest = data;
  while (!rest.empty() && state_ == State::kMore) {
    if (!in_body_) {
      rest = FeedHead(rest, sink);
    } else if (framing_ == Framing::kChunked) {
      rest = FeedChunked(rest, sink);
    } else {
      rest = FeedBody(rest, sink);
    }
  }
  if (used != nullptr) *used = data.size() - rest.size();
  return state_;
}

Http1ResponseReader Http1ResponseReader::ForBody(bool chunked, uint64_t length) {
  Http1ResponseReader r(false);
  r.in_body_ = true;
  r.expect_status_ = false;
  r.framing_ = chunked ? Framing::kChunked : Framing::kLength;
  r.remaining_ = chunked ? 0 : length;
  if (!chunked && length == 0) r.state_ = State::kDone;
  return r;
}

Http1ResponseReader::State Http1ResponseReader::EndOfStream() {
  if (state_ != State::kMore) return state_;
  if (in_body_ && framing_ == Framing::kUntilClose) {
    state_ = State::kDone;
  } else {
    Fail(UpstreamFailure::kReset,
         "the upstream closed the connection before its answer was complete");
  }
  return state_;
}

bool Http1ResponseReader::reusable() const {
  return state_ == State::kDone && !close_ && (!http10_ || keep_alive_) &&
         framing_ != Framing::kUntilClose;
}

// The head's bytes are kept until its end (lines may be split anywhere);
// returns what follows the head, or nothing while it goes on.
std::string_view Http1ResponseReader::FeedHead(std::string_view data, Sink& sink) {
  size_t before = head_in_.size();
  head_in_.append(data);
  size_t pos = line_start_;
  while (state_ == State::kMore) {
    size_t nl = head_in_.find('\n', pos);
    if (nl == std::string::npos) break;
    std::string_view line = StripCr(std::string_view(head_in_).substr(pos, nl - pos));
    pos = nl + 1;
    if (pos > kMaxHeadBytes) break;  // failed below
    if (HeadLine(line, sink)) {
      size_t used = pos - before;  // the head's last '\n' is in `data`
      head_in_.clear();
      line_start_ = 0;
      return data.substr(used);
    }
  }
  line_start_ = pos;
  if (state_ == State::kMore && (head_in_.size() > kMaxHeadBytes || pos > kMaxHeadBytes)) {
    Fail(UpstreamFailure::kOther, "the upstream's response head is larger than 256 KiB");
  }
  return {};
}

// One line of a head. True when the final head ended with it.
bool Http1ResponseReader::HeadLine(std::string_view line, Sink& sink) {
  if (expect_status_) {
    if (!ParseStatusLine(line)) {
      Fail(UpstreamFailure::kOther, "the upstream's answer is not HTTP/1.x");
      return false;
    }
    expect_status_ = false;
    sink.HeadLine(line);
    return false;
  }
  sink.HeadLine(line);
  if (!line.empty()) {
    NoteField(line);
    return false;
  }
  if (status_ < 200 && status_ != 101) {
    // An interim answer (100 Continue, 103 Early Hints): the real one follows.
    expect_status_ = true;
    chunked_ = close_ = keep_alive_ = bad_length_ = false;
    length_ = -1;
    return false;
  }
  StartBody();
  return true;
}

// "HTTP/1.x NNN[ reason]".
bool Http1ResponseReader::ParseStatusLine(std::string_view line) {
  if (line.size() < 12 || line.substr(0, 7) != "HTTP/1." || line[8] != ' ') return false;
  if (line[7] != '0' && line[7] != '1') return false;
  http10_ = line[7] == '0';
  auto [p, ec] = std::from_chars(line.data() + 9, line.data() + 12, status_);
  return ec == std::errc() && p == line.data() + 12 && status_ >= 100 &&
         (line.size() == 12 || line[12] == ' ');
}

// The fields that decide the framing and the connection's reuse.
void Http1ResponseReader::NoteField(std::string_view line) {
  size_t colon = line.find(':');
  if (colon == std::string_view::npos) return;
  std::string_view name = line.substr(0, colon);
  std::string_view value = TrimOws(line.substr(colon + 1));
  if (EqualsIgnoreCase(name, "content-length")) {
    int64_t n = -1;
    auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
    bad_length_ = bad_length_ || n < 0 || ec != std::errc() || p != value.data() + value.size() ||
                  (length_ >= 0 && n != length_);
    length_ = n;
  } else if (EqualsIgnoreCase(name, "transfer-encoding")) {
    chunked_ = ListHasToken(value, "chunked");
  } else if (EqualsIgnoreCase(name, "connection")) {
    close_ = close_ || ListHasToken(value, "close");
    keep_alive_ = keep_alive_ || ListHasToken(value, "keep-alive");
  }
}

// RFC 9112 section 6.3: how the body of this answer ends.
void Http1ResponseReader::StartBody() {
  in_body_ = true;
  if (head_request_ || status_ == 204 || status_ == 304) {
    framing_ = Framing::kNone;
  } else if (chunked_) {
    framing_ = Framing::kChunked;
  } else if (bad_length_) {
    return Fail(UpstreamFailure::kOther, "the upstream's Content-Length is not valid");
  } else if (length_ >= 0) {
    framing_ = Framing::kLength;
    remaining_ = static_cast<uint64_t>(length_);
  } else {
    framing_ = Framing::kUntilClose;
  }
  if (framing_ == Framing::kNone || (framing_ == Framing::kLength && remaining_ == 0)) {
    state_ = State::kDone;
  }
}

// A body framed by its length or by the connection's end.
std::string_view Http1ResponseReader::FeedBody(std::string_view data, Sink& sink) {
  size_t n = data.size();
  if (framing_ == Framing::kLength) {
    n = static_cast<size_t>(std::min<uint64_t>(remaining_, n));
    remaining_ -= n;
  }
  if (!Deliver(data.substr(0, n), sink)) return {};
  if (framing_ == Framing::kLength && remaining_ == 0) state_ = State::kDone;
  return data.substr(n);
}

std::string_view Http1ResponseReader::FeedChunked(std::string_view data, Sink& sink) {
  if (chunk_ == Chunk::kData) {
    size_t n = static_cast<size_t>(std::min<uint64_t>(remaining_, data.size()));
    remaining_ -= n;
    if (remaining_ == 0) chunk_ = Chunk::kDataEnd;
    if (!Deliver(data.substr(0, n), sink)) return {};
    return data.substr(n);
  }
  size_t nl = data.find('\n');
  if (nl == std::string_view::npos) {
    chunk_line_.append(data);
    if (chunk_line_.size() > kMaxChunkLine) {
      Fail(UpstreamFailure::kReset, "the upstream's chunked encoding is malformed");
    }
    return {};
  }
  chunk_line_.append(data.substr(0, nl));
  ChunkLine(StripCr(chunk_line_));
  chunk_line_.clear();
  return data.substr(nl + 1);
}

// A whole line of the chunked framing: a chunk's size, the end of its data,
// or a trailer field (not passed on).
void Http1ResponseReader::ChunkLine(std::string_view line) {
  bool ok = true;
  switch (chunk_) {
    case Chunk::kSize: {
      std::string_view hex = TrimOws(line.substr(0, line.find(';')));
      uint64_t size = 0;
      auto [p, ec] = std::from_chars(hex.data(), hex.data() + hex.size(), size, 16);
      ok = !hex.empty() && ec == std::errc() && p == hex.data() + hex.size();
      remaining_ = size;
      chunk_ = size == 0 ? Chunk::kTrailers : Chunk::kData;
      break;
    }
    case Chunk::kDataEnd:
      ok = line.empty();
      chunk_ = Chunk::kSize;
      break;
    case Chunk::kTrailers:
      if (line.empty()) state_ = State::kDone;
      break;
    case Chunk::kData:
      break;
  }
  if (!ok) Fail(UpstreamFailure::kReset, "the upstream's chunked encoding is malformed");
}

bool Http1ResponseReader::Deliver(std::string_view data, Sink& sink) {
  if (data.empty() || sink.Body(data)) return true;
  state_ = State::kStopped;
  return false;
}

void Http1ResponseReader::Fail(UpstreamFailure f, std::string_view why) {
  state_ = State::kFailed;
  failure_ = f;
  error_ = std::string(why);
}

}  // namespace compactor::serve
