// Test helpers around `compactor serve`: a raw HTTP/1.1 client on plain
// sockets (the exact bytes sent and received, body pieces with their arrival
// times, closing mid-answer) and a compactor-serve child process.
#ifndef COMPACTOR_TESTS_SUPPORT_HTTP_CLIENT_H_
#define COMPACTOR_TESTS_SUPPORT_HTTP_CLIENT_H_

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace compactor::testing {

using Clock = std::chrono::steady_clock;

struct RawResponse {
  int status = 0;
  std::vector<std::pair<std::string, std::string>> headers;  // in order
  std::string body;                                          // de-chunked
  bool chunked = false;
  // Body bytes as they arrived, with their arrival times.
  std::vector<std::pair<Clock::time_point, std::string>> pieces;
  std::string Header(std::string_view name) const;  // first value, case-insensitive
  bool HasHeader(std::string_view name) const;
};

// "METHOD TARGET HTTP/1.1", Host, the fields, Content-Length when `body` is
// set or the method is POST, then the body.
std::string RequestBytes(const std::string& method, const std::string& target,
                         const std::vector<std::pair<std::string, std::string>>& headers,
                         const std::string& body = "");

// Sends all of `bytes` on a socket (retrying short writes; no SIGPIPE).
// False when the peer is gone or the socket failed.
bool SendAll(int fd, std::string_view bytes);

// The TCP segments with data that socket `fd` has received (the kernel's
// tcpi_data_segs_in); -1 where the kernel does not count them. On loopback
// each send of less than 64 KiB arrives as one segment, so the difference
// over a response counts the server's writes.
int64_t DataSegmentsReceived(int fd);

class RawClient {
 public:
  RawClient() = default;
  ~RawClient();
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;

  bool Connect(int port);
  bool Send(std::string_view bytes);
  // Reads one response. `on_piece` sees each body piece as it arrives and
  // may stop reading (return false: the response is returned as read so far).
  // Times out after `timeout`. Empty when nothing (or no head) arrived.
  std::optional<RawResponse> Read(bool head_request = false,
                                  const std::function<bool(const std::string&)>& on_piece = {},
                                  std::chrono::milliseconds timeout = std::chrono::seconds(20));
  // Whether the server closed the connection (EOF within `timeout`).
  bool ClosedByPeer(std::chrono::milliseconds timeout);
  void Close();
  int fd() const { return fd_; }

 private:
  bool More(Clock::time_point deadline);
  int fd_ = -1;
  std::string buf_;
};

// One request on a new connection.
std::optional<RawResponse> Fetch(int port, const std::string& method, const std::string& target,
                                 const std::vector<std::pair<std::string, std::string>>& headers,
                                 const std::string& body = "");

// compactor-serve as a child process with its stdout and stderr captured.
class ServeProcess {
 public:
  ~ServeProcess();
  // Starts `program args...` with `env` added to the environment; waits for
  // the "listening on http://HOST:PORT" line (false when the process ends or
  // 20 s pass first).
  bool Start(const std::string& program, const std::vector<std::string>& args,
             const std::vector<std::string>& env = {});
  int port() const { return port_; }
  const std::string& listening_line() const { return line_; }
  void Signal(int sig);
  // Waits for the exit (at most `timeout`; then kills it and returns -1).
  int Wait(std::chrono::milliseconds timeout);
  // stderr so far (after Wait: all of it).
  std::string err();

 private:
  void Drain(bool block);
  pid_t pid_ = -1;
  int out_fd_ = -1;
  int err_fd_ = -1;
  int port_ = 0;
  std::string line_;
  std::string err_;
  int exit_code_ = -1;
};

}  // namespace compactor::testing

#endif  // COMPACTOR_TESTS_SUPPORT_HTTP_CLIENT_H_
