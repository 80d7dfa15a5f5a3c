#include "support/http_client.h"

#include <arpa/inet.h>
#include <fcntl.h>
// The kernel's struct tcp_info (glibc's <netinet/tcp.h> lacks the data
// segment counters); it also defines TCP_NODELAY.
#include <linux/tcp.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>

#include "support/test_util.h"

extern char** environ;

namespace compactor::testing {
namespace {

bool IEq(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

int MsLeft(Clock::time_point deadline) {
  auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left < 0 ? 0 : static_cast<int>(left);
}

}  // namespace

std::string RawResponse::Header(std::string_view name) const {
  for (const auto& [n, v] : headers) {
    if (IEq(n, name)) return v;
  }
  return "";
}

bool RawResponse::HasHeader(std::string_view name) const {
  return std::any_of(headers.begin(), headers.end(),
                     [&](const auto& h) { return IEq(h.first, name); });
}

std::string RequestBytes(const std::string& method, const std::string& target,
                         const std::vector<std::pair<std::string, std::string>>& headers,
                         const std::string& body) {
  std::string out = method + " " + target + " HTTP/1.1\r\n";
  bool host = false;
  bool length = false;
  for (const auto& [n, v] : headers) {
    host = host || IEq(n, "host");
    length = length || IEq(n, "content-length") || IEq(n, "transfer-encoding");
  }
  if (!host) out += "Host: client.test\r\n";
  for (const auto& [n, v] : headers) out += n + ": " + v + "\r\n";
  if (!length && (!body.empty() || method == "POST")) {
    out += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  }
  out += "\r\n";
  out += body;
  return out;
}

RawClient::~RawClient() { Close(); }

bool RawClient::Connect(int port) {
  Close();
  fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) return false;
  int one = 1;
  setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
}

bool SendAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

bool RawClient::Send(std::string_view bytes) { return SendAll(fd_, bytes); }

int64_t DataSegmentsReceived(int fd) {
  tcp_info info{};
  socklen_t len = sizeof info;
  if (::getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) != 0 ||
      len < offsetof(tcp_info, tcpi_data_segs_in) + sizeof info.tcpi_data_segs_in) {
    return -1;
  }
  return info.tcpi_data_segs_in;
}

bool RawClient::More(Clock::time_point deadline) {
  pollfd p{fd_, POLLIN, 0};
  if (::poll(&p, 1, MsLeft(deadline)) <= 0) return false;
  char tmp[16384];
  ssize_t n = ::recv(fd_, tmp, sizeof tmp, 0);
  if (n <= 0) return false;
  buf_.append(tmp, static_cast<size_t>(n));
  return true;
}

std::optional<RawResponse> RawClient::Read(bool head_request,
                                           const std::function<bool(const std::string&)>& on_piece,
                                           std::chrono::milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  size_t end;
  while ((end = buf_.find("\r\n\r\n")) == std::string::npos) {
    if (!More(deadline)) return std::nullopt;
  }
  RawResponse r;
  std::string head = buf_.substr(0, end);
  buf_.erase(0, end + 4);
  size_t line_end = head.find("\r\n");
  std::string status_line = head.substr(0, line_end);
  r.status = std::atoi(status_line.c_str() + status_line.find(' ') + 1);
  size_t pos = line_end == std::string::npos ? head.size() : line_end + 2;
  while (pos < head.size()) {
    size_t e = head.find("\r\n", pos);
    if (e == std::string::npos) e = head.size();
    std::string f = head.substr(pos, e - pos);
    size_t colon = f.find(':');
    size_t v = f.find_first_not_of(' ', colon + 1);
    r.headers.emplace_back(f.substr(0, colon), v == std::string::npos ? "" : f.substr(v));
    pos = e + 2;
  }
  auto piece = [&](std::string data) {
    r.body += data;
    r.pieces.emplace_back(Clock::now(), data);
    return !on_piece || on_piece(data);
  };
  if (head_request || r.status == 204 || r.status == 304) return r;
  if (IEq(r.Header("transfer-encoding"), "chunked")) {
    r.chunked = true;
    while (true) {
      size_t le;
      while ((le = buf_.find("\r\n")) == std::string::npos) {
        if (!More(deadline)) return r;
      }
      size_t size = std::stoul(buf_.substr(0, le), nullptr, 16);
      while (buf_.size() < le + 2 + size + 2) {
        if (!More(deadline)) return r;
      }
      std::string data = buf_.substr(le + 2, size);
      buf_.erase(0, le + 2 + size + 2);
      if (size == 0) return r;
      if (!piece(std::move(data))) return r;
    }
  }
  std::string length = r.Header("content-length");
  if (length.empty()) {  // until the connection closes
    while (true) {
      if (!buf_.empty()) {
        std::string data = std::move(buf_);
        buf_.clear();
        if (!piece(std::move(data))) return r;
      }
      if (!More(deadline)) return r;
    }
  }
  size_t n = std::stoul(length);
  size_t got = 0;
  while (got < n) {
    if (buf_.empty() && !More(deadline)) return r;
    size_t take = std::min(buf_.size(), n - got);
    std::string data = buf_.substr(0, take);
    buf_.erase(0, take);
    got += take;
    if (!piece(std::move(data))) return r;
  }
  return r;
}

