#include "serve/http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>
#include <vector>

#include "serve/http1_request.h"
#include "serve/http1_response.h"

namespace compactor::serve {
namespace {

thread_local Connection* tls_connection = nullptr;

std::string Address(const sockaddr_storage& ss, int* port) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (ss.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&ss);
    inet_ntop(AF_INET, &a->sin_addr, buf, sizeof buf);
    *port = ntohs(a->sin_port);
  } else if (ss.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&ss);
    inet_ntop(AF_INET6, &a->sin6_addr, buf, sizeof buf);
    *port = ntohs(a->sin6_port);
  }
  return buf;
}

void SetTimeout(int fd, int option, int64_t ms) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(ms / 1000);
  tv.tv_usec = static_cast<suseconds_t>((ms % 1000) * 1000);
  setsockopt(fd, SOL_SOCKET, option, &tv, sizeof tv);
}

}  // namespace

// A connected client socket with its read buffer, which lives as long as the
// connection, so that bytes the client sent ahead (a pipelined request) stay
// in it from one request to the next. When the connection's hold_write is
// set, a write is held back and sent with the next one.
class ConnectionStream {
 public:
  ConnectionStream(int fd, Connection* conn) : fd_(fd), conn_(conn) { buffer_.resize(16 * 1024); }

  // The bytes received and not consumed yet.
  std::string_view buffered() const {
    return std::string_view(buffer_.data() + begin_, end_ - begin_);
  }
  void Consume(size_t n) {
    begin_ += n;
    if (begin_ == end_) begin_ = end_ = 0;
  }
  // Receives more, waiting at most the socket's receive timeout, with room
  // for `limit` buffered bytes in all: false at end of file, on a timeout or
  // an error, and when `limit` bytes are buffered already.
  bool Fill(size_t limit) {
    if (end_ - begin_ >= limit) return false;
    if (end_ == buffer_.size()) {
      if (begin_ > 0) {
        std::memmove(buffer_.data(), buffer_.data() + begin_, end_ - begin_);
        end_ -= begin_;
        begin_ = 0;
      } else {
        buffer_.resize(std::max(buffer_.size() * 2, limit));
      }
    }
    ssize_t n;
    do {
      n = ::recv(fd_, buffer_.data() + end_, buffer_.size() - end_, 0);
    } while (n < 0 && errno == EINTR);
    if (n <= 0) return false;
    end_ += static_cast<size_t>(n);
    return true;
  }

  // Writes all of `data` (or holds it, see above): false when the client is
  // gone or stopped reading for longer than the send timeout.
  bool Write(std::string_view data) {
    if (conn_->hold_write) {
      conn_->hold_write = false;
      held_.append(data);
      return true;
    }
    return Send(data);
  }
  // Sends a held write that no other followed: false when the client is gone.
  bool Flush() { return held_.empty() || Send({}); }

 private:
  // The held bytes, then `data`, in as few sendmsg calls as the socket takes.
  bool Send(std::string_view data) {
    size_t head = 0;
    size_t body = 0;
    while (head < held_.size() || body < data.size()) {
      iovec iov[2];
      int n_iov = 0;
      if (head < held_.size()) iov[n_iov++] = {held_.data() + head, held_.size() - head};
      if (body < data.size()) {
        iov[n_iov++] = {const_cast<char*>(data.data()) + body, data.size() - body};
      }
      msghdr msg{};
      msg.msg_iov = iov;
      msg.msg_iovlen = static_cast<size_t>(n_iov);
      ssize_t n = ::sendmsg(fd_, &msg, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        held_.clear();
        return false;
      }
      size_t sent = static_cast<size_t>(n);
      size_t from_head = std::min(sent, held_.size() - head);
      head += from_head;
      body += sent - from_head;
    }
    held_.clear();
    return true;
  }

  int fd_;
  Connection* conn_;
  std::vector<char> buffer_;
  size_t begin_ = 0;
  size_t end_ = 0;
  std::string held_;  // a write waiting for the next one
};

