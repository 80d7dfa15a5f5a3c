#include "compactor/session.h"

#include <simdjson.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <unordered_map>
#include <unordered_set>

#include "compactor/js_json.h"
#include "session/message_observer.h"
#include "util/file.h"
#include "util/json_scan.h"
#include "util/kernel.h"
#include "util/simdjson_alloc.h"
#include "util/utf8.h"

namespace compactor {

namespace {

EntryType EntryTypeFromName(std::string_view n) {
  if (n == "message") return EntryType::kMessage;
  if (n == "thinking_level_change") return EntryType::kThinkingLevelChange;
  if (n == "model_change") return EntryType::kModelChange;
  if (n == "compaction") return EntryType::kCompaction;
  if (n == "branch_summary") return EntryType::kBranchSummary;
  if (n == "custom") return EntryType::kCustom;
  if (n == "custom_message") return EntryType::kCustomMessage;
  if (n == "label") return EntryType::kLabel;
  if (n == "session_info") return EntryType::kSessionInfo;
  return EntryType::kUnknown;
}

// Files above this size give mapped pages back while they are scanned, so
// resident memory does not grow with the file (the bytes stay readable).
constexpr size_t kReleaseThreshold = 32u << 20;
constexpr size_t kReleaseChunk = 8u << 20;
// The least capacity a loader's parser starts with. A line truncated by
// another process between the parser's two passes can make one string scan
// run up to a page past the line (posix_env.cc, "Truncation while mapped");
// the parser's string buffer (5/3 of its capacity) then still holds it.
constexpr size_t kMinParserCapacity = 64u << 10;
// Files from this size are indexed by two threads (LoadOptions::threads).
constexpr size_t kParallelThreshold = 16u << 20;
// How many bytes before the read offset Refresh compares with what it read
// before, to tell an append from a file rewritten in place.
constexpr size_t kTailCheckBytes = 64;

std::string_view TrimRight(std::string_view s) {
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n'))
    s.remove_suffix(1);
  return s;
}

bool IsBlank(std::string_view s) {
  for (char c : s)
    if (c != ' ' && c != '\t' && c != '\r' && c != '\n') return false;
  return true;
}

}  // namespace

std::string LoadWarning::ToString() const {
  return file + ":" + std::to_string(line) + ": " + message;
}

// The session's state, at namespace scope (Session::Impl is private) so that
// the CPU kernels' copies of ParseChunk can be handed it (util/kernel.h).
struct SessionState {
  std::string path;
  internal::FileBytes file;
  std::string owned;  // FromString contents (followed by padding)
  const char* data = nullptr;
  size_t size = 0;

  SessionHeader header;
  std::string_view header_raw;
  std::vector<Entry> entries;
  struct Span {
    std::string_view line;              // the entry's JSON text (sanitized when needed)
    uint32_t msg_off = 0, msg_len = 0;  // "message" value inside `line`
    // Measured messages: their file tool calls (tool letter, 4-byte length,
    // path; repeated), when the index pass could read them exactly.
    std::string_view file_calls;
    bool file_calls_known = false;
  };
  std::vector<Span> spans;
  // The entries' strings, packed: ids and parent ids are hashed and compared
  // on every walk, and the file's pages are handed back while it is read
  // (kReleaseThreshold), so views into the file would fault them back in.
  struct Arena {
    std::vector<std::unique_ptr<char[]>> blocks;
    char* next = nullptr;
    size_t left = 0;
    std::string_view Add(std::string_view s) {
      if (s.empty()) return {};
      if (s.size() > left) {
        const size_t n = std::max<size_t>(s.size(), 256u << 10);
        blocks.push_back(std::make_unique_for_overwrite<char[]>(n));
        next = blocks.back().get();
        left = n;
      }
      std::memcpy(next, s.data(), s.size());
      std::string_view out(next, s.size());
      next += s.size();
      left -= s.size();
      return out;
    }
  };
  // Text the entries point into, one per thread that parsed lines.
  struct Storage {
    Arena strings;
    // Sanitized lines, copies of the last lines, migrated messages. A deque:
    // what it holds never moves.
    std::deque<std::string> side;
    std::string_view Keep(std::string_view text) { return strings.Add(text); }
  };
  std::vector<std::unique_ptr<Storage>> storage;
  std::unordered_map<size_t, std::string_view> migrated_messages;
  // Entry index by id: open addressing over the entries' own id views (one
  // array, no node per entry); with duplicates the later entry wins.
  class IdIndex {
   public:
    static constexpr size_t kNone = SIZE_MAX;
    void Build(const std::vector<Entry>& entries) {
      entries_ = &entries;
      size_t cap = 16;
      while (cap < entries.size() * 2) cap <<= 1;
      slots_.assign(cap, kEmpty);
      mask_ = cap - 1;
    }
    // Makes room for `total` entries; the first `indexed` are inserted again
    // (in file order, so a later duplicate still wins) when the table grows.
    void Reserve(size_t total, size_t indexed) {
      if (total * 2 <= slots_.size()) return;
      size_t cap = slots_.size() < 16 ? 16 : slots_.size();
      while (cap < total * 2) cap <<= 1;
      slots_.assign(cap, kEmpty);
      mask_ = cap - 1;
      for (size_t i = 0; i < indexed; ++i)
        if (!(*entries_)[i].id.empty()) Insert(i);
    }
    // Index of the entry with this id, or kNone.
    size_t Find(std::string_view id) const {
      if (slots_.empty()) return kNone;
      for (size_t s = Hash(id) & mask_;; s = (s + 1) & mask_) {
        uint32_t v = slots_[s];
        if (v == kEmpty) return kNone;
        if ((*entries_)[v].id == id) return v;
      }
    }
    // Maps entry `i`'s id to it; returns the index it replaced, or kNone.
    size_t Insert(size_t i) {
      std::string_view id = (*entries_)[i].id;
      for (size_t s = Hash(id) & mask_;; s = (s + 1) & mask_) {
        uint32_t v = slots_[s];
        if (v == kEmpty) {
          slots_[s] = static_cast<uint32_t>(i);
          return kNone;
        }
        if ((*entries_)[v].id == id) {
          slots_[s] = static_cast<uint32_t>(i);
          return v;
        }
      }
    }

   private:
    static constexpr uint32_t kEmpty = UINT32_MAX;
    static size_t Hash(std::string_view s) {
      uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a, then a final mix
      for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
      h ^= h >> 32;
      h *= 0xd6e8feb86659fd93ull;
      h ^= h >> 32;
      return static_cast<size_t>(h);
    }
    const std::vector<Entry>* entries_ = nullptr;
    std::vector<uint32_t> slots_;
    size_t mask_ = 0;
  } by_id;
  // Each entry's parent (kNone: a root, an unknown parent or itself), resolved
  // once so walks do not hash ids again.
  std::vector<size_t> parents;
  std::unordered_map<std::string, std::string> labels;
  std::optional<std::string> name;
  bool migrated = false;
  bool v1_ids = false;  // ids and parentIds were assigned by the v1 migration
  // Parent ids that named no entry: an entry appended later with such an id
  // would change how the earlier ones resolve (Refresh then reloads).
  std::unordered_set<std::string_view> unresolved_parents;
  std::vector<LoadWarning> warnings;
  LoadOptions options;

