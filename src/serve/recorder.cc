#include "serve/recorder.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <utility>

#include "compactor/js_json.h"
#include "compactor/writer.h"
#include "serve/http_util.h"
#include "serve/usage_hook.h"

namespace compactor::serve {

// What the recorder knows of a conversation's session: the active path as
// written, so the next record needs no reading.
struct ConversationRecorder::State {
  struct PathEntry {
    std::string id;
    EntryType type = EntryType::kUnknown;
    std::string message;              // kMessage: its JSON
    std::string model;                // kModelChange
    std::string summary, first_kept;  // kCompaction
  };
  std::string session_id;
  bool created = false;
  size_t entries = 0;  // the session's entry count as last read or written
  std::vector<PathEntry> path;
  std::set<std::string> ids;  // every entry id of the session

  size_t MessageCount() const {
    return static_cast<size_t>(std::count_if(path.begin(), path.end(), [](const PathEntry& e) {
      return e.type == EntryType::kMessage;
    }));
  }
  const PathEntry* Last(EntryType type) const {
    for (auto it = path.rbegin(); it != path.rend(); ++it)
      if (it->type == type) return &*it;
    return nullptr;
  }
  // Cuts the path right after its `k`-th message (k = 0: before everything).
  void KeepMessages(size_t k) {
    size_t seen = 0, end = 0;
    for (size_t i = 0; i < path.size() && seen < k; ++i) {
      if (path[i].type == EntryType::kMessage) ++seen;
      end = i + 1;
    }
    path.resize(k == 0 ? 0 : end);
  }
};

ConversationRecord RecordOfRequest(const ProviderApi& api, const ClientRequest& request,
                                   std::string conversation_id) {
  ConversationRecord r;
  r.conversation_id = std::move(conversation_id);
  r.api = std::string(api.name());
  r.provider = std::string(api.default_provider());
  r.model = request.model;
  r.item_first_message.reserve(request.items.size());
  for (size_t i = 0; i < request.items.size(); ++i) {
    r.item_first_message.push_back(r.messages.size());
    for (std::string& m : api.ClientItemMessages(request, i)) r.messages.push_back(std::move(m));
  }
  return r;
}

void SetRecordedCompaction(ConversationRecord* record, size_t cut_item, std::string summary,
                           double tokens_before, int64_t tokens_after) {
  RecordedCompaction c;
  c.summary = std::move(summary);
  c.tokens_before = tokens_before;
  c.tokens_after = tokens_after;
  c.first_kept_message = cut_item < record->item_first_message.size()
                             ? record->item_first_message[cut_item]
                             : record->messages.size();
  record->compaction = std::move(c);
}

ConversationRecorder::ConversationRecorder(RecorderOptions options)
    : o_(std::move(options)), env_(EnvOrDefault(o_.env)) {
  auto t = env_->StartThread([this] { Run(); });
  if (t.ok()) thread_ = std::move(t).value();  // else Record writes on the caller's thread
}

ConversationRecorder::~ConversationRecorder() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_) thread_->Join();
}

uint64_t ConversationRecorder::Reserve(const std::string& conversation_id) {
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t place = next_place_++;
  reserved_.emplace(place, conversation_id);
  return place;
}

void ConversationRecorder::Cancel(uint64_t place) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (reserved_.erase(place) == 0) return;
  }
  cv_.notify_all();  // a record may have waited for it
}

void ConversationRecorder::Record(ConversationRecord record, uint64_t place) {
  if (!thread_) {
    Cancel(place);
    std::lock_guard<std::mutex> lock(write_mu_);  // one writer at a time
    std::vector<ConversationRecord> batch;
    batch.push_back(std::move(record));
    WriteBatch(batch);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (place == 0 || reserved_.erase(place) == 0) place = next_place_++;
    queue_.push_back(Queued{place, std::move(record)});
    ++queued_;
  }
  cv_.notify_all();
}

bool ConversationRecorder::MayWriteLocked(const Queued& q) const {
  for (const auto& [place, conversation] : reserved_) {
    if (place >= q.place) break;
    if (conversation == q.record.conversation_id) return false;
  }
  return true;
}

bool ConversationRecorder::AnyWritableLocked() const {
  return std::any_of(queue_.begin(), queue_.end(),
                     [this](const Queued& q) { return MayWriteLocked(q); });
}

std::vector<ConversationRecord> ConversationRecorder::TakeLocked(bool all) {
  std::vector<Queued> taken;
  std::deque<Queued> waiting;
  for (Queued& q : queue_) {
    if (all || MayWriteLocked(q)) {
      taken.push_back(std::move(q));
    } else {
      waiting.push_back(std::move(q));
    }
  }
  queue_.swap(waiting);
  std::sort(taken.begin(), taken.end(),
            [](const Queued& a, const Queued& b) { return a.place < b.place; });
  std::vector<ConversationRecord> out;
  out.reserve(taken.size());
  for (Queued& q : taken) out.push_back(std::move(q.record));
  return out;
}

