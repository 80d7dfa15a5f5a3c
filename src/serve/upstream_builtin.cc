// The built-in HTTP/1.1 client of UpstreamCall (upstream_transport.h), for
// plain-HTTP upstreams on an IP address or localhost.
//
// Why not libcurl here (the project prefers a library to its own code): on
// a pass-through request to a local upstream, libcurl's transfer took 85k
// instructions, more than twice all of nginx's work on the same request
// (32k), and the proxy's added latency is that work (docs/benchmarks.md).
// This client does what such a request needs and nothing else: one kept-alive
// connection per thread, the head and body sent in one system call, the
// answer's head parsed where it lies, its body (Content-Length, chunked or
// until the connection closes) handed on as it arrives. libcurl keeps
// everything else (TLS, names, proxies, credentials in the URL).
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "serve/http1_response.h"
#include "serve/upstream_transport.h"

namespace compactor::serve::internal {
namespace {

// Bytes read from the socket at a time, and at most per Perform, so that a
// fast upstream cannot keep one Perform going forever.
constexpr size_t kReadBytes = 64 * 1024;
constexpr size_t kMaxReadPerPerform = 1024 * 1024;

struct PlainUrl {
  std::string host;            // without brackets
  bool ip_literal = false;     // else "localhost"
  int port = 80;               //
  std::string_view authority;  // for the Host field: as written in the URL
  std::string_view target;     // "/path?query" ("/" when the URL has none)
};

bool IsIpLiteral(const std::string& host) {
  unsigned char buf[sizeof(in6_addr)];
  return ::inet_pton(AF_INET, host.c_str(), buf) == 1 ||
         ::inet_pton(AF_INET6, host.c_str(), buf) == 1;
}

// "http://HOST[:PORT][/...]" with HOST an IP address or localhost; nullopt
// for anything else (the caller uses libcurl).
std::optional<PlainUrl> ParsePlainUrl(std::string_view url) {
  constexpr std::string_view kScheme = "http://";
  if (!StartsWithIgnoreCase(url, kScheme)) return std::nullopt;
  std::string_view rest = url.substr(kScheme.size());
  size_t end = rest.find_first_of("/?#");
  PlainUrl u;
  u.authority = rest.substr(0, end);
  u.target = end == std::string_view::npos ? std::string_view() : rest.substr(end);
  if (!u.target.empty() && u.target.front() != '/') return std::nullopt;  // "?q" or "#f"
  if (u.target.find('#') != std::string_view::npos) return std::nullopt;
  std::string_view a = u.authority;
  if (a.empty() || a.find('@') != std::string_view::npos) return std::nullopt;
  std::string_view port;
  if (a.front() == '[') {
    size_t close = a.find(']');
    if (close == std::string_view::npos) return std::nullopt;
    u.host = std::string(a.substr(1, close - 1));
    std::string_view after = a.substr(close + 1);
    if (!after.empty() && after.front() != ':') return std::nullopt;
    if (!after.empty()) port = after.substr(1);
  } else {
    size_t colon = a.find(':');
    u.host = std::string(a.substr(0, colon));
    if (colon != std::string_view::npos) port = a.substr(colon + 1);
  }
  if (!port.empty()) {
    auto [p, ec] = std::from_chars(port.data(), port.data() + port.size(), u.port);
    if (ec != std::errc() || p != port.data() + port.size() || u.port < 1 || u.port > 65535) {
      return std::nullopt;
    }
  }
  u.ip_literal = IsIpLiteral(u.host);
  if (!u.ip_literal && !EqualsIgnoreCase(u.host, "localhost")) return std::nullopt;
  return u;
}

// The thread's kept-alive connection: one, because a worker thread carries
// one exchange at a time to one upstream.
struct KeptConnection {
  int fd = -1;
  std::string key;  // "host port"
  ~KeptConnection() {
    if (fd >= 0) ::close(fd);
  }
};

KeptConnection& Kept() {
  thread_local KeptConnection kept;
  return kept;
}

// The kept connection to `key` if it is still open (the upstream may have
// closed it while it was idle: it then reads as end of file), else -1.
int TakeKept(const std::string& key) {
  KeptConnection& k = Kept();
  int fd = k.fd;
  k.fd = -1;
  if (fd < 0) return -1;
  if (k.key != key) {
    ::close(fd);
    return -1;
  }
  char byte;
  ssize_t r = ::recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return fd;
  ::close(fd);  // closed, failed, or bytes nobody asked for
  return -1;
}

void KeepConnection(int fd, const std::string& key) {
  KeptConnection& k = Kept();
  if (k.fd >= 0) ::close(k.fd);
  k.fd = fd;
  k.key = key;
}

// The reader's sink: the call's state.
class StateSink : public Http1ResponseReader::Sink {
 public:
  void set(CallState* s) { s_ = s; }
  void HeadLine(std::string_view line) override { s_->HeadLine(line); }
  bool Body(std::string_view data) override { return s_->Body(data); }