  // What has been read of the file (Refresh): the bytes [0, consumed) hold
  // `consumed_lines` lines and are indexed; a torn last line after them is
  // read again once it is complete. `seen` is the file's identity at the last
  // read, `tail_check` the last bytes before `consumed` (a file rewritten in
  // place shows other bytes there).
  size_t consumed = 0;
  uint32_t consumed_lines = 0;
  FileIdentity seen;
  std::string tail_check;
  // Bytes appended since the file was mapped, each followed by simdjson's
  // padding; entries point into them. A deque: they never move.
  std::deque<std::string> appended;
  uint64_t generation = 0;

  void KeepTailCheck(std::string_view before_consumed) {
    tail_check.assign(before_consumed.substr(before_consumed.size() -
                                             std::min(before_consumed.size(), kTailCheckBytes)));
  }
  // Reads the bytes appended since the last read and indexes their entries.
  // Sets *reload instead when only a full reload gives the right index (the
  // file was replaced, truncated or rewritten; a migrated file; a new entry
  // whose id an earlier entry named or that repeats an earlier id).
  Result<size_t> Extend(bool* reload);
  // Whether entries read after the others would change how earlier ones
  // resolve: an id seen before (the later entry wins in pi's map) or an id an
  // earlier parentId named. A full reload then gives the right index.
  bool ChangesEarlier(const std::vector<Entry>& fresh) const;
  // Indexes entries [from, size()): ids, parents, labels, name.
  void IndexNew(size_t from);
  // Labels and the session name after entry `e` (file order).
  void ApplyState(const Entry& e);
  // Chosen once per Load: the CPU kernel whose copy of ParseChunk runs, and
  // options.message_observer compiled for that kernel (ForKernel).
  const internal::KernelTable* kernel = nullptr;
  const MessageObserver* observer = nullptr;

  // A string value (unescaped) kept in `st`. False, leaving `out` alone, for a
  // non-string.
  static bool View(Storage& st, simdjson::ondemand::value v, std::string_view* out);

  void Warn(uint32_t line, std::string message) {
    LoadWarning w{path, line, std::move(message)};
    if (options.on_warning) options.on_warning(w);
    warnings.push_back(std::move(w));
  }

