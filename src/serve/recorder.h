// Recording proxied conversations as pi sessions in the store (docs/api.md,
// "Recorded conversations"). A ConversationRecord says what one model
// request sent: the client's conversation as pi messages, the model, the
// usage, and the proxy's compaction when it replaced a prefix by a summary.
// The recorder turns the records of a conversation into one session:
//
// - a new conversation becomes a new session (its id is remembered in the
//   store's conversation index, so later requests find it after a restart);
// - a later request appends the messages that are new since the last one;
// - when the client's history diverges from the recorded one (it edited or
//   compacted its own history), the session branches at the common prefix:
//   the new messages are appended under the last shared one;
// - a proxy compaction becomes a compaction entry whose firstKeptEntryId is
//   the first message the proxy kept, so that the session's context is what
//   the proxy sent upstream (summary + kept messages); the same compaction
//   is not written twice.
//
// Writing happens off the request path: Record() queues and returns; one
// background thread writes batches, each session's lines in one locked
// append with an fsync. A record is durable within `batch_ms` (default 200 ms)
// plus the write; a crash loses at most what was queued, never corrupts a
// session (appends are whole lines; new sessions are atomic files).
//
// Thread safety: Record, Flush and SessionOf may be called from any thread.
#ifndef COMPACTOR_SRC_SERVE_RECORDER_H_
#define COMPACTOR_SRC_SERVE_RECORDER_H_

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "compactor/client_request.h"
#include "compactor/env.h"
#include "compactor/provider_api.h"
#include "compactor/store.h"
#include "serve/hooks.h"

namespace compactor::serve {

// A prefix of the conversation the proxy replaced by a summary.
struct RecordedCompaction {
  std::string summary;
  double tokens_before = 0;  // pi's estimate of the client's request
  int64_t tokens_after = 0;  // of what was forwarded
  // The first message kept verbatim (an index into ConversationRecord::messages):
  // messages [0, first_kept_message) were summarized.
  size_t first_kept_message = 0;
};

struct ConversationRecord {
  // The conversation's identity (ConversationId, serve/compact_plan.h).
  std::string conversation_id;
  std::string api;       // the registered API name ("anthropic", ...)
  std::string provider;  // pi's provider for model_change entries
  std::string model;
  // The client's conversation as pi message objects (JSON text each), in
  // order: ProviderApi::ClientItemMessages of every item.
  std::vector<std::string> messages;
  // For each item of the client's request, the index of its first message
  // in `messages` (items without a pi equivalent give none: the next index).
  std::vector<size_t> item_first_message;
  std::optional<int64_t> input_tokens, output_tokens;  // the upstream's usage
  std::optional<RecordedCompaction> compaction;
  // Set instead of the fields above by the recording hook: the exchange's
  // parsed request and compaction, converted (RecordOfRequest,
  // SetRecordedCompaction) by the writer thread, off the request path.
  std::shared_ptr<const ClientRequestView> source;
  std::optional<ExchangeCompaction> source_compaction;
};

// The record of `request` (read by `api`): messages, model, the item map.
ConversationRecord RecordOfRequest(const ProviderApi& api, const ClientRequest& request,
                                   std::string conversation_id);

// Sets `record->compaction` for a rewrite that replaced items [0, cut_item).
void SetRecordedCompaction(ConversationRecord* record, size_t cut_item, std::string summary,
                           double tokens_before, int64_t tokens_after);

struct RecorderOptions {
  SessionStore* store = nullptr;  // REQUIRES: not null; outlives the recorder
  // How long the writer gathers records before it writes them.
  int64_t batch_ms = 200;
  // Called (on the writer thread) for every failed write; the conversation's
  // state is then read again from the store before its next record.
  std::function<void(const Status&)> on_error;
  // Other servers record into the same store (a database store): every
  // write checks that the session is still what this recorder last saw
  // (expected_entries), and when it moved reads it again and recomputes; a
  // record whose messages are all on the recorded path already is an older
  // one that arrived late (another server wrote a newer one first), not a
  // move back, and writes nothing. Off: this recorder is the only writer.
  bool shared_store = false;
  Env* env = nullptr;  // null = Env::Default()
};

class ConversationRecorder {
 public:
  explicit ConversationRecorder(RecorderOptions options);
  // Writes what is queued, then stops the writer.
  ~ConversationRecorder();
  ConversationRecorder(const ConversationRecorder&) = delete;
  ConversationRecorder& operator=(const ConversationRecorder&) = delete;