 private:
  CallState* s_ = nullptr;
};

class BuiltinTransport : public Transport {
 public:
  explicit BuiltinTransport(PlainUrl url) : url_(std::move(url)) {}
  ~BuiltinTransport() override { Close(); }

  Status Start(CallState& s) override {
    key_ = url_.host + " " + std::to_string(url_.port);
    BuildHead(s.request);
    reader_.emplace(s.request.method == "HEAD");
    sink_.set(&s);
    connect_deadline_us_ = s.start_us + s.request.connect_timeout_ms * 1000;
    fd_ = TakeKept(key_);
    reused_ = fd_ >= 0;
    if (reused_) {
      phase_ = Phase::kSending;
    } else {
      Resolve(s);
      if (!s.finished) ConnectNext(s);
    }
    return Status::Ok();
  }

  bool Perform(CallState& s) override {
    size_t read_now = 0;
    while (!s.finished && phase_ != Phase::kDone) {
      if (phase_ == Phase::kConnecting && !Connected(s)) break;
      if (phase_ == Phase::kSending && !Send(s)) break;
      if (phase_ == Phase::kReceiving) {
        if (read_now >= kMaxReadPerPerform || !Receive(s, &read_now)) break;
      }
    }
    return !s.finished;
  }

  bool Poll(CallState& s, int client_fd, int wait_ms) override {
    pollfd fds[2] = {};
    int n = 0;
    if (fd_ >= 0) {
      short events = phase_ == Phase::kConnecting ? POLLOUT
                     : phase_ == Phase::kSending  ? POLLOUT | POLLIN
                                                  : POLLIN;
      fds[n++] = pollfd{fd_, events, 0};
    }
    int client = -1;
    if (client_fd >= 0) {
      client = n;
      fds[n++] = pollfd{client_fd, POLLIN, 0};
    }
    if (phase_ == Phase::kConnecting) {
      int64_t left_ms = (connect_deadline_us_ - s.NowMicros() + 999) / 1000;
      wait_ms = static_cast<int>(std::clamp<int64_t>(left_ms, 0, wait_ms));
    }
    int r = ::poll(fds, n, wait_ms);
    if (phase_ == Phase::kConnecting && r == 0 && s.NowMicros() >= connect_deadline_us_) {
      Fail(s, UpstreamFailure::kTimeout,
           "could not connect to " + url_.host + " port " + std::to_string(url_.port) + " within " +
               std::to_string(s.request.connect_timeout_ms) + " ms");
    }
    return r > 0 && client >= 0 && fds[client].revents != 0;
  }

  void Abort() override { Close(); }

 private:
  enum class Phase { kConnecting, kSending, kReceiving, kDone };