namespace {

// Waits for the next request on an idle connection: true when bytes arrived
// before the keep-alive timeout and before draining began.
bool WaitForRequest(int fd, int drain_fd, int64_t timeout_ms) {
  pollfd p[2] = {{fd, POLLIN, 0}, {drain_fd, POLLIN, 0}};
  int r;
  do {
    r = ::poll(p, 2, static_cast<int>(timeout_ms));
  } while (r < 0 && errno == EINTR);
  return r > 0 && p[1].revents == 0 && (p[0].revents & (POLLIN | POLLHUP | POLLERR)) != 0;
}

}  // namespace

Connection* CurrentConnection() { return tls_connection; }

Status ReadBody(const httplib::ContentReader* reader, size_t limit, std::string* out) {
  out->clear();
  if (reader == nullptr) return Status::Ok();
  Connection* conn = CurrentConnection();
  std::string_view length = conn != nullptr ? HeaderValue(conn->headers, "content-length") : "";
  auto too_large = [&] {
    if (conn != nullptr) conn->must_close = conn->linger = true;
    return Status::FailedPrecondition("the request body exceeds the limit of " +
                                      std::to_string(limit) + " bytes");
  };
  if (!length.empty()) {
    uint64_t n = 0;
    auto [p, ec] = std::from_chars(length.data(), length.data() + length.size(), n);
    if (ec == std::errc() && p == length.data() + length.size() && n > limit) return too_large();
  }
  bool over = false;
  bool ok = (*reader)([&](const char* data, size_t n) {
    if (out->size() + n > limit) {
      over = true;
      return false;
    }
    out->append(data, n);
    return true;
  });
  if (over) return too_large();
  if (!ok) {
    if (conn != nullptr) conn->must_close = true;
    return Status::InvalidArgument("the request body could not be read");
  }
  return Status::Ok();
}

HttpServer::HttpServer(HttpServerOptions options, Handler handler)
    : options_(options), handler_(std::move(handler)) {
  drain_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  int threads = options_.threads > 0 ? options_.threads : 1;
  // httplib accepts; its pool's workers run process_and_close_socket.
  new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
  keep_alive_ =
      "timeout=" + std::to_string(std::max<int64_t>(1, options_.keep_alive_timeout_ms / 1000)) +
      ", max=" + std::to_string(options_.keep_alive_max_requests);
}

HttpServer::~HttpServer() {
  Drain();
  if (drain_fd_ >= 0) ::close(drain_fd_);
}

Status HttpServer::Start(const std::string& host, int port) {
  int bound = port == 0 ? bind_to_any_port(host) : (bind_to_port(host, port) ? port : -1);
  if (bound <= 0) {
    return Status::Unavailable("cannot listen on " + host + ":" + std::to_string(port) + ": " +
                               std::strerror(errno));
  }
  port_ = bound;
  // httplib listens with a backlog of 5, too short for dozens of clients
  // connecting at once (the rest would wait for SYN retransmits): raise it.
  ::listen(svr_sock_, 1024);
  // The workers are httplib's thread pool; this thread only accepts.
  COMPACTOR_ASSIGN_OR_RETURN(accept_thread_, options_.env->StartThread([this] {
    listen_after_bind();
    accept_ended_.store(true);
  }));
  // httplib's stop() closes the listening socket only once the accept loop
  // runs (is_running()); a Drain() before that would leave the loop running
  // and its Join() waiting forever. Returning once the loop runs (or ended)
  // closes that window.
  while (!is_running() && !accept_ended_.load()) {
    options_.env->SleepMs(1, [this] { return is_running() || accept_ended_.load(); });
  }
  return Status::Ok();
}

void HttpServer::Drain() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_) return;
    stopped_ = true;
  }
  draining_.store(true);
  uint64_t one = 1;
  if (drain_fd_ >= 0) (void)!::write(drain_fd_, &one, sizeof one);
  {
    std::unique_lock<std::mutex> lock(mu_);
    idle_cv_.wait(lock, [this] { return active_.load() == 0; });
  }
  // Closes the listening socket; listen_after_bind() then joins the workers,
  // which all end at once: none is serving a request any more.
  stop();
  if (accept_thread_) accept_thread_->Join();
}

void HttpServer::Linger(int fd) {
  ::shutdown(fd, SHUT_WR);
  char buf[16 * 1024];
  int64_t deadline_us = options_.env->MonotonicMicros() + 2'000'000;
  size_t total = 0;
  while (total < (64u << 20)) {
    int64_t left = (deadline_us - options_.env->MonotonicMicros()) / 1000;
    if (left <= 0) break;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left)) <= 0) break;
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    total += static_cast<size_t>(n);
  }
}