void ConversationRecorder::Flush() {
  std::unique_lock<std::mutex> lock(mu_);
  const uint64_t target = queued_;
  cv_.notify_all();
  cv_.wait(lock, [&] { return written_ >= target || !thread_; });
}

std::optional<std::string> ConversationRecorder::SessionOf(const std::string& conversation_id) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = sessions_.find(conversation_id);
    if (it != sessions_.end()) return it->second;
  }
  return o_.store->FindConversation(conversation_id);
}

std::string ConversationRecorder::SessionFor(const std::string& conversation_id) {
  if (std::optional<std::string> known = SessionOf(conversation_id)) return *known;
  std::lock_guard<std::mutex> lock(mu_);
  // emplace: a concurrent first request of the conversation may have won.
  return sessions_.emplace(conversation_id, NewUuidV7(env_)).first->second;
}

void ConversationRecorder::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stop_ || AnyWritableLocked(); });
    if (queue_.empty() && stop_) return;
    // Gather what arrives during the batch window (cut short by stop).
    bool stopping = stop_;
    lock.unlock();
    if (!stopping) {
      env_->SleepMs(o_.batch_ms, [this] {
        std::lock_guard<std::mutex> l(mu_);
        return stop_;
      });
    }
    lock.lock();
    // Stopping, every record is written (the exchanges still running will
    // not be recorded after the writer).
    std::vector<ConversationRecord> batch = TakeLocked(stop_);
    lock.unlock();
    const size_t n = batch.size();
    WriteBatch(batch);
    lock.lock();
    written_ += n;
    cv_.notify_all();
  }
}

void ConversationRecorder::Fail(const Status& s) {
  if (o_.on_error) o_.on_error(s);
}

Result<ConversationRecorder::State*> ConversationRecorder::StateOf(const ConversationRecord& r) {
  auto it = states_.find(r.conversation_id);
  if (it != states_.end()) return it->second.get();
  auto st = std::make_unique<State>();
  std::optional<std::string> sid = o_.store->FindConversation(r.conversation_id);
  if (sid) {
    auto s = o_.store->Load(*sid);
    if (!s.ok() && s.status().code() != StatusCode::kNotFound) return s.status();
    if (s.ok()) {
      const Session& session = **s;
      st->session_id = *sid;
      st->created = true;
      st->entries = session.size();
      for (const Entry& e : session.entries()) st->ids.insert(std::string(e.id));
      if (auto leaf = session.Leaf()) {
        for (size_t i : session.PathTo(*leaf)) {
          const Entry& e = session.entry(i);
          State::PathEntry p{std::string(e.id), e.type, "", "", "", ""};
          if (e.type == EntryType::kMessage) p.message = std::string(session.MessageJson(i));
          if (e.type == EntryType::kModelChange) p.model = std::string(e.model);
          if (e.type == EntryType::kCompaction) {
            p.summary = session.StringField(i, "summary").value_or("");
            p.first_kept = std::string(e.first_kept_entry_id);
          }
          st->path.push_back(std::move(p));
        }
      }
    }
  }
  if (!st->created) st->session_id = SessionFor(r.conversation_id);
  State* out = st.get();
  states_[r.conversation_id] = std::move(st);
  return out;
}

std::string ConversationRecorder::NewId(State& st) {
  for (;;) {
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016" PRIx64, env_->Random64());
    std::string id(hex, 8);
    if (st.ids.insert(id).second) return id;
  }
}