  // The request line and fields, sent with the body in one sendmsg.
  void BuildHead(const UpstreamRequest& r) {
    size_t size = r.method.size() + url_.target.size() + url_.authority.size() + 64;
    for (const auto& [name, value] : r.headers) size += name.size() + value.size() + 4;
    head_.reserve(size);
    head_.append(r.method).append(" ");
    head_.append(url_.target.empty() ? std::string_view("/") : url_.target);
    head_.append(" HTTP/1.1\r\nHost: ");
    // The port is left out when it is the scheme's own, as user agents do.
    std::string_view host = url_.authority;
    if (url_.port == 80 && host.size() > 3 && host.substr(host.size() - 3) == ":80") {
      host.remove_suffix(3);
    }
    head_.append(host).append("\r\n");
    for (const auto& [name, value] : r.headers) {
      if (name.empty() || name.find_first_of("\r\n") != std::string::npos ||
          value.find_first_of("\r\n") != std::string::npos) {
        continue;
      }
      head_.append(name).append(value.empty() ? ":" : ": ").append(value).append("\r\n");
    }
    if (r.body != nullptr) {
      head_.append("Content-Length: ").append(std::to_string(r.body->size())).append("\r\n");
    }
    head_.append("\r\n");
  }

  void Resolve(CallState& s) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV | (url_.ip_literal ? AI_NUMERICHOST : 0);
    addrinfo* list = nullptr;
    std::string port = std::to_string(url_.port);
    int rc = ::getaddrinfo(url_.host.c_str(), port.c_str(), &hints, &list);
    if (rc != 0) {
      Fail(s, UpstreamFailure::kConnect,
           "could not resolve " + url_.host + ": " + ::gai_strerror(rc));
      return;
    }
    for (addrinfo* a = list; a != nullptr; a = a->ai_next) {
      sockaddr_storage ss{};
      std::memcpy(&ss, a->ai_addr, a->ai_addrlen);
      addresses_.push_back({ss, a->ai_addrlen});
    }
    ::freeaddrinfo(list);
  }

