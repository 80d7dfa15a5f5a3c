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

namespace compactor::serve {
namespace {

thread_local Connection* tls_connection = nullptr;

// Fields httplib adds to every request for its handlers.
bool IsPseudoHeader(std::string_view name) {
  return name == "REMOTE_ADDR" || name == "REMOTE_PORT" || name == "LOCAL_ADDR" ||
         name == "LOCAL_PORT";
}

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

// httplib's Stream over a connected socket. Unlike httplib's own, it lives as
// long as the connection, so bytes the client sent ahead (a pipelined
// request) stay in its buffer from one request to the next. It also keeps
// the two addresses (httplib asks for them on every request: two system
// calls each time otherwise) and, when the connection's hold_write is set,
// holds a write back to send it with the next one.
class ConnectionStream : public httplib::Stream {
 public:
  ConnectionStream(int fd, int64_t timeout_ms, Connection* conn)
      : fd_(fd), timeout_ms_(timeout_ms), conn_(conn) {
    buffer_.resize(16 * 1024);
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    if (getpeername(fd_, reinterpret_cast<sockaddr*>(&ss), &len) == 0) {
      remote_ip_ = Address(ss, &remote_port_);
    }
    ss = {};
    len = sizeof ss;
    if (getsockname(fd_, reinterpret_cast<sockaddr*>(&ss), &len) == 0) {
      local_ip_ = Address(ss, &local_port_);
    }
  }

  bool is_readable() const override { return begin_ < end_ || Poll(POLLIN); }
  bool is_writable() const override { return Poll(POLLOUT); }

  ssize_t read(char* ptr, size_t size) override {
    if (begin_ == end_) {
      begin_ = end_ = 0;
      ssize_t n;
      do {
        n = ::recv(fd_, buffer_.data(), buffer_.size(), 0);
      } while (n < 0 && errno == EINTR);
      if (n <= 0) return n;
      end_ = static_cast<size_t>(n);
    }
    size_t take = std::min(size, end_ - begin_);
    std::memcpy(ptr, buffer_.data() + begin_, take);
    begin_ += take;
    return static_cast<ssize_t>(take);
  }

  ssize_t write(const char* ptr, size_t size) override {
    if (conn_ != nullptr && conn_->hold_write) {
      conn_->hold_write = false;  // held for the next write
      held_.append(ptr, size);
      return static_cast<ssize_t>(size);
    }
    if (!held_.empty()) return WriteHeldAnd(ptr, size);
    ssize_t n;
    do {
      n = ::send(fd_, ptr, size, MSG_NOSIGNAL);
    } while (n < 0 && errno == EINTR);
    return n;
  }

  // Sends a held write that no other followed (the next failed before it
  // began): false when the client is gone.
  bool Flush() {
    if (held_.empty()) return true;
    return WriteHeldAnd(nullptr, 0) >= 0;
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    ip = remote_ip_;
    port = remote_port_;
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    ip = local_ip_;
    port = local_port_;
  }
  socket_t socket() const override { return fd_; }

  bool buffered() const { return begin_ < end_; }

 private:
  bool Poll(short events) const {
    pollfd p{fd_, events, 0};
    int r;
    do {
      r = ::poll(&p, 1, static_cast<int>(timeout_ms_));
    } while (r < 0 && errno == EINTR);
    return r > 0;
  }

  // The held bytes, all of them, then as much of [ptr, ptr + size) as the
  // socket takes in the same calls: the bytes of `ptr` written, or -1.
  ssize_t WriteHeldAnd(const char* ptr, size_t size) {
    size_t head = 0;
    size_t body = 0;
    while (head < held_.size()) {
      iovec iov[2] = {{held_.data() + head, held_.size() - head}, {const_cast<char*>(ptr), size}};
      msghdr msg{};
      msg.msg_iov = iov;
      msg.msg_iovlen = size > 0 ? 2 : 1;
      ssize_t n = ::sendmsg(fd_, &msg, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        held_.clear();
        return -1;
      }
      size_t sent = static_cast<size_t>(n);
      size_t from_head = std::min(sent, held_.size() - head);
      head += from_head;
      body = sent - from_head;
    }
    held_.clear();
    return static_cast<ssize_t>(body);
  }