namespace {

bool ReadsBody(std::string_view method) {
  return method == "POST" || method == "PUT" || method == "PATCH" || method == "DELETE";
}

bool KnownMethod(std::string_view method) {
  return ReadsBody(method) || method == "GET" || method == "HEAD" || method == "OPTIONS";
}

// Fields the server writes itself, whatever a handler set.
bool IsFramingField(std::string_view name) {
  return EqualsIgnoreCase(name, "content-length") || EqualsIgnoreCase(name, "transfer-encoding") ||
         EqualsIgnoreCase(name, "connection") || EqualsIgnoreCase(name, "keep-alive");
}

std::string PeerAddress(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return "";
  int port = 0;
  std::string ip = Address(ss, &port);
  return ip + ":" + std::to_string(port);
}

// A response of the server's own (a malformed request, an unknown method).
void ErrorResponse(httplib::Response& res, Connection& conn, int status, std::string_view code,
                   const std::string& message) {
  res.status = status;
  res.headers.clear();
  res.content_provider_ = nullptr;
  res.body = ErrorBody("", status, code, message);
  conn.exact_headers = HeaderList{{"Content-Type", "application/json"}};
}

// The request body, read when the handler asks for it (its ContentReader),
// by the upstream client's body decoder; what follows the body (a pipelined
// request) stays in the stream.
class RequestBody {
 public:
  RequestBody(ConnectionStream& stream, const RequestHead& head)
      : stream_(stream),
        reader_(Http1ResponseReader::ForBody(
            head.chunked, static_cast<uint64_t>(std::max<int64_t>(0, head.length)))),
        expect_continue_(head.expect_continue && (head.chunked || head.length > 0)) {}

  // Hands the body to `receiver` as it arrives: false when it could not be
  // read whole (the client went away or was silent too long, the chunking
  // is malformed, or the receiver refused).
  bool Read(const httplib::ContentReceiver& receiver) {
    if (expect_continue_) {
      // The client waits for this before it sends the body (RFC 9110
      // section 10.1.1); sent only when the body is wanted.
      expect_continue_ = false;
      if (!stream_.Write("HTTP/1.1 100 Continue\r\n\r\n")) return false;
    }
    Receiver sink(receiver);
    while (reader_.state() == Http1ResponseReader::State::kMore) {
      if (stream_.buffered().empty() && !stream_.Fill(kReadAhead)) return false;
      size_t used = 0;
      reader_.Feed(stream_.buffered(), sink, &used);
      stream_.Consume(used);
    }
    return complete();
  }
  bool complete() const { return reader_.state() == Http1ResponseReader::State::kDone; }

 private:
  static constexpr size_t kReadAhead = 16 * 1024;
  struct Receiver final : Http1ResponseReader::Sink {
    explicit Receiver(const httplib::ContentReceiver& r) : receive(r) {}
    void HeadLine(std::string_view) override {}
    bool Body(std::string_view data) override { return receive(data.data(), data.size()); }
    const httplib::ContentReceiver& receive;
  };

  ConnectionStream& stream_;
  Http1ResponseReader reader_;
  bool expect_continue_;
};

// Runs a response's content provider, framing what it writes: a chunk per
// write (one buffer for all of them), or the bytes as they are (a known
// length, or `until_close`: until the provider says done). False when the
// provider or a write failed, or a provider of a known length stopped short
// of it (the connection then cannot carry another response).
bool WriteProvided(ConnectionStream& stream, httplib::Response& res, bool chunked,
                   bool until_close) {
  const size_t length = res.content_length_;
  size_t offset = 0;
  bool ok = true;
  bool more = true;
  std::string chunk;
  httplib::DataSink sink;
  sink.write = [&](const char* data, size_t n) {
    if (!ok || n == 0) return ok;
    offset += n;
    if (!chunked) return ok = stream.Write(std::string_view(data, n));
    char size[20];
    auto end = std::to_chars(size, size + sizeof size, n, 16).ptr;
    chunk.assign(size, end).append("\r\n").append(data, n).append("\r\n");
    return ok = stream.Write(chunk);
  };
  sink.done = [&] {
    more = false;
    if (ok && chunked) ok = stream.Write("0\r\n\r\n");
  };
  sink.is_writable = [&] { return ok; };
  const bool until_done = chunked || until_close;
  while (ok && more && (until_done || offset < length)) {
    size_t before = offset;
    if (!res.content_provider_(offset, until_done ? 0 : length - offset, sink)) return false;
    // A provider that neither wrote nor ended would be called forever.
    if (offset == before && more) return false;
  }
  return ok;
}

}  // namespace

