// The HTTP/1.1 server side (docs/serve.md, "Threads and connections"):
// cpp-httplib's accept loop and thread pool, with the connection itself
// served here, so that a proxy can be transparent and cheap:
//
// * each connection is served by one worker thread of a fixed pool, which
//   keeps the socket's read buffer across requests (a pipelined request
//   stays in it) and exposes the socket to the request's handler
//   (CurrentConnection()), so a handler can notice a client that goes away
//   before its answer starts;
// * requests are read by our own parser (http1_request.h; bodies by the
//   upstream client's chunk decoder, http1_response.h) rather than httplib's:
//   it keeps every field in order with its spelling, leaves the body's
//   coding alone and costs a fraction of httplib's reading and routing (see
//   "Why our own reader" in docs/serve.md); httplib's Request, Response,
//   ContentReader and DataSink stay the handlers' vocabulary;
// * responses are written here: a handler may set exact response fields
//   (Connection::exact_headers), to which only the framing and connection
//   fields are added; the head goes out with the first body bytes;
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
  // When set, the response's fields are exactly these plus the framing and
  // connection fields (else the Response's own fields are written).
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

class ConnectionStream;  // http_server.cc

// Reads the current request's body through `reader` (null: no body) into
// `out`, at most `limit` bytes: kFailedPrecondition when the body is larger
// (the connection is then closed after the answer, HTTP 413), kInvalidArgument
// when it cannot be read (the client went away or sent a malformed chunk).
Status ReadBody(const httplib::ContentReader* reader, size_t limit, std::string* out);

class HttpServer : public httplib::Server {
 public:
  // One handler for every request; `reader` is set for POST, PUT, PATCH and
  // DELETE (the body is not read yet), null for GET, HEAD and OPTIONS (other
  // methods are answered 501). The Request holds method, target, version,
  // path (the target without its query, not decoded) and params (the
  // query's, decoded); the fields are in CurrentConnection()->headers.
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
  // Reads, handles and answers one request: false when the connection
  // cannot carry another (closed, malformed, or asked to close).
  bool ServeOne(ConnectionStream& stream, Connection& conn, bool last);
  bool WriteResponse(ConnectionStream& stream, Connection& conn, const httplib::Request& req,
                     httplib::Response& res, bool close);
  void Linger(int fd);

  HttpServerOptions options_;
  Handler handler_;
  int port_ = 0;
  int drain_fd_ = -1;  // an eventfd, readable once draining
  std::atomic<bool> draining_{false};
  std::atomic<bool> accept_ended_{false};  // listen_after_bind() returned
  std::atomic<int64_t> active_{0};
  std::string keep_alive_;  // the Keep-Alive field's value
  std::mutex mu_;
  std::condition_variable idle_cv_;
  std::unique_ptr<Thread> accept_thread_;
  bool stopped_ = false;
};

}  // namespace compactor::serve

#endif  // COMPACTOR_SRC_SERVE_HTTP_SERVER_H_