  int fd_;
  int64_t timeout_ms_;
  Connection* conn_;
  std::vector<char> buffer_;
  size_t begin_ = 0;
  size_t end_ = 0;
  std::string held_;  // a write waiting for the next one
  std::string remote_ip_;
  int remote_port_ = 0;
  std::string local_ip_;
  int local_port_ = 0;
};

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
  new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
  set_tcp_nodelay(true);
  // Only the values httplib announces in its Keep-Alive field: the
  // connection loop below enforces them.
  set_keep_alive_max_count(options_.keep_alive_max_requests);
  set_keep_alive_timeout(
      static_cast<time_t>(std::max<int64_t>(1, options_.keep_alive_timeout_ms / 1000)));
  set_read_timeout(std::chrono::milliseconds(options_.client_timeout_ms));
  set_write_timeout(std::chrono::milliseconds(options_.client_timeout_ms));
  // Every path; "[\s\S]" also matches a decoded newline, which "." would not.
  const std::string any = R"([\s\S]*)";
  Get(any,
      [this](const httplib::Request& req, httplib::Response& res) { handler_(req, res, nullptr); });
  Options(any, [this](const httplib::Request& req, httplib::Response& res) {
    handler_(req, res, nullptr);
  });
  auto with_body = [this](const httplib::Request& req, httplib::Response& res,
                          const httplib::ContentReader& reader) { handler_(req, res, &reader); };
  Post(any, with_body);
  Put(any, with_body);
  Patch(any, with_body);
  Delete(any, with_body);
  // Relayed and handler-made responses keep exactly their fields: replace the
  // ones httplib adds, keep its framing and connection fields.
  set_post_routing_handler([](const httplib::Request& req, httplib::Response& res) {
    Connection* conn = CurrentConnection();
    if (conn == nullptr) return;
    // httplib writes the head, then an in-memory body with one more call;
    // a relay that has its first bytes at hand asked for the same.
    conn->hold_write = req.method != "HEAD" && (!res.body.empty() || conn->hold_write);
    if (conn->must_close) {
      res.headers.erase("Keep-Alive");
      if (!res.has_header("Connection")) res.set_header("Connection", "close");
    }
    if (!conn->exact_headers) return;
    httplib::Headers framing;
    for (const auto& [name, value] : res.headers) {
      if (EqualsIgnoreCase(name, "content-length") || EqualsIgnoreCase(name, "transfer-encoding") ||
          EqualsIgnoreCase(name, "connection") || EqualsIgnoreCase(name, "keep-alive")) {
        framing.emplace(name, value);
      }
    }
    // Written once, here: moved, not copied.
    for (auto& [name, value] : *conn->exact_headers) {
      framing.emplace(std::move(name), std::move(value));
    }
    conn->exact_headers.reset();
    res.headers = std::move(framing);
  });
  // httplib's own failures (a malformed request line, an unknown method) get
  // a JSON body; the handler's responses are left alone.
  set_error_handler(HandlerWithResponse([](const httplib::Request&, httplib::Response& res) {
    Connection* conn = CurrentConnection();
    if (conn != nullptr && conn->handled) return HandlerResponse::Unhandled;
    res.set_content(ErrorBody("", res.status, res.status == 400 ? "bad_request" : "http_error",
                              std::string("the request could not be served (HTTP ") +
                                  std::to_string(res.status) + ")"),
                    "application/json");
    return HandlerResponse::Handled;
  }));
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

void HttpServer::SetupRequest(Connection& conn, httplib::Request& req) {
  conn.headers.clear();
  for (const auto& [name, value] : req.headers) {
    if (!IsPseudoHeader(name)) conn.headers.emplace_back(name, value);
  }
  conn.content_encoding = req.get_header_value("Content-Encoding");
  req.headers.erase("Content-Encoding");
  req.headers.erase("Accept-Encoding");
  req.headers.erase("Range");
  bool chunked = req.has_header("Transfer-Encoding");
  std::string length = req.get_header_value("Content-Length");
  conn.has_body = chunked || (!length.empty() && length != "0");
  bool reads_body = req.method == "POST" || req.method == "PUT" || req.method == "PATCH" ||
                    req.method == "DELETE";
  if (reads_body && !chunked && length.empty()) {
    // No body (RFC 9112 section 6.3): say so, or httplib would read until the
    // connection closes.
    req.headers.emplace("Content-Length", "0");
  }
  if (!reads_body && conn.has_body) {
    // httplib does not read bodies of GET, HEAD or OPTIONS: the connection
    // cannot be used for another request after this one.
    conn.must_close = true;
    conn.linger = true;
  }
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

bool HttpServer::process_and_close_socket(socket_t sock) {
  int one = 1;
  setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  SetTimeout(sock, SO_RCVTIMEO, options_.client_timeout_ms);
  SetTimeout(sock, SO_SNDTIMEO, options_.client_timeout_ms);
  Connection conn;
  conn.fd = sock;
  ConnectionStream stream(sock, options_.client_timeout_ms, &conn);
  {
    std::string ip;
    int port = 0;
    stream.get_remote_ip_and_port(ip, port);
    conn.remote = ip + ":" + std::to_string(port);
  }
  bool linger = false;
  size_t served = 0;
  while (!draining_.load()) {
    if (!stream.buffered() && !WaitForRequest(sock, drain_fd_, options_.keep_alive_timeout_ms)) {
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
    bool connection_closed = false;
    bool last = ++served >= options_.keep_alive_max_requests;
    bool ok = process_request(stream, last, connection_closed,
                              [this, &conn](httplib::Request& req) { SetupRequest(conn, req); });
    tls_connection = nullptr;
    if (!stream.Flush()) ok = false;
    if (conn.after_response) conn.after_response();
    linger = conn.linger;
    bool done = !ok || connection_closed || last || conn.must_close;
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