bool HttpServer::ServeOne(ConnectionStream& stream, Connection& conn, bool last) {
  httplib::Request req;
  httplib::Response res;
  // The head, scanned once however many pieces it comes in, within the
  // client timeout as a whole (not only per piece: a byte a minute would
  // otherwise hold the worker, and a Drain, for as long as it pleases).
  const int64_t deadline_us = options_.env->MonotonicMicros() + options_.client_timeout_ms * 1000;
  size_t head_end;
  size_t scanned = 0;
  while ((head_end = FindRequestHeadEnd(stream.buffered(), scanned)) == 0) {
    scanned = stream.buffered().size();
    if (options_.env->MonotonicMicros() < deadline_us && stream.Fill(kMaxRequestHeadBytes + 1)) {
      continue;
    }
    // The client left or went silent mid-head: nothing to answer, unless
    // the head outgrew its limit.
    if (stream.buffered().size() <= kMaxRequestHeadBytes) return false;
    ErrorResponse(res, conn, 431, "http_error", "the request head exceeds 64 KiB");
    conn.must_close = conn.linger = true;  // the client may still be sending
    WriteResponse(stream, conn, req, res, true);
    return false;
  }
  RequestHead head;
  std::string why;
  int bad = ParseRequestHead(stream.buffered().substr(0, head_end), &head, &why);
  stream.Consume(head_end);
  if (bad != 0) {
    // The request's end is unknown: the connection cannot go on.
    ErrorResponse(res, conn, bad, bad == 400 ? "bad_request" : "http_error",
                  "the request could not be served (HTTP " + std::to_string(bad) + "): " + why);
    conn.must_close = conn.linger = true;
    WriteResponse(stream, conn, req, res, true);
    return false;
  }
  req.method = std::move(head.method);
  req.target = std::move(head.target);
  req.version = head.http10 ? "HTTP/1.0" : "HTTP/1.1";
  size_t q = req.target.find('?');
  req.path = req.target.substr(0, q);
  if (q != std::string::npos)
    httplib::detail::parse_query_text(req.target.substr(q + 1), req.params);
  conn.headers = std::move(head.headers);
  conn.content_encoding = std::string(HeaderValue(conn.headers, "content-encoding"));
  conn.has_body = head.chunked || head.length > 0;
  RequestBody body(stream, head);
  httplib::ContentReader reader(
      [&body](const httplib::ContentReceiver& receiver) { return body.Read(receiver); },
      [](const httplib::MultipartContentHeader&, const httplib::ContentReceiver&) {
        return false;
      });
  if (!KnownMethod(req.method)) {
    ErrorResponse(res, conn, 501, "http_error", "the method " + req.method + " is not supported");
  } else {
    try {
      handler_(req, res, ReadsBody(req.method) ? &reader : nullptr);
    } catch (const std::exception&) {
      ErrorResponse(res, conn, 500, "internal", "the request failed inside the server");
      conn.must_close = true;
    }
  }
  // A body left unread (all or part) cannot be skipped with certainty: the
  // connection ends after the answer, lingering so that the client reads it.
  if (conn.has_body && !body.complete()) conn.must_close = conn.linger = true;
  bool close = last || head.close || conn.must_close || draining_.load();
  return WriteResponse(stream, conn, req, res, close) && !close;
}