// The lines that bring the session from its recorded path to `r`.
Status ConversationRecorder::Prepare(State& st, const ConversationRecord& r,
                                     std::vector<std::string>* lines) {
  size_t k = 0;
  for (const State::PathEntry& e : st.path) {
    if (e.type != EntryType::kMessage) continue;
    if (k >= r.messages.size() || e.message != r.messages[k]) break;
    ++k;
  }
  const std::string old_leaf = st.path.empty() ? "" : st.path.back().id;
  const bool branched = k < st.MessageCount();
  // Everything it holds is recorded already: with other writers, a late
  // older record (see RecorderOptions::shared_store); its compaction, if
  // any, is older than the path's too.
  if (o_.shared_store && branched && k == r.messages.size()) return Status::Ok();
  if (branched) st.KeepMessages(k);
  const size_t before = lines->size();
  auto add = [&](EntryType type, const std::string& body, State::PathEntry p) {
    p.id = NewId(st);
    p.type = type;
    std::string line = "{\"type\":";
    AppendJsString(line, type == EntryType::kMessage         ? "message"
                         : type == EntryType::kModelChange   ? "model_change"
                         : type == EntryType::kCompaction    ? "compaction"
                         : type == EntryType::kBranchSummary ? "branch_summary"
                                                             : "custom");
    line += ",\"id\":";
    AppendJsString(line, p.id);
    line += ",\"parentId\":";
    if (st.path.empty()) {
      line += "null";
    } else {
      AppendJsString(line, st.path.back().id);
    }
    line += ",\"timestamp\":";
    AppendJsString(line, NowIsoTimestamp(env_));
    line += body + "}";
    lines->push_back(std::move(line));
    st.path.push_back(std::move(p));
  };
  const State::PathEntry* model = st.Last(EntryType::kModelChange);
  if (!r.model.empty() && (model == nullptr || model->model != r.model)) {
    std::string body = ",\"provider\":";
    AppendJsString(body, r.provider);
    body += ",\"modelId\":";
    AppendJsString(body, r.model);
    add(EntryType::kModelChange, body, {"", {}, "", r.model, "", ""});
  }
  for (size_t i = k; i < r.messages.size(); ++i)
    add(EntryType::kMessage, ",\"message\":" + r.messages[i], {"", {}, r.messages[i], "", "", ""});
  if (r.compaction && r.compaction->first_kept_message < r.messages.size()) {
    const RecordedCompaction& c = *r.compaction;
    size_t seen = 0;
    std::string kept_id;
    for (const State::PathEntry& e : st.path) {
      if (e.type != EntryType::kMessage) continue;
      if (seen++ == c.first_kept_message) kept_id = e.id;
    }
    const State::PathEntry* last = st.Last(EntryType::kCompaction);
    if (!kept_id.empty() &&
        (last == nullptr || last->summary != c.summary || last->first_kept != kept_id)) {
      std::string body = ",\"summary\":";
      AppendJsString(body, c.summary);
      body += ",\"firstKeptEntryId\":";
      AppendJsString(body, kept_id);
      body += ",\"tokensBefore\":";
      AppendJsNumber(body, c.tokens_before);
      body += ",\"details\":{\"source\":\"compactor-serve\",\"tokensAfter\":";
      AppendJsNumber(body, static_cast<double>(c.tokens_after));
      body += "}";
      add(EntryType::kCompaction, body, {"", {}, "", "", c.summary, kept_id});
    }
  }
  if (r.input_tokens || r.output_tokens) {
    std::string body = ",\"customType\":\"compactor.usage\",\"data\":{\"model\":";
    AppendJsString(body, r.model);
    body += ",\"inputTokens\":";
    body += r.input_tokens ? std::to_string(*r.input_tokens) : "null";
    body += ",\"outputTokens\":";
    body += r.output_tokens ? std::to_string(*r.output_tokens) : "null";
    body += "}";
    add(EntryType::kCustom, body, {});
  }
  if (branched && lines->size() == before) {
    // Nothing new, but the client went back: move the leaf (pi's /tree
    // records a move as a branch summary without summary).
    std::string body = ",\"fromId\":";
    AppendJsString(body, old_leaf);
    body += ",\"summary\":\"\"";
    add(EntryType::kBranchSummary, body, {});
  }
  return Status::Ok();
}

namespace {

// Converts a record the hook queued unconverted (its request still parsed
// only as the exchange's view).
void Convert(ConversationRecord* r) {
  if (!r->source) return;
  std::shared_ptr<const ClientRequestView> v = std::move(r->source);
  r->source.reset();
  ConversationRecord converted = RecordOfRequest(*v->api, v->request, v->conversation_id);
  converted.input_tokens = r->input_tokens;
  converted.output_tokens = r->output_tokens;
  if (const std::optional<ExchangeCompaction>& c = r->source_compaction) {
    SetRecordedCompaction(&converted, c->cut_item, c->summary,
                          static_cast<double>(c->tokens_before), c->tokens_after);
  }
  *r = std::move(converted);
}

}  // namespace

void ConversationRecorder::WriteBatch(std::vector<ConversationRecord>& batch) {
  // One append (one lock, one fsync) per session, in the order of the records.
  std::vector<std::string> order;
  std::map<std::string, std::vector<const ConversationRecord*>> by_conversation;
  for (ConversationRecord& r : batch) {
    Convert(&r);
    if (r.messages.empty()) continue;  // nothing a session could hold
    auto& records = by_conversation[r.conversation_id];
    if (records.empty()) order.push_back(r.conversation_id);
    records.push_back(&r);
  }
  for (const std::string& conversation : order)
    WriteConversation(conversation, by_conversation[conversation]);
}

