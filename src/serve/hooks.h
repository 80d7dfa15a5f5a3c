// The per-request pipeline's extension points (docs/serve.md, "Hooks").
//
// For every proxied request the server asks each registered ProxyHook for an
// ExchangeHook (null: the hook stays out of this request, at no cost). The
// exchange then runs, on the connection's worker thread:
//
//   attempt = 0
//   loop:
//     BeforeForward(ex)           (a) may replace the body, add response
//                                     headers, or answer by itself (Respond)
//     send upstream
//     AfterForward(ex)            (a') once, after the first send (or before
//                                     the proxy's own answer)
//     wait for the response head
//     OnResponseHead(ex, head)    (b) kRelay / kHold / kRetry
//     while held: each SSE event -> OnEvent (kContinue / kRelease / kRetry),
//                 a non-stream body once complete -> OnBody (kRelease / kRetry)
//     kRetry: the attempt is dropped (the client saw nothing), attempt += 1,
//             back to BeforeForward
//   relay the rest as it arrives (OnEvent still called for hooks that
//   want_events(), verdicts ignored: content already went out)
//   OnComplete(ex)                (c) the record is final
//
// A response is held while any hook holds it; the first kRetry from any hook
// wins. At most ExchangeLimits::max_attempts attempts are made; past that a
// retry verdict releases instead. A held response larger than
// ExchangeLimits::max_held_bytes is released. Hooks run on the worker thread
// of their request only: no locking is needed for per-request state.
#ifndef COMPACTOR_SRC_SERVE_HOOKS_H_
#define COMPACTOR_SRC_SERVE_HOOKS_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "compactor/client_request.h"
#include "compactor/provider_api.h"
#include "compactor/status.h"
#include "serve/http_util.h"
#include "serve/metrics.h"
#include "serve/request_log.h"

namespace compactor::serve {

// The client's request as received.
struct ProxyRequest {
  std::string method;
  // The request target exactly as sent: path and query ("/v1/messages?beta=true").
  std::string target;
  std::string path;   // the target's path (before '?'), not decoded
  std::string query;  // after '?' (empty when none)
  Route route;
  // End-to-end header fields as received (hop-by-hop fields, Host and
  // Content-Length removed: the proxy writes its own).
  HeaderList headers;
  // The body as received (still encoded when content_encoding is set).
  std::string body;
  // The request's Content-Encoding ("" = identity).
  std::string content_encoding;
  std::string client_address;  // "IP:PORT"
};

// The upstream's response head.
struct ResponseHead {
  int status = 0;
  // End-to-end fields (hop-by-hop and framing fields removed).
  HeaderList headers;
  // Content-Type is text/event-stream: the body is parsed into events.
  bool event_stream = false;
};

struct SseEvent {
  std::string_view name;  // the "event:" field (may be empty)
  std::string_view data;  // "data:" lines joined with "\n"
};

// The client's request as its API reads it: parsed once per exchange
// (Exchange::client_request) and shared by every hook, so that the
// compaction hook and the recorder see the same items and name the
// conversation the same way.
struct ClientRequestView {
  const ProviderApi* api = nullptr;  // the route's API (never null in a view)
  ClientRequest request;             // read from the decoded body
  // The conversation's one identity (ConversationId, serve/compact_plan.h):
  // the compaction hook's key and the recorder's key in the store's
  // conversation index.
  std::string conversation_id;
  // No tools: a title, a quota check (IsAuxiliaryRequest). Neither compacted
  // nor recorded.
  bool auxiliary = false;
};

// What the proxy did to the request the client's answer came from: items
// [0, cut_item) of the client's request were replaced by `summary`.
struct ExchangeCompaction {
  size_t cut_item = 0;
  std::string summary;
  int64_t tokens_before = 0;  // pi's estimate of the client's request
  int64_t tokens_after = 0;   // of what was forwarded
  bool reused = false;        // the cached summary, as is
};

enum class HeadVerdict { kRelay, kHold, kRetry };
enum class EventVerdict { kContinue, kRelease, kRetry };
enum class BodyVerdict { kRelease, kRetry };

// The exchange as hooks see it; implemented by the proxy.
class Exchange {
 public:
  virtual ~Exchange() = default;

  virtual const ProxyRequest& request() const = 0;
  // The request body with its Content-Encoding undone (gzip, deflate, br,
  // zstd), decoded once and cached. Errors as DecodeContent
  // (serve/content_encoding.h); the decoded size is limited like the body.
  virtual Result<std::string_view> DecodedBody() = 0;