  // Starts connecting to the next address; fails the call when none is left.
  void ConnectNext(CallState& s) {
    while (next_address_ < addresses_.size()) {
      const auto& [addr, len] = addresses_[next_address_++];
      int fd = ::socket(addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
      if (fd < 0) {
        connect_errno_ = errno;
        continue;
      }
      int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), len) == 0 ||
          errno == EINPROGRESS) {
        fd_ = fd;
        phase_ = Phase::kConnecting;
        return;
      }
      connect_errno_ = errno;
      ::close(fd);
    }
    Fail(s, UpstreamFailure::kConnect,
         "could not connect to " + url_.host + " port " + std::to_string(url_.port) + ": " +
             std::strerror(connect_errno_ != 0 ? connect_errno_ : ECONNREFUSED));
  }

  // False while the connection is not made yet.
  bool Connected(CallState& s) {
    pollfd p{fd_, POLLOUT, 0};
    if (::poll(&p, 1, 0) == 0) return false;
    int err = 0;
    socklen_t len = sizeof(err);
    if (::getsockopt(fd_, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
    if (err != 0) {
      connect_errno_ = err;
      Close();
      ConnectNext(s);
      return false;
    }
    phase_ = Phase::kSending;
    return true;
  }

  // False when the connection takes no more now, or the request is sent, or
  // the call ended.
  bool Send(CallState& s) {
    const std::string* body = s.request.body;
    size_t total = head_.size() + (body != nullptr ? body->size() : 0);
    while (sent_ < total) {
      iovec iov[2];
      int n = 0;
      if (sent_ < head_.size()) {
        iov[n++] = {head_.data() + sent_, head_.size() - sent_};
      }
      if (body != nullptr && !body->empty()) {
        size_t off = sent_ > head_.size() ? sent_ - head_.size() : 0;
        iov[n++] = {const_cast<char*>(body->data()) + off, body->size() - off};
      }
      msghdr msg{};
      msg.msg_iov = iov;
      msg.msg_iovlen = static_cast<size_t>(n);
      ssize_t w = ::sendmsg(fd_, &msg, MSG_NOSIGNAL);
      if (w < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
          // The upstream may answer before it read everything (a 413):
          // its answer is taken as it comes, not after the whole body.
          size_t ignored = 0;
          while (phase_ == Phase::kSending && Receive(s, &ignored)) {
          }
          return false;
        }
        return ConnectionLost(s, errno);
      }
      sent_ += static_cast<size_t>(w);
    }
    // The answer cannot be there yet: wait for it (Poll) rather than ask
    // the socket now and be told to wait.
    phase_ = Phase::kReceiving;
    return false;
  }

  // Reads what arrived. False when nothing more is there now (or the call
  // ended); `read_now` counts the bytes.
  bool Receive(CallState& s, size_t* read_now) {
    thread_local std::vector<char> buf(kReadBytes);
    ssize_t r = ::recv(fd_, buf.data(), buf.size(), 0);
    if (r < 0) {
      if (errno == EINTR) return true;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return false;
      return ConnectionLost(s, errno);
    }
    if (r == 0) return EndOfStream(s);
    received_ = true;
    *read_now += static_cast<size_t>(r);
    Settle(s, reader_->Feed(std::string_view(buf.data(), static_cast<size_t>(r)), sink_));
    // A read that did not fill the buffer took everything there was: the
    // next bytes are waited for (Poll), not asked for at once (one system
    // call less for every piece of a stream).
    return !s.finished && static_cast<size_t>(r) == buf.size();
  }

  // Acts on the reader's state after it read.
  void Settle(CallState& s, Http1ResponseReader::State state) {
    switch (state) {
      case Http1ResponseReader::State::kMore:
        return;
      case Http1ResponseReader::State::kDone:
        return Done(s);
      case Http1ResponseReader::State::kFailed:
        return Fail(s, reader_->failure(), reader_->error());
      case Http1ResponseReader::State::kStopped:
        // The sink refused the bytes (the call is finished): the upstream
        // sees the request abandoned.
        phase_ = Phase::kDone;
        return Close();
    }
  }

  // The answer is complete: the connection is kept for the thread's next
  // request when HTTP allows it and the whole request went out. (Bytes the
  // upstream sent after the answer are found before the connection is used
  // again: TakeKept.)
  void Done(CallState& s) {
    phase_ = Phase::kDone;
    bool reusable = reader_->reusable() && sent_ == TotalToSend(s);
    if (reusable && fd_ >= 0) {
      KeepConnection(fd_, key_);
      fd_ = -1;
    }
    Close();
    s.Finish(UpstreamFailure::kNone, "");
  }

  size_t TotalToSend(const CallState& s) const {
    return head_.size() + (s.request.body != nullptr ? s.request.body->size() : 0);
  }

  bool EndOfStream(CallState& s) {
    if (!received_) {
      if (reused_) return Reconnect(s);
      Fail(s, UpstreamFailure::kReset, "the upstream closed the connection without an answer");
      return false;
    }
    Settle(s, reader_->EndOfStream());
    return false;
  }

  bool ConnectionLost(CallState& s, int err) {
    if (!received_ && reused_) return Reconnect(s);
    Fail(s, UpstreamFailure::kReset,
         std::string("the connection to the upstream failed: ") + std::strerror(err));
    return false;
  }

  // A kept connection the upstream closed as the request went out (it had
  // timed it out): the request is sent again once, on a new connection, as
  // libcurl does. Nothing of an answer had arrived.
  bool Reconnect(CallState& s) {
    Close();
    reused_ = false;
    sent_ = 0;
    Resolve(s);
    if (!s.finished) ConnectNext(s);
    return !s.finished;
  }

  void Fail(CallState& s, UpstreamFailure f, std::string_view why) {
    Close();
    phase_ = Phase::kDone;
    s.Finish(f, why);
  }

  void Close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

  PlainUrl url_;
  std::string key_;
  std::string head_;
  std::vector<std::pair<sockaddr_storage, socklen_t>> addresses_;
  size_t next_address_ = 0;
  int connect_errno_ = 0;
  int64_t connect_deadline_us_ = 0;
  int fd_ = -1;
  bool reused_ = false;
  Phase phase_ = Phase::kConnecting;
  size_t sent_ = 0;
  bool received_ = false;
  std::optional<Http1ResponseReader> reader_;
  StateSink sink_;
};

}  // namespace

std::unique_ptr<Transport> NewBuiltinTransport(std::string_view url) {
  std::optional<PlainUrl> u = ParsePlainUrl(url);
  if (!u) return nullptr;
  return std::make_unique<BuiltinTransport>(std::move(*u));
}

}  // namespace compactor::serve::internal