// Writes the lines that bring the conversation's session up to `records`.
// A write refused because the session moved (another server appended, or
// created it first) reads the session again and recomputes: bounded.
void ConversationRecorder::WriteConversation(
    const std::string& conversation, const std::vector<const ConversationRecord*>& records) {
  constexpr int kAttempts = 8;
  Status s;
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    auto st = StateOf(*records.front());
    if (!st.ok()) return Fail(st.status());
    State& state = **st;
    std::vector<std::string> lines;
    for (const ConversationRecord* r : records) {
      Status p = Prepare(state, *r, &lines);
      if (!p.ok()) Fail(p);
    }
    s = Status::Ok();
    if (!state.created) {
      s = Create(conversation, state, lines);
    } else if (!lines.empty()) {
      StoreAppendOptions ao;
      ao.sync = true;
      if (o_.shared_store) ao.expected_entries = state.entries;
      s = o_.store->Append(state.session_id, lines, ao);
      if (s.ok()) state.entries += lines.size();
    }
    if (s.ok()) {
      std::lock_guard<std::mutex> lock(mu_);
      sessions_[conversation] = state.session_id;
      return;
    }
    states_.erase(conversation);  // read again from the store
    if (!o_.shared_store || s.code() != StatusCode::kFailedPrecondition) break;
  }
  Fail(s);
}

// The conversation's first write: its session is claimed in the index, then
// created. With other writers the claim may name another server's session
// (it won a race for the same conversation): kFailedPrecondition, and the
// caller continues in that one.
Status ConversationRecorder::Create(const std::string& conversation, State& state,
                                    const std::vector<std::string>& lines) {
  if (o_.shared_store) {
    COMPACTOR_ASSIGN_OR_RETURN(std::string owner,
                               o_.store->ClaimConversation(conversation, state.session_id));
    if (owner != state.session_id) {
      std::lock_guard<std::mutex> lock(mu_);
      sessions_[conversation] = owner;
      return Status::FailedPrecondition("conversation " + conversation + " is recorded in " +
                                        owner);
    }
  }
  auto id = o_.store->Create(state.session_id, "", lines);
  if (!id.ok()) return id.status();  // taken by another server meanwhile: kFailedPrecondition
  state.created = true;
  state.entries = lines.size();
  return o_.shared_store ? Status::Ok() : o_.store->SetConversation(conversation, state.session_id);
}

// --- the hook -------------------------------------------------------------------

class RecordingExchange : public ExchangeHook {
 public:
  explicit RecordingExchange(ConversationRecorder* recorder) : recorder_(recorder) {}
  ~RecordingExchange() override { recorder_->Cancel(place_); }

  // Before the client can see the answer: the record's place among its
  // conversation's records (ConversationRecorder::Reserve), by the id the
  // client names it by when it does (the request is then read after the
  // answer, in OnComplete).
  void AfterForward(Exchange& ex) override {
    if (const std::optional<std::string>& named = ex.named_conversation()) {
      place_ = recorder_->Reserve(*named);
      return;
    }
    std::shared_ptr<const ClientRequestView> view = ex.client_request();
    if (view != nullptr && !view->auxiliary) place_ = recorder_->Reserve(view->conversation_id);
  }

  void OnComplete(Exchange& ex) override {
    const RequestRecord& rec = ex.record();
    // The proxy failed the exchange (no answer from the upstream, or the
    // client left before one): what the upstream saw is unknown.
    if (rec.status < 200 || !rec.error.empty()) return recorder_->Cancel(std::exchange(place_, 0));
    std::shared_ptr<const ClientRequestView> view = ex.client_request();
    if (view == nullptr || view->auxiliary) return recorder_->Cancel(std::exchange(place_, 0));
    ConversationRecord r;
    r.conversation_id = view->conversation_id;
    r.input_tokens = rec.tokens_in;
    r.output_tokens = rec.tokens_out;
    r.source = std::move(view);
    r.source_compaction = ex.compaction();
    if (auto sid = recorder_->SessionOf(r.conversation_id)) ex.record().session = *sid;
    recorder_->Record(std::move(r), std::exchange(place_, 0));
  }

 private:
  ConversationRecorder* recorder_;
  uint64_t place_ = 0;  // 0: none, or released
};

std::unique_ptr<ExchangeHook> RecordingHook::Begin(Exchange& ex) {
  // Auxiliary requests (no tools) are not recorded. When the request was
  // not read yet, its view, parsed once for every hook, is taken at the end.
  if (!IsConversationRequest(ex)) return nullptr;
  return std::make_unique<RecordingExchange>(recorder_);
}

}  // namespace compactor::serve