  Status Load();
  // Parses one line into `e`; returns false with `error` set when the line is not
  // a usable JSON object.
  struct HeaderFields {
    double version = -1;
    std::optional<double> numeric_timestamp;
    std::string cwd, parent_session;
  };
  bool ParseLine(std::string_view line, bool padded_ok, Entry* e, Span* span, HeaderFields* hf,
                 bool* is_header, std::string* error, simdjson::ondemand::parser& parser,
                 Storage& st);
  // One line being read: where it is, what it fills in, where an error goes.
  struct LineWalk {
    simdjson::padded_string_view view;
    std::string_view line;
    Entry* e;
    Span* span;
    HeaderFields* hf;
    std::string* error;
    Storage& st;
    double first_kept_index = -1;  // v1 compactions' "firstKeptEntryIndex"
  };
  // One walk over the parsed line. With `measure_inline` the message is
  // measured in the same walk; when that gives up, `gave_up` is set and the
  // walk must be redone without it.
  bool WalkEntry(LineWalk& w, bool measure_inline, bool* gave_up, bool* is_header,
                 simdjson::ondemand::parser& parser);
  // A top-level member other than "type" and "message".
  static void ReadField(LineWalk& w, std::string_view key, simdjson::ondemand::value v);
  // The "message" member: its fields, and its measure when `measure_inline`.
  bool ReadMessage(LineWalk& w, simdjson::ondemand::document& doc, simdjson::ondemand::value v,
                   bool measure_inline, bool* gave_up);
  // A member of the message that the index keeps besides its estimate.
  static void ReadMessageMember(LineWalk& w, std::string_view key, simdjson::ondemand::value v);
  // Measures the message found by a walk without `measure_inline`, in a
  // second walk over the same structural index.
  void MeasureAgain(LineWalk& w, simdjson::ondemand::document& doc);
  // Stores a message's measure: its estimate, tool-call count and file calls.
  static void KeepMeasure(const internal::MessageMeasure& m, Entry* e, Span* span, Storage& st);
  // A range of whole lines indexed by one thread. Warnings and the first
  // fatal error are kept with line numbers relative to the range and reported
  // in file order once every range is done.
  struct Chunk {
    // The bytes the range lies in: the whole file, or bytes appended to it
    // since it was read (Refresh). `padded`: readable SIMDJSON_PADDING bytes
    // past `size`, so no line needs a padded copy.
    const char* data = nullptr;
    size_t size = 0;
    bool padded = false;
    bool release = false;     // give the mapped pages back while scanning
    bool quiet_torn = false;  // a torn last line is no warning (read again later)
    size_t begin = 0, end = 0;
    bool first = false;  // starts the file: holds the header
    // Offset of a torn last line that was skipped (not yet complete), if any.
    size_t torn_at = SIZE_MAX;
    Storage* storage = nullptr;
    std::vector<Entry> entries;
    std::vector<Span> spans;
    std::vector<std::pair<uint32_t, std::string>> warnings;
    uint32_t lines = 0;
    bool have_header = false;
    bool failed = false;
    bool out_of_memory = false;  // failed for want of memory, not for the input
    uint32_t fail_line = 0;      // 0: the message names no line
    std::string fail_message;
    HeaderFields header_fields;
    Entry header_entry;
    uint32_t header_line = 0;
    std::string_view header_raw;
  };
  void ParseChunk(Chunk& c);
  void Migrate();
  void Index();
};

struct Session::Impl : SessionState {};

namespace {

bool GetString(simdjson::ondemand::value v, std::string* out) {
  std::string_view sv;
  if (v.get_string().get(sv)) return false;
  out->assign(sv);
  return true;
}

}  // namespace

void SessionState::KeepMeasure(const internal::MessageMeasure& m, Entry* e, Span* span,
                               Storage& st) {
  e->estimate = m.tokens;
  e->tool_call_blocks = static_cast<int32_t>(std::min<int64_t>(m.tool_call_blocks, INT32_MAX));
  span->file_calls_known = m.file_calls_known;
  span->file_calls = {};
  if (!m.file_calls_known || m.file_calls.empty()) return;
  thread_local std::string packed;
  packed.clear();
  for (const internal::FileCall& call : m.file_calls) {
    const auto len = static_cast<uint32_t>(call.path.size());
    packed += call.tool;
    packed.append(reinterpret_cast<const char*>(&len), sizeof len);
    packed += call.path;
  }
  span->file_calls = st.Keep(packed);
}

bool SessionState::View(Storage& st, simdjson::ondemand::value v, std::string_view* out) {
  std::string_view unescaped;
  if (v.get_string().get(unescaped)) return false;
  *out = st.Keep(unescaped);
  return true;
}

namespace {

// JavaScript truthiness of a value (what `if (entry.summary)` sees).
bool JsTruthy(simdjson::ondemand::value v) {
  simdjson::ondemand::json_type t;
  if (v.type().get(t)) return false;
  switch (t) {
    case simdjson::ondemand::json_type::string: {
      std::string_view s;
      return !v.get_string().get(s) && !s.empty();
    }
    case simdjson::ondemand::json_type::number: {
      double d = 0;
      return !v.get_double().get(d) && d != 0 && !std::isnan(d);
    }
    case simdjson::ondemand::json_type::boolean: {
      bool b = false;
      return !v.get_bool().get(b) && b;
    }
    case simdjson::ondemand::json_type::null:
      return false;
    default:
      return true;  // objects and arrays
  }
}

bool GetNumber(simdjson::ondemand::value v, double* out) {
  simdjson::ondemand::number_type t;
  if (v.get_number_type().get(t)) return false;
  return !v.get_double().get(*out);
}

}  // namespace

bool SessionState::ParseLine(std::string_view line, bool padded_ok, Entry* e, Span* span,
                             HeaderFields* hf, bool* is_header, std::string* error,
                             simdjson::ondemand::parser& parser, Storage& st) {
  simdjson::padded_string_view view;
  if (padded_ok) {
    view = simdjson::padded_string_view(line.data(), line.size(),
                                        line.size() + simdjson::SIMDJSON_PADDING);
  } else {
    // Too close to the end of the buffer to read past it: parse a padded copy,
    // which the entry's views then point into.
    std::string& copy = st.side.emplace_back(line);
    copy.reserve(copy.size() + simdjson::SIMDJSON_PADDING);
    line = copy;
    view = simdjson::padded_string_view(copy.data(), copy.size(), copy.capacity());
  }
  // Measuring inside the one walk over the entry gives up on the few messages
  // that need the tolerant estimate; the entry is then read again without it
  // and its message measured on its own (MeasureStoredMessage).
  bool gave_up = false;
  LineWalk walk{view, line, e, span, hf, error, st};
  if (WalkEntry(walk, observer != nullptr, &gave_up, is_header, parser)) return true;
  if (!gave_up) return false;
  *e = Entry();
  *span = Span();
  *hf = HeaderFields();
  LineWalk again{view, line, e, span, hf, error, st};
  return WalkEntry(again, false, &gave_up, is_header, parser);
}

bool SessionState::WalkEntry(LineWalk& w, bool measure_inline, bool* gave_up, bool* is_header,
                             simdjson::ondemand::parser& parser) {
  simdjson::ondemand::document doc;
  internal::ReserveOnDemand(parser, w.view.length());
  if (auto err = parser.iterate(w.view).get(doc)) {
    *w.error = simdjson::error_message(err);
    return false;
  }
  simdjson::ondemand::object obj;
  if (auto err = doc.get_object().get(obj)) {
    *w.error = err == simdjson::INCORRECT_TYPE ? "not a JSON object" : simdjson::error_message(err);
    return false;
  }
  *is_header = false;
  bool has_type = false;
  for (auto field_result : obj) {
    simdjson::ondemand::field field;
    std::string_view key;
    auto err = std::move(field_result).get(field);
    if (!err) err = field.unescaped_key().get(key);
    if (err) {
      *w.error = simdjson::error_message(err);
      return false;
    }
    if (key == "type") {
      has_type = View(w.st, field.value(), &w.e->type_name);  // the last "type" counts
    } else if (key == "message") {
      if (!ReadMessage(w, doc, field.value(), measure_inline, gave_up)) return false;
    } else {
      ReadField(w, key, field.value());
    }
  }
  if (!has_type) {
    *w.error = "entry has no \"type\"";
    return false;
  }
  Entry* e = w.e;
  *is_header = e->type_name == "session";
  e->type = EntryTypeFromName(e->type_name);
  if (e->type == EntryType::kMessage) e->role = RoleFromName(e->role_name);
  if (measure_inline && e->type != EntryType::kMessage) {
    e->estimate = -1;  // measured a "message" member of an entry that is no message
    e->tool_call_blocks = -1;
    w.span->file_calls_known = false;
    w.span->file_calls = {};
  }
  if (observer != nullptr && !measure_inline && e->type == EntryType::kMessage &&
      w.span->msg_len != 0)
    MeasureAgain(w, doc);
  // v1 compactions point at a line index; Migrate() turns it into an id.
  if (w.first_kept_index >= 0 && e->first_kept_entry_id.empty())
    e->first_kept_entry_id = w.st.Keep("#" + JsNumber(w.first_kept_index));
  w.span->line = w.line;
  return true;
}

void SessionState::ReadField(LineWalk& w, std::string_view key, simdjson::ondemand::value v) {
  Entry* e = w.e;
  Storage& st = w.st;
  if (key == "id") {
    View(st, v, &e->id);
  } else if (key == "parentId") {
    View(st, v, &e->parent_id);  // null and non-strings read as "" (root)
  } else if (key == "timestamp") {
    double d = 0;  // new Date(number) keeps the number (truncated to whole ms)
    if (!View(st, v, &e->timestamp) && GetNumber(v, &d)) w.hf->numeric_timestamp = std::trunc(d);
  } else if (key == "thinkingLevel") {
    e->has_thinking_level = View(st, v, &e->thinking_level);
  } else if (key == "provider") {
    e->has_provider = View(st, v, &e->provider);
  } else if (key == "modelId") {
    e->has_model = View(st, v, &e->model);
  } else if (key == "firstKeptEntryId") {
    View(st, v, &e->first_kept_entry_id);
  } else if (key == "firstKeptEntryIndex") {
    GetNumber(v, &w.first_kept_index);
  } else if (key == "tokensBefore") {
    GetNumber(v, &e->tokens_before);
  } else if (key == "summary") {
    e->summary_empty = !JsTruthy(v);
  } else if (key == "fromId") {
    View(st, v, &e->from_id);
  } else if (key == "targetId") {
    View(st, v, &e->target_id);
  } else if (key == "label") {
    e->has_label = View(st, v, &e->label);
  } else if (key == "name") {
    View(st, v, &e->name);
  } else if (key == "fromHook") {
    bool b = false;
    if (!v.get_bool().get(b)) e->from_hook = b;
  } else if (key == "version") {
    GetNumber(v, &w.hf->version);
  } else if (key == "cwd") {
    GetString(v, &w.hf->cwd);
  } else if (key == "parentSession") {
    GetString(v, &w.hf->parent_session);
  }
}

bool SessionState::ReadMessage(LineWalk& w, simdjson::ondemand::document& doc,
                               simdjson::ondemand::value v, bool measure_inline, bool* gave_up) {
  simdjson::ondemand::json_type jt;
  if (v.type().get(jt) || jt != simdjson::ondemand::json_type::object) {
    return true;  // a non-object message has no role; it is kept verbatim
  }
  const char* start = v.raw_json_token().data();
  simdjson::ondemand::object m;
  if (auto err = v.get_object().get(m)) {
    *w.error = simdjson::error_message(err);
    return false;
  }
  if (measure_inline) {
    // The estimate's walk hands the other members on; it reads "role" itself.
    const internal::OtherField other = [&w](std::string_view mk, simdjson::ondemand::value mv) {
      ReadMessageMember(w, mk, mv);
    };
    thread_local internal::MessageMeasure measure;
    if (!observer->Measure(m, &measure, &other)) {
      *gave_up = true;
      return false;
    }
    if (!measure.role.empty()) w.e->role_name = w.st.Keep(measure.role);
    KeepMeasure(measure, w.e, w.span, w.st);
  } else {
    for (auto mf_result : m) {
      simdjson::ondemand::field mf;
      if (auto err = std::move(mf_result).get(mf)) {
        *w.error = simdjson::error_message(err);
        return false;
      }
      std::string_view mk;
      if (mf.unescaped_key().get(mk)) continue;
      ReadMessageMember(w, mk, mf.value());
    }
  }
  const char* end = nullptr;
  if (doc.current_location().get(end)) {
    *w.error = "truncated message object";
    return false;
  }
  std::string_view msg = TrimRight(std::string_view(start, static_cast<size_t>(end - start)));
  // Offsets are relative to the parsed buffer, which is `line` or its padded copy.
  w.span->msg_off = static_cast<uint32_t>(msg.data() - w.view.data());
  w.span->msg_len = static_cast<uint32_t>(msg.size());
  return true;
}

void SessionState::ReadMessageMember(LineWalk& w, std::string_view key,
                                     simdjson::ondemand::value v) {
  Entry* e = w.e;
  if (key == "role") {
    View(w.st, v, &e->role_name);
  } else if (key == "provider") {
    e->has_provider = View(w.st, v, &e->provider);
  } else if (key == "model") {
    e->has_model = View(w.st, v, &e->model);
  } else if (key == "stopReason") {
    View(w.st, v, &e->stop_reason);
  } else if (key == "usage") {
    simdjson::ondemand::object u;
    if (v.get_object().get(u)) return;
    e->has_usage = true;
    for (auto uf_result : u) {
      simdjson::ondemand::field uf;
      if (std::move(uf_result).get(uf)) break;
      std::string_view uk;
      if (uf.unescaped_key().get(uk)) continue;
      double d = 0;
      simdjson::ondemand::value uv = uf.value();
      if (uk == "input" && GetNumber(uv, &d))
        e->usage.input = d;
      else if (uk == "output" && GetNumber(uv, &d))
        e->usage.output = d;
      else if (uk == "cacheRead" && GetNumber(uv, &d))
        e->usage.cache_read = d;
      else if (uk == "cacheWrite" && GetNumber(uv, &d))
        e->usage.cache_write = d;
      else if (uk == "totalTokens" && GetNumber(uv, &d))
        e->usage.total_tokens = d;
    }
  }
}

void SessionState::MeasureAgain(LineWalk& w, simdjson::ondemand::document& doc) {
  // Find the message object recorded by the walk (the last "message" key, as
  // JSON.parse keeps) and measure it. Any trouble leaves the estimate to later.
  const char* msg_start = w.view.data() + w.span->msg_off;
  doc.rewind();
  simdjson::ondemand::object top;
  if (doc.get_object().get(top)) return;
  for (auto field_result : top) {
    simdjson::ondemand::field field;
    std::string_view key;
    if (std::move(field_result).get(field) || field.unescaped_key().get(key)) break;
    if (key != "message") continue;
    simdjson::ondemand::value v = field.value();
    if (v.raw_json_token().data() != msg_start) continue;
    simdjson::ondemand::object m;
    thread_local internal::MessageMeasure measure;
    if (!v.get_object().get(m) && observer->Measure(m, &measure, nullptr))
      KeepMeasure(measure, w.e, w.span, w.st);
    break;
  }
}

void SessionState::ParseChunk(Chunk& c) {
#ifndef COMPACTOR_KERNEL
  // The copy of this function compiled for the active CPU kernel, if any.
  if (auto* parse = kernel->session_parse_chunk) return parse(this, &c);
#endif
  simdjson::ondemand::parser parser;
  if (parser.allocate(kMinParserCapacity) != simdjson::SUCCESS) {
    c.out_of_memory = true;
    c.failed = true;
    c.fail_line = 1;
    c.fail_message = "out of memory while reading this line";
    return;
  }
  Storage& st = *c.storage;
  // The range's bytes: the file's, or bytes appended to it since (Refresh).
  const char* const buf = c.data;
  const size_t buf_size = c.size;
  // Reserve for short lines (real entries average over 1 KB): the index never
  // moves while it grows, and untouched reserved pages cost no memory.
  const size_t guess = std::min<size_t>((c.end - c.begin) / 512 + 16, size_t{1} << 20);
  c.entries.reserve(guess);
  c.spans.reserve(guess);
  size_t pos = c.begin;
  uint32_t line_no = 0;  // relative to the chunk
  bool& have_header = c.have_header;
  have_header = !c.first;
  size_t released = c.begin;
  size_t last_progress = c.begin;
  // Callers that measure messages will read them again (file operations,
  // usage): keep the pages then rather than fault them back in.
  const bool release = c.release;
  auto warn = [&c](uint32_t line, std::string message) {
    c.warnings.emplace_back(line, std::move(message));
  };
  auto fail = [&c](uint32_t line, std::string message) {
    c.failed = true;
    c.fail_line = line;
    c.fail_message = std::move(message);
  };
  // JavaScript's trim() drops a leading byte order mark before pi splits lines.
  if (c.first && buf_size >= 3 && std::memcmp(buf, "\xEF\xBB\xBF", 3) == 0) pos = 3;
  while (pos < c.end) {
    const char* nl = static_cast<const char*>(std::memchr(buf + pos, '\n', c.end - pos));
    size_t end = nl ? static_cast<size_t>(nl - buf) : c.end;
    ++line_no;
    std::string_view line(buf + pos, end - pos);
    // Another process truncated the file: the rest is fill bytes. Load
    // reports it; reading on would only fault in more fill.
    if (file.truncated()) return fail(line_no, "truncated while read");
    const size_t line_begin = pos;
    const bool last_line = nl == nullptr || end + 1 >= buf_size;
    const bool torn = nl == nullptr;
    pos = end + 1;
    if (c.first && options.on_progress && pos - last_progress > kReleaseChunk) {
      // The first range is read as fast as the others: scale to the whole file.
      const double scaled =
          static_cast<double>(pos) * static_cast<double>(buf_size) / static_cast<double>(c.end);
      options.on_progress(std::min(buf_size, static_cast<size_t>(scaled)), buf_size);
      last_progress = pos;
    }
    if (release && pos - released > kReleaseChunk) {
      file.Release(released, pos - released - 1);
      released = pos - 1;
    }
    if (IsBlank(line)) continue;

    Entry e;
    Span span;
    bool is_header = false;
    std::string error;
    HeaderFields hf;
    bool padded_ok =
        static_cast<size_t>(line.data() - buf) + line.size() + simdjson::SIMDJSON_PADDING <=
            buf_size ||
        c.padded;
    if (internal::JsonNestingExceeds(line, internal::kMaxJsonNesting)) {
      // Every walk over a value (estimates, canonical JSON, message parsing)
      // may then recurse once per level: refuse the line before any does.
      const std::string msg = internal::JsonTooDeepMessage();
      if (!have_header) return fail(line_no, "not a pi session file (" + msg + ")");
      if (options.strict) return fail(line_no, msg);
      warn(line_no, msg + "; line skipped");
      continue;
    }
    bool ok = ParseLine(line, padded_ok, &e, &span, &hf, &is_header, &error, parser, st);
    if (!ok && error == simdjson::error_message(simdjson::MEMALLOC)) {
      // The parser could not grow its buffers: the line may be fine.
      c.out_of_memory = true;
      return fail(line_no, "out of memory while reading this line");
    }
    if (!ok && error.find("UTF-8") != std::string::npos) {
      // Node decodes invalid bytes as U+FFFD before JSON.parse; do the same.
      st.side.push_back(internal::ReplaceInvalidUtf8(line));
      std::string& fixed = st.side.back();
      fixed.reserve(fixed.size() + simdjson::SIMDJSON_PADDING);
      line = fixed;
      e = Entry();
      span = Span();
      hf = HeaderFields();
      ok = ParseLine(line, false, &e, &span, &hf, &is_header, &error, parser, st);
      if (ok) warn(line_no, "invalid UTF-8 replaced by U+FFFD");
    }
    if (!ok && !have_header) {
      // Nothing before the header can be skipped safely: this is not a session file.
      return fail(line_no,
                  "not a pi session file (the first line is not a JSON header: " + error + ")");
    }
    if (!ok) {
      std::string msg = "invalid JSON (" + error + ")";
      if (torn && last_line) {
        // Left for the next read: a writer may still be completing it.
        c.torn_at = line_begin;
        if (!c.quiet_torn) warn(line_no, msg + " on the last line (a torn write?); line skipped");
        continue;
      }
      if (options.strict) return fail(line_no, msg);
      warn(line_no, msg + "; line skipped");
      continue;
    }
    if (!have_header) {
      if (!is_header || e.id.empty()) {
        return fail(line_no,
                    "not a pi session file (the first JSON line must be a "
                    "{\"type\":\"session\",\"id\":...} header)");
      }
      have_header = true;
      c.header_fields = hf;
      c.header_entry = e;
      c.header_line = line_no;
      c.header_raw = line;
      continue;
    }
    if (is_header) {
      warn(line_no, "a second session header; ignored as pi does");
      continue;
    }
    e.line = line_no;
    e.timestamp_ms =
        hf.numeric_timestamp ? *hf.numeric_timestamp : ParseIsoTimestampMs(e.timestamp);
    c.entries.push_back(e);
    c.spans.push_back(span);
  }
  c.lines = line_no;
}

Status SessionState::Load() {
  kernel = &internal::ActiveKernel();
  observer =
      options.message_observer != nullptr ? options.message_observer->ForKernel(*kernel) : nullptr;
  // Large files are indexed by two threads, each over about half of the
  // lines (split after a newline); results are joined in file order, so
  // entries, warnings and errors are those of a single pass.
  int threads = options.threads;
  if (threads <= 0) {
    threads =
        size >= kParallelThreshold && EnvOrDefault(options.env)->HardwareThreads() >= 2 ? 2 : 1;
  }
  std::vector<Chunk> chunks(1);
  chunks[0].first = true;
  chunks[0].begin = 0;
  chunks[0].end = size;
  for (int k = 1; k < threads; ++k) {
    Chunk& prev = chunks.back();
    size_t cut = prev.begin + (size - prev.begin) / static_cast<size_t>(threads - k + 1);
    const char* nl =
        cut < size ? static_cast<const char*>(std::memchr(data + cut, '\n', size - cut)) : nullptr;
    if (nl == nullptr || static_cast<size_t>(nl - data) + 1 >= size) break;
    size_t split = static_cast<size_t>(nl - data) + 1;
    if (split <= prev.begin + 3) break;  // keep the byte order mark with the header
    prev.end = split;
    Chunk next;
    next.begin = split;
    next.end = size;
    chunks.push_back(std::move(next));
  }
  auto frame = [this](Chunk& c) {
    c.data = data;
    c.size = size;
    c.padded = !owned.empty();
    c.release = size > kReleaseThreshold && observer == nullptr;
    storage.push_back(std::make_unique<Storage>());
    c.storage = storage.back().get();
  };
  for (Chunk& c : chunks) frame(c);
  if (chunks.size() == 1) {
    ParseChunk(chunks[0]);
  } else {
    std::vector<std::string> crashed(chunks.size());
    auto run = [this, &chunks, &crashed](size_t k) {
      try {
        ParseChunk(chunks[k]);
      } catch (const std::bad_alloc&) {
        chunks[k].failed = true;
        chunks[k].out_of_memory = true;
        chunks[k].fail_message = "out of memory while reading";
      } catch (const std::exception& ex) {
        crashed[k] = ex.what();
      } catch (...) {
        crashed[k] = "unknown exception";
      }
    };
    std::vector<std::unique_ptr<Thread>> workers;
    std::vector<size_t> here = {0};
    for (size_t k = 1; k < chunks.size(); ++k) {
      Result<std::unique_ptr<Thread>> t =
          EnvOrDefault(options.env)->StartThread([&run, k] { run(k); });
      if (t.ok()) {
        workers.push_back(std::move(t).value());
      } else {
        here.push_back(k);  // no thread to be had: read this range here
      }
    }
    for (size_t k : here) run(k);
    for (std::unique_ptr<Thread>& t : workers) t->Join();
    for (const std::string& why : crashed) {
      if (!why.empty()) return Status::Internal(path + ": indexing failed: " + why);
    }
    if (!chunks[0].failed && !chunks[0].have_header) {
      // Only blank lines before the split: the header, if any, is further on.
      // Such a file is no use to split; read it in one pass.
      storage.clear();
      chunks.resize(1);
      chunks[0] = Chunk();
      chunks[0].first = true;
      chunks[0].end = size;
      frame(chunks[0]);
      ParseChunk(chunks[0]);
    }
  }

  // Join in file order: warnings up to the first fatal error, then the error.
  uint32_t base = 0;
  size_t total = 0;
  consumed = size;
  for (const Chunk& c : chunks) total += c.entries.size();
  // The first range's vectors become the index (no copy of its half; their
  // reserve usually holds the rest too).
  entries = std::move(chunks[0].entries);
  spans = std::move(chunks[0].spans);
  entries.reserve(total);
  spans.reserve(total);
  for (size_t k = 0; k < chunks.size(); ++k) {
    Chunk& c = chunks[k];
    for (auto& [line, message] : c.warnings) Warn(base + line, std::move(message));
    if (c.failed && c.out_of_memory) {
      // Never a data error: the caller must not take the file for damaged.
      return Status::ResourceExhausted(c.fail_line == 0
                                           ? path + ": " + c.fail_message
                                           : path + ":" + std::to_string(base + c.fail_line) +
                                                 ": " + c.fail_message);
    }
    if (c.failed) {
      if (c.fail_line == 0) return Status::Corruption(path + ": " + c.fail_message);
      return Status::Corruption(path + ":" + std::to_string(base + c.fail_line) + ": " +
                                c.fail_message);
    }
    if (k == 0) {
      if (!c.have_header) {
        if (size == 0 || IsBlank(std::string_view(data, size)))
          return Status::Corruption(path + ":1: empty file, not a pi session");
        return Status::Corruption(path + ": no session header found");
      }
      const HeaderFields& hf = c.header_fields;
      // A version beyond int (fuzzing found 1768900849452, a timestamp) is
      // as current as 3 to pi's `version < N` checks: saturated, not
      // converted (out of range, the conversion is undefined).
      header.version = hf.version < 1                  ? 1
                       : hf.version >= double(INT_MAX) ? INT_MAX
                                                       : static_cast<int>(hf.version);
      header.cwd = hf.cwd;
      header.parent_session = hf.parent_session;
      header.id = c.header_entry.id;
      header.timestamp = c.header_entry.timestamp;
      header.line = c.header_line;
      header_raw = c.header_raw;
    }
    if (k > 0) {
      for (Entry& e : c.entries) {
        e.line += base;
        entries.push_back(e);
      }
      spans.insert(spans.end(), c.spans.begin(), c.spans.end());
    }
    base += c.lines;
    if (c.torn_at != SIZE_MAX) {
      // The torn last line is read again by the next Refresh.
      consumed = c.torn_at;
      consumed_lines = base - 1;
    }
    std::vector<Entry>().swap(c.entries);
    std::vector<Span>().swap(c.spans);
  }
  if (size > kReleaseThreshold && observer == nullptr) file.Release(0, size);
  if (consumed == size) consumed_lines = base;
  Migrate();
  Index();
  return Status::Ok();
}

void SessionState::Migrate() {
  if (header.version >= 3) {
    // firstKeptEntryIndex means nothing in a v3 file; pi ignores it.
    for (Entry& e : entries)
      if (!e.first_kept_entry_id.empty() && e.first_kept_entry_id[0] == '#')
        e.first_kept_entry_id = {};
    return;
  }
  migrated = true;
  if (header.version < 2) {
    v1_ids = true;
    // Deterministic ids (pi draws random ones): the same v1 file always migrates
    // to the same ids, so repeated runs agree.
    std::unordered_set<std::string> used;
    uint64_t state = 0x9E3779B97F4A7C15ull;
    for (char c : header.id) state = (state ^ static_cast<unsigned char>(c)) * 0x100000001B3ull;
    std::string_view prev;
    for (Entry& e : entries) {
      std::string id;
      do {
        state ^= state >> 33;
        state *= 0xff51afd7ed558ccdull;
        state ^= state >> 33;
        char buf[9];
        std::snprintf(buf, sizeof buf, "%08x", static_cast<unsigned>(state & 0xffffffffu));
        id = buf;
        state += 0x9E3779B97F4A7C15ull;
      } while (!used.insert(id).second);
      e.id = storage[0]->Keep(id);
      e.parent_id = prev;
      prev = e.id;
    }
    // firstKeptEntryIndex counts parsed objects with the header at index 0.
    for (Entry& e : entries) {
      if (e.type != EntryType::kCompaction) continue;
      if (e.first_kept_entry_id.empty() || e.first_kept_entry_id[0] != '#') continue;
      double idx = std::strtod(std::string(e.first_kept_entry_id.substr(1)).c_str(), nullptr);
      e.first_kept_entry_id = {};
      if (idx >= 1 && idx == std::floor(idx) && static_cast<size_t>(idx) - 1 < entries.size())
        e.first_kept_entry_id = entries[static_cast<size_t>(idx) - 1].id;
    }
  }
  for (size_t i = 0; i < entries.size(); ++i) {
    Entry& e = entries[i];
    if (e.type == EntryType::kMessage && e.role_name == "hookMessage") {
      e.role_name = "custom";
      e.role = Role::kCustom;
      e.estimate = -1;  // measured under its old role
      e.tool_call_blocks = -1;
      spans[i].file_calls_known = false;
      std::string_view msg = spans[i].line.substr(spans[i].msg_off, spans[i].msg_len);
      std::deque<std::string>& side = storage[0]->side;
      side.push_back(internal::SetMember(msg, "role", "\"custom\""));
      migrated_messages[i] = side.back();
    }
  }
}

void SessionState::Index() {
  by_id.Build(entries);
  for (size_t i = 0; i < entries.size(); ++i) {
    const Entry& e = entries[i];
    if (e.id.empty()) {
      Warn(e.line, "entry has no id; it cannot be a parent");
      continue;
    }
    size_t replaced = by_id.Insert(i);
    if (replaced != IdIndex::kNone) {
      Warn(e.line, "duplicate entry id \"" + std::string(e.id) + "\" (first on line " +
                       std::to_string(entries[replaced].line) + "); the later entry wins as in pi");
    }
  }
  for (const Entry& e : entries) ApplyState(e);
  parents.assign(entries.size(), IdIndex::kNone);
  for (size_t i = 0; i < entries.size(); ++i) {
    const Entry& e = entries[i];
    if (e.parent_id.empty() || e.parent_id == e.id) continue;
    size_t parent = by_id.Find(e.parent_id);
    if (parent == IdIndex::kNone) {
      // pi's walk from a leaf stops here too: everything above is cut off
      // the context, which should not happen silently.
      Warn(e.line, "parentId \"" + std::string(e.parent_id) +
                       "\" names no entry in the file; paths through this entry start here");
      unresolved_parents.insert(e.parent_id);
    }
    if (parent != i) parents[i] = parent;
  }
  // Cycle check: every walk must reach a root within size() steps.
  std::vector<uint8_t> state(entries.size(), 0);  // 0 unknown, 1 on stack, 2 ok
  std::vector<size_t> stack;
  for (size_t i = 0; i < entries.size(); ++i) {
    if (state[i]) continue;
    stack.clear();
    size_t cur = i;
    for (;;) {
      if (state[cur] == 2) break;
      if (state[cur] == 1) {
        Warn(entries[cur].line, "parentId cycle through entry \"" + std::string(entries[cur].id) +
                                    "\"; walks stop there");
        break;
      }
      state[cur] = 1;
      stack.push_back(cur);
      if (parents[cur] == IdIndex::kNone) break;
      cur = parents[cur];
    }
    for (size_t s : stack) state[s] = 2;
  }
}

void SessionState::ApplyState(const Entry& e) {
  if (e.type == EntryType::kLabel) {
    if (e.has_label && !e.label.empty()) {
      labels[std::string(e.target_id)] = std::string(e.label);
    } else {
      labels.erase(std::string(e.target_id));
    }
  } else if (e.type == EntryType::kSessionInfo) {
    if (e.name.empty()) {
      name.reset();
    } else {
      name = std::string(e.name);
    }
  }
}

bool SessionState::ChangesEarlier(const std::vector<Entry>& fresh) const {
  std::unordered_set<std::string_view> ids, named;
  for (const Entry& e : fresh) {
    if (!e.id.empty()) {
      if (by_id.Find(e.id) != IdIndex::kNone || unresolved_parents.count(e.id) != 0 ||
          named.count(e.id) != 0 || !ids.insert(e.id).second)
        return true;
    }
    if (!e.parent_id.empty() && by_id.Find(e.parent_id) == IdIndex::kNone &&
        ids.count(e.parent_id) == 0)
      named.insert(e.parent_id);
  }
  return false;
}

void SessionState::IndexNew(size_t from) {
  by_id.Reserve(entries.size(), from);
  parents.resize(entries.size(), IdIndex::kNone);
  for (size_t i = from; i < entries.size(); ++i) {
    const Entry& e = entries[i];
    if (e.id.empty()) {
      Warn(e.line, "entry has no id; it cannot be a parent");
    } else {
      by_id.Insert(i);  // a new id (ChangesEarlier)
    }
    ApplyState(e);
    // The parent is an earlier entry or none: no cycle can form.
    if (e.parent_id.empty() || e.parent_id == e.id) continue;
    const size_t parent = by_id.Find(e.parent_id);
    if (parent == IdIndex::kNone) {
      Warn(e.line, "parentId \"" + std::string(e.parent_id) +
                       "\" names no entry in the file; paths through this entry start here");
      unresolved_parents.insert(e.parent_id);
    }
    parents[i] = parent;
  }
}

Result<size_t> SessionState::Extend(bool* reload) {
  *reload = false;
  Env* env = EnvOrDefault(options.env);
  COMPACTOR_ASSIGN_OR_RETURN(FileInfo info, env->Stat(path));
  if (info.identity == seen) return size_t{0};  // the common case: one stat
  COMPACTOR_ASSIGN_OR_RETURN(std::unique_ptr<ReadableFile> rf, env->OpenReadable(path));
  COMPACTOR_ASSIGN_OR_RETURN(FileIdentity now, rf->Identity());
  if (migrated || file.truncated() || now.device != seen.device || now.inode != seen.inode ||
      now.size < consumed) {
    *reload = true;
    return size_t{0};
  }
  const size_t from = consumed - tail_check.size();
  COMPACTOR_ASSIGN_OR_RETURN(std::string bytes, rf->ReadAt(from, now.size - from));
  if (bytes.size() < tail_check.size() ||
      std::string_view(bytes).substr(0, tail_check.size()) != tail_check) {
    *reload = true;  // rewritten in place: the bytes we indexed are gone
    return size_t{0};
  }
  bytes.erase(0, tail_check.size());
  // The last line read had no newline (a complete entry, or blanks): the
  // newline that ends it is not a line of its own. Anything else continues
  // that line, which a full read must judge again.
  size_t skip = 0;
  if (!bytes.empty() && !tail_check.empty() && tail_check.back() != '\n') {
    if (bytes[0] != '\n') {
      *reload = true;
      return size_t{0};
    }
    skip = 1;
    bytes.erase(0, 1);
  }
  const size_t n = bytes.size();
  now.size = from + tail_check.size() + skip + n;
  bytes.append(simdjson::SIMDJSON_PADDING, ' ');
  std::string& kept = appended.emplace_back(std::move(bytes));
  Chunk c;
  c.data = kept.data();
  c.size = n;
  c.padded = true;
  c.quiet_torn = true;
  c.end = n;
  c.storage = storage.front().get();
  ParseChunk(c);
  if (c.failed) {
    appended.pop_back();
    const std::string where =
        c.fail_line == 0 ? path + ": "
                         : path + ":" + std::to_string(consumed_lines + c.fail_line) + ": ";
    if (c.out_of_memory) return Status::ResourceExhausted(where + c.fail_message);
    return Status::Corruption(where + c.fail_message);
  }
  if (ChangesEarlier(c.entries)) {
    appended.pop_back();
    *reload = true;
    return size_t{0};
  }
  for (auto& [line, message] : c.warnings) Warn(consumed_lines + line, std::move(message));
  const size_t first_new = entries.size();
  for (size_t k = 0; k < c.entries.size(); ++k) {
    Entry& e = c.entries[k];
    e.line += consumed_lines;
    if (!e.first_kept_entry_id.empty() && e.first_kept_entry_id[0] == '#')
      e.first_kept_entry_id = {};  // as Migrate() for a v3 file
    entries.push_back(e);
    spans.push_back(c.spans[k]);
  }
  const size_t done = c.torn_at == SIZE_MAX ? n : c.torn_at;
  consumed += skip + done;
  consumed_lines += c.torn_at == SIZE_MAX ? c.lines : c.lines - 1;
  if (done >= kTailCheckBytes) {
    KeepTailCheck(std::string_view(kept.data(), done));
  } else {
    std::string joined = tail_check;
    joined.append(skip, '\n');
    joined.append(kept, 0, done);
    KeepTailCheck(joined);
  }
  if (c.entries.empty()) appended.pop_back();  // nothing points into these bytes
  seen = now;
  IndexNew(first_new);
  return entries.size() - first_new;
}

Session::Session(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Session::~Session() = default;

Result<std::unique_ptr<Session>> Session::Open(const std::string& path,
                                               const LoadOptions& options) {
  try {
    auto impl = std::make_unique<Impl>();
    impl->path = path;
    impl->options = options;
    COMPACTOR_ASSIGN_OR_RETURN(
        impl->file, internal::FileBytes::Open(options.env, path, options.max_stream_bytes));
    impl->data = impl->file.data();
    impl->size = impl->file.size();
    if (impl->size == 0) return Status::Corruption(path + ":1: empty file, not a pi session");
    Status loaded = impl->Load();
    // A truncation while the bytes were read explains any error Load saw.
    if (impl->file.truncated())
      return internal::TruncatedWhileRead(path, /*nothing_written=*/false);
    COMPACTOR_RETURN_IF_ERROR(loaded);
    if (auto id = impl->file.identity()) {
      impl->seen = *id;
      impl->KeepTailCheck(std::string_view(impl->data, impl->consumed));
    }
    return std::unique_ptr<Session>(new Session(std::move(impl)));
  } catch (const std::bad_alloc&) {
    return Status::ResourceExhausted(path + ": out of memory while reading");
  }
}

Result<RefreshResult> Session::Refresh() {
  if (!impl_->file.identity()) {
    return Status::FailedPrecondition(impl_->path +
                                      ": not read from a regular file; nothing to refresh");
  }
  RefreshResult r;
  try {
    bool reload = false;
    COMPACTOR_ASSIGN_OR_RETURN(r.added, impl_->Extend(&reload));
    if (!reload) return r;
  } catch (const std::bad_alloc&) {
    return Status::ResourceExhausted(impl_->path + ": out of memory while reading");
  }
  COMPACTOR_ASSIGN_OR_RETURN(std::unique_ptr<Session> fresh, Open(impl_->path, impl_->options));
  fresh->impl_->generation = impl_->generation + 1;
  impl_ = std::move(fresh->impl_);
  r.reloaded = true;
  r.added = impl_->entries.size();
  return r;
}

uint64_t Session::generation() const { return impl_->generation; }

std::optional<FileIdentity> Session::file_identity() const {
  if (!impl_->file.identity()) return std::nullopt;
  return impl_->seen;
}

Status Session::CheckIntact() const {
  if (impl_->file.truncated())
    return internal::TruncatedWhileRead(impl_->path, /*nothing_written=*/false);
  return Status::Ok();
}

Result<std::unique_ptr<Session>> Session::FromString(std::string contents, std::string name,
                                                     const LoadOptions& options) {
  auto impl = std::make_unique<Impl>();
  impl->path = std::move(name);
  impl->options = options;
  impl->owned = std::move(contents);
  const size_t n = impl->owned.size();
  impl->owned.append(simdjson::SIMDJSON_PADDING, ' ');
  impl->data = impl->owned.data();
  impl->size = n;
  if (n == 0) return Status::Corruption(impl->path + ":1: empty input, not a pi session");
  try {
    COMPACTOR_RETURN_IF_ERROR(impl->Load());
  } catch (const std::bad_alloc&) {
    return Status::ResourceExhausted(impl->path + ": out of memory while reading");
  }
  return std::unique_ptr<Session>(new Session(std::move(impl)));
}

const std::string& Session::path() const { return impl_->path; }
const SessionHeader& Session::header() const { return impl_->header; }
bool Session::migrated() const { return impl_->migrated; }
const std::vector<LoadWarning>& Session::warnings() const { return impl_->warnings; }
size_t Session::size() const { return impl_->entries.size(); }
const Entry& Session::entry(size_t index) const { return impl_->entries[index]; }
const std::vector<Entry>& Session::entries() const { return impl_->entries; }

std::optional<size_t> Session::Find(std::string_view id) const {
  size_t i = impl_->by_id.Find(id);
  if (i == Impl::IdIndex::kNone) return std::nullopt;
  return i;
}

std::optional<size_t> Session::Leaf() const {
  if (impl_->entries.empty()) return std::nullopt;
  return impl_->entries.size() - 1;
}

std::vector<size_t> Session::PathTo(size_t leaf) const {
  const size_t n = impl_->entries.size();
  std::vector<size_t> path;
  size_t cur = leaf;
  for (;;) {
    path.push_back(cur);
    if (path.size() > n) {
      // A parentId cycle (reported at load): stop at the first repeated entry.
      std::unordered_set<size_t> seen;
      size_t keep = 0;
      while (keep < path.size() && seen.insert(path[keep]).second) ++keep;
      path.resize(keep);
      break;
    }
    const size_t parent = impl_->parents[cur];
    if (parent == Impl::IdIndex::kNone) break;
    cur = parent;
  }
  std::reverse(path.begin(), path.end());
  return path;
}

std::optional<size_t> Session::Parent(size_t index) const {
  const size_t parent = impl_->parents[index];
  if (parent == Impl::IdIndex::kNone) return std::nullopt;
  return parent;
}

std::vector<std::vector<size_t>> Session::Children() const {
  std::vector<std::vector<size_t>> children(impl_->entries.size());
  for (size_t i = 0; i < impl_->entries.size(); ++i) {
    const size_t parent = impl_->parents[i];
    if (parent != Impl::IdIndex::kNone) children[parent].push_back(i);
  }
  return children;
}

std::vector<size_t> Session::Roots() const {
  std::vector<size_t> roots;
  for (size_t i = 0; i < impl_->entries.size(); ++i) {
    if (impl_->parents[i] == Impl::IdIndex::kNone) roots.push_back(i);
  }
  return roots;
}

std::optional<std::string> Session::LabelOf(std::string_view id) const {
  auto it = impl_->labels.find(std::string(id));
  if (it == impl_->labels.end()) return std::nullopt;
  return it->second;
}

std::optional<std::string> Session::Name() const { return impl_->name; }

std::string_view Session::MessageJson(size_t index) const {
  auto it = impl_->migrated_messages.find(index);
  if (it != impl_->migrated_messages.end()) return it->second;
  const Impl::Span& s = impl_->spans[index];
  return s.line.substr(s.msg_off, s.msg_len);
}

bool Session::ForEachFileCall(
    size_t index,
    const std::function<void(std::string_view tool, std::string_view path)>& fn) const {
  const Impl::Span& s = impl_->spans[index];
  if (!s.file_calls_known) return false;
  std::string_view packed = s.file_calls;
  while (packed.size() > sizeof(uint32_t)) {
    uint32_t len = 0;
    std::memcpy(&len, packed.data() + 1, sizeof len);
    const char tool = packed[0];
    fn(tool == 'r' ? "read" : tool == 'w' ? "write" : "edit", packed.substr(1 + sizeof len, len));
    packed.remove_prefix(1 + sizeof len + len);
  }
  return true;
}

std::string_view Session::FieldJson(size_t index, std::string_view key) const {
  return internal::FindMember(impl_->spans[index].line, key);
}

std::optional<std::string> Session::StringField(size_t index, std::string_view key) const {
  std::string_view raw = FieldJson(index, key);
  if (raw.size() < 2 || raw[0] != '"') return std::nullopt;
  std::string padded(raw);
  simdjson::dom::parser parser;
  std::string_view sv;
  if (parser.parse(padded).get_string().get(sv)) return std::nullopt;
  return std::string(sv);
}

std::string Session::EntryJson(size_t index) const {
  const Impl::Span& s = impl_->spans[index];
  const Entry& e = impl_->entries[index];
  if (!impl_->migrated) return std::string(s.line);
  std::string out(TrimRight(s.line));
  auto mm = impl_->migrated_messages.find(index);
  if (mm != impl_->migrated_messages.end()) out = internal::SetMember(out, "message", mm->second);
  if (impl_->v1_ids) {
    const bool had_index =
        e.type == EntryType::kCompaction && !FieldJson(index, "firstKeptEntryIndex").empty();
    if (had_index) out = internal::RemoveMember(out, "firstKeptEntryIndex");
    std::string id_json, parent_json;
    AppendJsString(id_json, e.id);
    if (e.parent_id.empty()) {
      parent_json = "null";
    } else {
      AppendJsString(parent_json, e.parent_id);
    }
    out = internal::SetMember(internal::RemoveMember(out, "id"), "id", id_json);
    out = internal::SetMember(internal::RemoveMember(out, "parentId"), "parentId", parent_json);
    if (had_index && !e.first_kept_entry_id.empty()) {
      std::string fk;
      AppendJsString(fk, e.first_kept_entry_id);
      out = internal::SetMember(out, "firstKeptEntryId", fk);
    }
  }
  return out;
}

void Session::ReleaseBytes(std::string_view view) const {
  const char* base = impl_->file.data();
  if (base == nullptr || impl_->size < kReleaseThreshold) return;
  if (view.data() < base || view.data() + view.size() > base + impl_->file.size()) return;
  impl_->file.Release(static_cast<size_t>(view.data() - base), view.size());
}

std::string Session::HeaderJson() const {
  std::string out(TrimRight(impl_->header_raw));
  if (impl_->migrated) out = internal::SetMember(out, "version", "3");
  return out;
}

std::string Session::ToV3Jsonl() const {
  std::string out = HeaderJson();
  out.push_back('\n');
  for (size_t i = 0; i < impl_->entries.size(); ++i) {
    out += TrimRight(EntryJson(i));
    out.push_back('\n');
  }
  return out;
}

}  // namespace compactor

#ifdef COMPACTOR_KERNEL
extern "C" void COMPACTOR_KERNEL_ENTRY(session_parse_chunk)(void* state, void* chunk) {
  using compactor::SessionState;
  static_cast<SessionState*>(state)->ParseChunk(*static_cast<SessionState::Chunk*>(chunk));
}
#endif
