// The HTTP/1.1 server side: cpp-httplib's parser, router and response
// writer, with the connection loop replaced so that a proxy can be
// transparent (docs/serve.md, "Threads and connections"):
//
// * each connection is served by one worker thread of a fixed pool, which
//   keeps the socket's read buffer across requests and exposes the socket to
//   the request's handler (CurrentConnection()), so a handler can notice a
//   client that goes away before its answer starts;
// * before httplib reads a body, the request's Content-Encoding, Accept-Encoding
//   and Range fields are taken out of httplib's view (kept in
//   CurrentConnection()->headers): httplib would otherwise decode the body,
//   re-compress the relayed answer or cut it into ranges;
// * a handler may set exact response fields (Connection::exact_headers),
//   which replace the ones httplib adds (Content-Type: text/plain,
//   Accept-Ranges) while httplib's framing fields stay;
// * draining: Drain() refuses new requests, closes idle connections and
//   waits for requests in flight (streams included) to end.
//
// Thread safety: Start, Drain and Stop may be called from any thread once;
// handlers run on the worker threads.
#ifndef COMPACTOR_SRC_SERVE_HTTP_SERVER_H_
#define COMPACTOR_SRC_SERVE_HTTP_SERVER_H_

#include <httplib.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "compactor/env.h"
#include "compactor/status.h"
#include "serve/http_util.h"

namespace compactor::serve {

struct HttpServerOptions {
  int threads = 256;
  int64_t keep_alive_timeout_ms = 60'000;
  int64_t client_timeout_ms = 60'000;
  size_t keep_alive_max_requests = 10'000;
  // The accept thread and the clock of the linger. REQUIRES: non-null.
  Env* env = nullptr;
};

// The connection (and its current request) of the calling worker thread.
struct Connection {
  int fd = -1;
  std::string remote;  // "IP:PORT"
  // --- the current request ---
  // Every field as the client sent it (httplib's REMOTE_ADDR-style entries excluded).
  HeaderList headers;
  std::string content_encoding;  // removed from httplib's view
  // The request announced a body (Content-Length > 0 or chunked).
  bool has_body = false;
  // Close the connection after this response; `linger` also drains what the
  // client still sends (an unread body) for a moment so it reads the answer.
  bool must_close = false;
  bool linger = false;
  // The response belongs to the handler: httplib's error page must not replace it.
  bool handled = false;
  // When set, the response's fields are exactly these plus httplib's framing.
  std::optional<HeaderList> exact_headers;
  // Runs once the response was written (or failed), on this thread.
  std::function<void()> after_response;
  // The next write to the client waits for the one after it, and both go
  // out in one send: one segment, not two, and one wake-up of the client.
  // Set for a response's head when its first body bytes are at hand (an
  // in-memory body; a relayed stream's early events), and for a relayed
  // stream's last bytes, which then go with the chunked terminator.
  bool hold_write = false;
};

// The calling worker thread's connection; null outside a request.
Connection* CurrentConnection();

// Reads the current request's body through `reader` (null: no body) into
// `out`, at most `limit` bytes: kFailedPrecondition when the body is larger
// (the connection is then closed after the answer, HTTP 413), kInvalidArgument
// when it cannot be read (the client went away or sent a malformed chunk).
Status ReadBody(const httplib::ContentReader* reader, size_t limit, std::string* out);

class HttpServer : public httplib::Server {
 public:
  // One handler for every request; `reader` is set for POST, PUT, PATCH and
  // DELETE (the body is not read yet), null for GET, HEAD and OPTIONS.
  using Handler = std::function<void(const httplib::Request&, httplib::Response&,
                                     const httplib::ContentReader* reader)>;

  HttpServer(HttpServerOptions options, Handler handler);
  ~HttpServer() override;

  // Binds (port 0: any free port) and starts the accept loop on a thread;
  // returns once the loop runs (so a Drain() right after it stops it).
  // kUnavailable when binding fails.
  Status Start(const std::string& host, int port);
  int bound_port() const { return port_; }

  // Refuses new requests, closes idle connections, and returns once no
  // request is in flight; then stops the accept loop and joins every worker.
  void Drain();

  int64_t active_requests() const { return active_.load(); }

 private:
  bool process_and_close_socket(socket_t sock) override;
  void SetupRequest(Connection& conn, httplib::Request& req);
  void Linger(int fd);

  HttpServerOptions options_;
  Handler handler_;
  int port_ = 0;
  int drain_fd_ = -1;  // an eventfd, readable once draining
  std::atomic<bool> draining_{false};
  std::atomic<bool> accept_ended_{false};  // listen_after_bind() returned
  std::atomic<int64_t> active_{0};
  std::mutex mu_;
  std::condition_variable idle_cv_;
  std::unique_ptr<Thread> accept_thread_;
  bool stopped_ = false;
};

}  // namespace compactor::serve

#endif  // COMPACTOR_SRC_SERVE_HTTP_SERVER_H_