  // The decoded body read by the route's API (ProviderApi::ReadClientRequest)
  // for a POST to a path of a known API, parsed on the first call and cached
  // for the exchange; null when there is no such API or the body does not
  // read as its request. Shared: a hook may keep it past the exchange (the
  // recorder converts it on its writer thread).
  virtual std::shared_ptr<const ClientRequestView> client_request() = 0;
  // Whether client_request() was asked already (its answer is then free).
  virtual bool client_request_read() const { return false; }
  // Whether the decoded body's top-level members declare tools
  // (DeclaresTools, serve/compact_plan.h), scanned once per exchange for
  // every hook that asks; false when the body does not decode.
  virtual bool declares_tools() = 0;
  // The conversation's id when the client names it in its headers or the
  // body's top-level members (NamedConversationId, serve/compact_plan.h):
  // the view's conversation_id, known without reading the request. Worked
  // out once per exchange; nullopt when only client_request() can tell.
  virtual const std::optional<std::string>& named_conversation() = 0;

  // What the compaction hook replaced in the forwarded body (the latest
  // attempt's compaction wins; nullopt: sent as the client sent it). Read by
  // the recorder once the exchange completes.
  virtual void set_compaction(std::optional<ExchangeCompaction> compaction) = 0;
  virtual const std::optional<ExchangeCompaction>& compaction() const = 0;

  // (a) Replaces the body forwarded from now on (this attempt and the next).
  // It is sent without Content-Encoding (the field is dropped) and with its
  // own Content-Length.
  virtual void ReplaceBody(std::string body) = 0;
  // The body the next attempt sends: the client's, or the replacement.
  virtual const std::string& forwarded_body() const = 0;
  // Adds a header field to the client's response (e.g. x-compactor-session).
  virtual void AddResponseHeader(std::string name, std::string value) = 0;
  // Answers the client without (another) upstream attempt: from
  // BeforeForward, the upstream is not called. `headers` are sent as given
  // (plus the ones added above); Content-Length is the proxy's.
  virtual void Respond(int status, HeaderList headers, std::string body) = 0;

  // 0 for the first upstream attempt, 1 for the first retry, ...
  virtual int attempt() const = 0;
  // The log record (serve/request_log.h): hooks fill tokens and compaction.
  virtual RequestRecord& record() = 0;
  virtual Metrics& metrics() = 0;
  // Whether the client has gone away (the exchange ends soon). Checked on the
  // client's socket at each call, so a hook waiting before an attempt (for a
  // summary) notices a disconnect too.
  virtual bool client_gone() const = 0;
};

// One request's hook. Every method has the pass-through default.
class ExchangeHook {
 public:
  virtual ~ExchangeHook() = default;

  // (a) Before each attempt is sent (attempt 0 and every retry).
  virtual void BeforeForward(Exchange& /*ex*/) {}
  // (a') Once per exchange, when the first attempt's request has gone
  // upstream (the upstream works on it meanwhile), and in any case before
  // the proxy answers (an upstream that cannot be reached, a client gone):
  // work that must precede the answer but not the forwarding, such as
  // reading a request that BeforeForward proved needs no change.
  virtual void AfterForward(Exchange& /*ex*/) {}

  // (b) The response head of an attempt. kHold keeps the head and the body
  // from the client (events go to OnEvent, a non-stream body to OnBody once
  // complete); kRetry drops the attempt.
  virtual HeadVerdict OnResponseHead(Exchange& /*ex*/, const ResponseHead& /*head*/) {
    return HeadVerdict::kRelay;
  }
  // Each event of an event-stream response while it is held, and also after
  // it is released when wants_events().
  virtual EventVerdict OnEvent(Exchange& /*ex*/, const SseEvent& /*event*/) {
    return EventVerdict::kRelease;
  }
  // A held non-stream response, complete.
  virtual BodyVerdict OnBody(Exchange& /*ex*/, std::string_view /*body*/) {
    return BodyVerdict::kRelease;
  }
  // Whether OnEvent should also see the events relayed after release
  // (usage, stop reasons); parsing costs a little on the pass-through path.
  virtual bool wants_events() const { return false; }
  // Each piece of the answer's body as it goes to the client (after it was
  // written; an answer complete before the proxy committed to it, just
  // before httplib writes it), in order, every byte once, for a hook whose
  // wants_relayed(): reading what the answer says without holding it or
  // having the proxy split a stream into events.
  virtual void OnRelayed(Exchange& /*ex*/, std::string_view /*bytes*/) {}
  virtual bool wants_relayed() const { return false; }

  // (c) The response is complete, failed or abandoned; the record is final
  // but for the duration. Runs after the last byte was written.
  virtual void OnComplete(Exchange& /*ex*/) {}
};

class ProxyHook {
 public:
  virtual ~ProxyHook() = default;
  // This request's hook, or null to stay out of it. Called once the request
  // (head and body) has been read, before the first attempt.
  virtual std::unique_ptr<ExchangeHook> Begin(Exchange& ex) = 0;
};

// Limits of the pipeline.
struct ExchangeLimits {
  int max_attempts = 3;              // the first try and two retries
  size_t max_held_bytes = 8u << 20;  // a larger held response is released
};

}  // namespace compactor::serve

#endif  // COMPACTOR_SRC_SERVE_HOOKS_H_