bool RawClient::ClosedByPeer(std::chrono::milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  while (true) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, MsLeft(deadline)) <= 0) return false;
    char tmp[4096];
    ssize_t n = ::recv(fd_, tmp, sizeof tmp, 0);
    if (n <= 0) return true;
  }
}

void RawClient::Close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  buf_.clear();
}

std::optional<RawResponse> Fetch(int port, const std::string& method, const std::string& target,
                                 const std::vector<std::pair<std::string, std::string>>& headers,
                                 const std::string& body) {
  RawClient c;
  if (!c.Connect(port) || !c.Send(RequestBytes(method, target, headers, body))) {
    return std::nullopt;
  }
  return c.Read(method == "HEAD");
}

ServeProcess::~ServeProcess() {
  if (pid_ > 0 && exit_code_ < 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  if (out_fd_ >= 0) ::close(out_fd_);
  if (err_fd_ >= 0) ::close(err_fd_);
}

bool ServeProcess::Start(const std::string& program, const std::vector<std::string>& args,
                         const std::vector<std::string>& env) {
  int out[2];
  int err[2];
  if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) return false;
  std::vector<std::string> envs;
  for (char** e = environ; *e != nullptr; ++e) envs.emplace_back(*e);
  envs.insert(envs.end(), env.begin(), env.end());
  pid_ = ::fork();
  if (pid_ == 0) {
    ResetSignalsForExec();
    ::dup2(out[1], 1);
    ::dup2(err[1], 2);
    std::vector<char*> argv;
    std::string prog = program;
    argv.push_back(prog.data());
    std::vector<std::string> a = args;
    for (std::string& s : a) argv.push_back(s.data());
    argv.push_back(nullptr);
    std::vector<char*> envp;
    for (std::string& s : envs) envp.push_back(s.data());
    envp.push_back(nullptr);
    ::execve(prog.c_str(), argv.data(), envp.data());
    ::_exit(127);
  }
  ::close(out[1]);
  ::close(err[1]);
  out_fd_ = out[0];
  err_fd_ = err[0];
  ::fcntl(err_fd_, F_SETFL, O_NONBLOCK);
  auto deadline = Clock::now() + std::chrono::seconds(20);
  std::string buf;
  while (buf.find('\n') == std::string::npos) {
    pollfd p{out_fd_, POLLIN, 0};
    if (::poll(&p, 1, MsLeft(deadline)) <= 0) return false;
    char tmp[512];
    ssize_t n = ::read(out_fd_, tmp, sizeof tmp);
    if (n <= 0) return false;
    buf.append(tmp, static_cast<size_t>(n));
    Drain(false);
  }
  line_ = buf.substr(0, buf.find('\n'));
  size_t colon = line_.rfind(':');
  port_ = colon == std::string::npos ? 0 : std::atoi(line_.c_str() + colon + 1);
  return port_ > 0;
}

void ServeProcess::Signal(int sig) {
  if (pid_ > 0) ::kill(pid_, sig);
}

void ServeProcess::Drain(bool block) {
  if (err_fd_ < 0) return;
  if (block) ::fcntl(err_fd_, F_SETFL, 0);
  char tmp[4096];
  while (true) {
    ssize_t n = ::read(err_fd_, tmp, sizeof tmp);
    if (n <= 0) break;
    err_.append(tmp, static_cast<size_t>(n));
  }
}

int ServeProcess::Wait(std::chrono::milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  while (exit_code_ < 0) {
    int status = 0;
    pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      break;
    }
    Drain(false);
    if (Clock::now() > deadline) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
      exit_code_ = -2;
      return -1;
    }
    ::usleep(10'000);
  }
  Drain(true);
  return exit_code_;
}

std::string ServeProcess::err() {
  Drain(false);
  return err_;
}

}  // namespace compactor::testing