bool HttpServer::WriteResponse(ConnectionStream& stream, Connection& conn,
                               const httplib::Request& req, httplib::Response& res, bool close) {
  if (res.status < 100 || res.status > 999) res.status = 500;  // a handler that set none
  // A stream of unknown length goes chunked to an HTTP/1.1 client, and as
  // it is, ended by the close, to an HTTP/1.0 one (it cannot read chunks).
  const bool http10 = req.version == "HTTP/1.0";
  const bool chunked = res.content_provider_ && res.is_chunked_content_provider_ && !http10;
  const bool until_close = res.content_provider_ && res.is_chunked_content_provider_ && http10;
  close = close || until_close;
  const bool no_body =
      req.method == "HEAD" || res.status < 200 || res.status == 204 || res.status == 304;
  std::string head;
  head.reserve(512);
  head.append("HTTP/1.1 ").append(std::to_string(res.status)).append(" ");
  head.append(ReasonPhrase(res.status)).append("\r\n");
  // A field that is not a token name with a safe value is left out: a CR
  // or LF from an upstream or a hook must not start a field of its own.
  auto field = [&head](std::string_view name, std::string_view value) {
    if (!IsHttpToken(name) || !IsSafeFieldValue(value)) return;
    head.append(name).append(": ").append(value).append("\r\n");
  };
  if (conn.exact_headers) {
    for (const auto& [name, value] : *conn.exact_headers) {
      if (!IsFramingField(name)) field(name, value);
    }
  } else {
    for (const auto& [name, value] : res.headers) {
      if (!IsFramingField(name)) field(name, value);
    }
  }
  if (no_body) {
    // A HEAD answer says the length the GET would have (a relayed one, as
    // the upstream said it).
    std::string length = res.get_header_value("Content-Length");
    if (req.method == "HEAD" && length.empty() && !res.body.empty()) {
      length = std::to_string(res.body.size());
    }
    if (!length.empty() && res.status >= 200 && res.status != 204) field("Content-Length", length);
  } else if (chunked) {
    field("Transfer-Encoding", "chunked");
  } else if (!until_close) {
    field("Content-Length",
          std::to_string(res.content_provider_ ? res.content_length_ : res.body.size()));
  }
  if (close) {
    field("Connection", "close");
  } else {
    if (http10) field("Connection", "keep-alive");
    field("Keep-Alive", keep_alive_);
  }
  head.append("\r\n");
  if (no_body) {
    conn.hold_write = false;
    return stream.Write(head);
  }
  if (!res.content_provider_) {
    conn.hold_write = !res.body.empty();  // the head goes with the body
    return stream.Write(head) && (res.body.empty() || stream.Write(res.body));
  }
  // A provider (a relayed stream): the head is held only when the handler
  // asked (it has bytes at hand), else it goes out now.
  return stream.Write(head) && WriteProvided(stream, res, chunked, until_close);
}

bool HttpServer::process_and_close_socket(socket_t sock) {
  int one = 1;
  setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  SetTimeout(sock, SO_RCVTIMEO, options_.client_timeout_ms);
  SetTimeout(sock, SO_SNDTIMEO, options_.client_timeout_ms);
  Connection conn;
  conn.fd = sock;
  ConnectionStream stream(sock, &conn);
  conn.remote = PeerAddress(sock);
  bool linger = false;
  size_t served = 0;
  while (!draining_.load()) {
    if (stream.buffered().empty() &&
        !WaitForRequest(sock, drain_fd_, options_.keep_alive_timeout_ms)) {
      break;
    }
    active_.fetch_add(1);
    if (draining_.load()) {
      if (active_.fetch_sub(1) == 1) {
        std::lock_guard<std::mutex> lock(mu_);
        idle_cv_.notify_all();
      }
      break;
    }
    tls_connection = &conn;
    bool last = ++served >= options_.keep_alive_max_requests;
    bool ok = ServeOne(stream, conn, last);
    tls_connection = nullptr;
    if (!stream.Flush()) ok = false;
    if (conn.after_response) conn.after_response();
    linger = conn.linger;
    bool done = !ok || last || conn.must_close;
    // Nothing of this request outlives it (an idle connection holds no
    // buffers and no upstream handle).
    std::string remote = std::move(conn.remote);
    conn = Connection();
    conn.fd = sock;
    conn.remote = std::move(remote);
    if (active_.fetch_sub(1) == 1) {
      std::lock_guard<std::mutex> lock(mu_);
      idle_cv_.notify_all();
    }
    if (done) break;
  }
  if (linger) Linger(sock);
  ::shutdown(sock, SHUT_RDWR);
  ::close(sock);
  return true;
}

}  // namespace compactor::serve