  // Takes a place for a record of `conversation_id` in the order of the
  // exchanges. The recording hook takes it in AfterForward, before the
  // client can have the answer and send its next request; the records of
  // one conversation are then written in the order of their places,
  // whatever order their exchanges complete in (a worker may lose the CPU
  // between writing an answer and queuing its record, while the client's
  // next request runs through). A record waits for the earlier places of
  // its conversation; each place ends with Record(record, place) or
  // Cancel(place).
  uint64_t Reserve(const std::string& conversation_id);
  void Cancel(uint64_t place);
  // Queues `record` (in `place`, else after everything queued or reserved
  // so far); never waits for I/O.
  void Record(ConversationRecord record, uint64_t place = 0);
  // Waits until everything queued before the call is written (tests,
  // shutdown); a record waiting for an earlier place of its conversation is
  // waited for too, until that place is recorded or cancelled.
  void Flush();
  // The session recording `conversation_id`, when known (assigned at its
  // first request by SessionFor, else at its first record).
  std::optional<std::string> SessionOf(const std::string& conversation_id);
  // The session recording `conversation_id`: the known one, else a new id
  // (a UUIDv7) that its first record creates. Never waits for I/O but the
  // store's index lookup.
  std::string SessionFor(const std::string& conversation_id);

 private:
  struct State;
  struct Queued {
    uint64_t place = 0;
    ConversationRecord record;
  };
  // Whether a queued record may be written: no earlier place of its
  // conversation is still reserved (mu_ held).
  bool MayWriteLocked(const Queued& q) const;
  bool AnyWritableLocked() const;
  // The writable records (every one when `all`), in the order of their places.
  std::vector<ConversationRecord> TakeLocked(bool all);
  void Run();
  void WriteBatch(std::vector<ConversationRecord>& batch);
  void WriteConversation(const std::string& conversation,
                         const std::vector<const ConversationRecord*>& records);
  Status Create(const std::string& conversation, State& state,
                const std::vector<std::string>& lines);
  Status Prepare(State& st, const ConversationRecord& r, std::vector<std::string>* lines);
  Result<State*> StateOf(const ConversationRecord& r);
  std::string NewId(State& st);
  void Fail(const Status& s);

  RecorderOptions o_;
  Env* env_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Queued> queue_;                     // guarded by mu_
  uint64_t queued_ = 0, written_ = 0;            // guarded by mu_
  uint64_t next_place_ = 1;                      // guarded by mu_
  std::map<uint64_t, std::string> reserved_;     // place -> conversation; guarded by mu_
  bool stop_ = false;                            // guarded by mu_
  std::map<std::string, std::string> sessions_;  // conversation -> session; guarded by mu_
  // The writer's state: used by the writer thread, or (without one) under write_mu_.
  std::mutex write_mu_;
  std::map<std::string, std::unique_ptr<State>> states_;
  std::unique_ptr<Thread> thread_;
};

// The ProxyHook that records every proxied model request (POST to the
// Messages, Responses and Chat Completions endpoints) once it is complete:
// the exchange's parsed request (Exchange::client_request) under its
// conversation id, with the compaction the compaction hook set on the
// exchange (Exchange::compaction), so that the recorded session's context is
// what went upstream. Recorded whenever the upstream answered, whatever the
// status: the client's messages were sent (an error answer adds no
// assistant reply, as none came). Not recorded: auxiliary requests (no
// tools: titles, quota checks), which are not sessions of their own, and
// exchanges the proxy failed (the upstream unreachable, timed out, or
// breaking off; the client gone before the answer).
class RecordingHook : public ProxyHook {
 public:
  explicit RecordingHook(ConversationRecorder* recorder) : recorder_(recorder) {}
  std::unique_ptr<ExchangeHook> Begin(Exchange& ex) override;

 private:
  ConversationRecorder* recorder_;
};

}  // namespace compactor::serve

#endif  // COMPACTOR_SRC_SERVE_RECORDER_H_
