// Reading pi session files (JSONL, format versions 1-3) as a lazily parsed,
// indexed tree. See docs/session-format.md.
//
// A Session maps the file and indexes every line once: entry type, id,
// parentId, timestamp and, for message entries, the role and a few scalar
// fields. Message bodies stay in the mapped bytes and are parsed only when a
// caller asks (Session::MessageJson + ParseMessage). v1/v2 files are migrated
// in memory exactly as pi 0.73.1 does; the input file is never modified.
//
// A Session opened from a file can be kept loaded and brought up to date
// with Refresh(): only the bytes appended since the last read are read and
// indexed (docs/incremental.md).
//
// Thread safety: the const methods are safe for concurrent reads. Refresh()
// is the only method that modifies a Session: it must not run concurrently
// with any other call on the same Session (callers that share a Session
// between threads either never refresh it or hold their own lock).
#ifndef COMPACTOR_INCLUDE_COMPACTOR_SESSION_H_
#define COMPACTOR_INCLUDE_COMPACTOR_SESSION_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compactor/env.h"
#include "compactor/message.h"
#include "compactor/status.h"

namespace compactor {

// Measures each message while a session is indexed (LoadOptions::message_observer).
// Opaque here: the modules of the library implement it, and the one a caller
// passes is TokenEstimateObserver() (compactor/estimate.h), pi's estimate.
class MessageObserver;

enum class EntryType {
  kMessage,
  kThinkingLevelChange,
  kModelChange,
  kCompaction,
  kBranchSummary,
  kCustom,
  kCustomMessage,
  kLabel,
  kSessionInfo,
  kUnknown,  // any other "type" string: kept and copied verbatim, never interpreted
};

// One non-header line of the file, as indexed at load time. The strings are
// views into the Session's bytes (or, for values written with JSON escapes
// and ids assigned by migration, into text the Session owns): valid while the
// Session lives. A compact index is most of what loading a large file costs.
struct Entry {
  EntryType type = EntryType::kUnknown;
  std::string_view type_name;  // the "type" string as stored
  std::string_view id;         // assigned in memory for v1 files
  std::string_view parent_id;  // empty = null / root (pi treats "" as null too)
  std::string_view timestamp;  // ISO-8601 string as stored
  double timestamp_ms = 0;     // Date.parse(timestamp); NaN when unparsable
  uint32_t line = 0;           // 1-based line number in the file

  // message entries
  Role role = Role::kOther;
  std::string_view role_name;
  // assistant messages (needed for model tracking and usage without a full parse)
  std::string_view provider, model, stop_reason;
  bool has_usage = false;
  Usage usage;

  // compaction (also for v1 files after migration): firstKeptEntryId; tokensBefore
  std::string_view first_kept_entry_id;
  double tokens_before = 0;
  // branch_summary: fromId; label: targetId; session_info: name; thinking_level_change: level;
  // model_change: provider/modelId go into provider/model above.
  std::string_view from_id, target_id, label, name, thinking_level;
  bool has_label = false;  // label entries: false when the label is absent (clears)
  bool from_hook = false;  // compaction / branch_summary
  // branch_summary / compaction: the summary is falsy in JavaScript terms
  // (absent, "", null, false, 0), so pi skips a branch summary.
  bool summary_empty = true;
  // Whether the fields were present (pi copies undefined, and JSON drops it).
  bool has_provider = false, has_model = false, has_thinking_level = false;
  // With the estimate: how many content blocks have the type "toolCall"; -1 unknown.
  int32_t tool_call_blocks = -1;
  // message entries: pi's token estimate of the message (EstimateMessageTokens),
  // measured while indexing when LoadOptions::message_observer is set; -1 otherwise.
  int64_t estimate = -1;
};

struct SessionHeader {
  int version = 1;  // as on disk (1 when absent)
  std::string id;
  std::string timestamp;
  std::string cwd;
  std::string parent_session;  // empty when absent
  uint32_t line = 1;
};

// A problem found while loading that did not stop the load (tolerant mode).
struct LoadWarning {
  std::string file;
  uint32_t line = 0;
  std::string message;
  // "file:line: message"
  std::string ToString() const;
};

struct LoadOptions {
  // Turn a malformed line into an error instead of skipping it with a warning.
  // A torn last line (no trailing newline, invalid JSON) is always tolerated.
  bool strict = false;
  // Called for every warning, in file order. Default: collected in Session::warnings().
  std::function<void(const LoadWarning&)> on_warning;
  // Called about every 8 MiB while a file is indexed (bytes done, total), for
  // progress display on a terminal.
  std::function<void(size_t, size_t)> on_progress;
  // Also measure every message during the single indexing pass
  // (Entry::estimate, Entry::tool_call_blocks, ForEachFileCall), for callers
  // that will estimate the context or prepare a compaction: they then never
  // read the messages a second time. Pass TokenEstimateObserver()
  // (compactor/estimate.h) for pi's estimate; null = not measured. Not owned;
  // must outlive the load.
  const MessageObserver* message_observer = nullptr;
  // Threads that index the lines: 0 picks (two for files of 16 MiB and more
  // on a machine with two or more cores), 1 reads on the calling thread.
  // The result is the same whatever the number.
  int threads = 0;
  // Where the file is read and the indexing threads come from; null = Env::Default().
  Env* env = nullptr;
  // The most bytes read from a pipe, FIFO or device (`<(cmd)`, /dev/stdin),
  // which have no size to check first: more is kFailedPrecondition "PATH:
  // more than N bytes (the input limit)". Regular files are mapped whatever
  // their size. 1 GiB by default.
  size_t max_stream_bytes = size_t{1} << 30;
};

// What Session::Refresh() did.
struct RefreshResult {
  // Entries indexed by this call: indices [size() - added, size()). After a
  // reload: every entry (added == size()).
  size_t added = 0;
  // The file had to be read again in full (it was replaced, truncated or
  // rewritten in place; it was migrated from v1/v2; or a new entry reused an
  // earlier id or an id an earlier parentId named, which changes how the
  // earlier entries resolve). Every index, Entry reference and view handed
  // out before is invalid then; generation() has grown by one.
  bool reloaded = false;
};

class Session {
 public:
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Opens and indexes a session file. Errors name the file and line:
  // kNotFound (missing), kIoError (unreadable, a directory, truncated by
  // another process while it was read), kCorruption (empty, no session header
  // first, invalid JSON or nesting deeper than 1024 levels with strict),
  // kResourceExhausted (out of memory: never reported as a bad line).
  static Result<std::unique_ptr<Session>> Open(const std::string& path,
                                               const LoadOptions& options = {});
  // kIoError "PATH: truncated by another process while it was read" once
  // another process truncated the mapped file: the bytes read from it since
  // Open (messages echoed, contexts built) cannot be trusted. OK otherwise.
  Status CheckIntact() const;
  // Brings the session up to date with its file: the complete lines appended
  // since the last read (by anyone) are read from the last known offset and
  // indexed in O(new entries): the id map, parents, children, leaf, labels
  // and name as Open would build them for the whole file. A last line without
  // its newline that is not yet valid JSON (a write in progress, or torn) is
  // left for the next call, as Open skips it. One stat() when nothing changed.
  //
  // Without a reload, indices, string views (ids, MessageJson, the views in a
  // SessionContext) and warnings from before stay valid; references to Entry
  // objects (entry(), entries()) do not (the vector may grow). See
  // RefreshResult::reloaded for when everything is read again.
  //
  // Uses the LoadOptions given to Open (env, observer, callbacks: they must
  // still be valid). Errors: kFailedPrecondition for a session not read from
  // a regular file (FromString, pipes); the errors of Open for the new lines
  // (strict mode) and for a reload. On an error the session is unchanged.
  // REQUIRES: no other call on this Session runs concurrently.
  Result<RefreshResult> Refresh();
  // Grows by one with each full reload by Refresh (0 after Open): caches
  // built on this session (ContextCache, context.h) compare it.
  uint64_t generation() const;
  // The identity (device, inode, size, mtime) of the file as of the last
  // read by Open or Refresh; nullopt for a session not read from a regular
  // file. The file's identity still equal to it means nothing was appended
  // to it or rewritten since.
  std::optional<FileIdentity> file_identity() const;
  // Same, over bytes in memory (tests, stdin). `name` is used in messages.
  static Result<std::unique_ptr<Session>> FromString(std::string contents, std::string name,
                                                     const LoadOptions& options = {});

  const std::string& path() const;
  const SessionHeader& header() const;
  // True when the file was v1/v2 and was migrated in memory.
  bool migrated() const;
  const std::vector<LoadWarning>& warnings() const;

  size_t size() const;
  const Entry& entry(size_t index) const;
  const std::vector<Entry>& entries() const;
  // Index of the entry with this id, or nullopt. With duplicate ids the last one
  // in file order wins, as in pi's byId map (duplicates are reported at load).
  std::optional<size_t> Find(std::string_view id) const;
  // pi's leaf after load: the last entry in file order; nullopt when empty.
  std::optional<size_t> Leaf() const;
  // Entry indices from the root to `leaf` (inclusive), following parentId until
  // a null or unknown parent. A cycle ends the walk (reported as a warning at load).
  std::vector<size_t> PathTo(size_t leaf) const;
  // The entry `index`'s parentId resolved, in O(1); nullopt for a root (null,
  // unknown or its own id), as PathTo walks.
  std::optional<size_t> Parent(size_t index) const;
  // Children of each entry in file order (the same shape pi's getTree builds).
  std::vector<std::vector<size_t>> Children() const;
  // Roots: parentId null, equal to own id, or unknown.
  std::vector<size_t> Roots() const;

  // The resolved label of an entry (last label entry for it), if any.
  std::optional<std::string> LabelOf(std::string_view id) const;
  // The session name (latest session_info entry; empty name clears).
  std::optional<std::string> Name() const;

  // Raw JSON of the whole entry line as pi would hold it after migration.
  // For v3 files this is the line's bytes (after invalid UTF-8 replacement);
  // for migrated files the migrated object (original keys, then id, parentId, ...).
  std::string EntryJson(size_t index) const;
  // Raw JSON of a message entry's "message" value (hookMessage renamed to custom
  // for migrated v2 files). Empty for other entry types.
  std::string_view MessageJson(size_t index) const;
  // Raw JSON of a top-level field of an entry, or empty if absent.
  std::string_view FieldJson(size_t index, std::string_view key) const;
  // The read, write and edit tool calls of a message entry that name a
  // non-empty "path", in content order, as the index pass recorded them
  // (LoadOptions::message_observer): calls fn(tool, path) for each, tool
  // being "read", "write" or "edit", and returns true. Returns false when they
  // were not recorded (not measured, or a message only a full parse reads
  // right: escaped names or paths, repeated keys); read MessageJson then.
  bool ForEachFileCall(
      size_t index,
      const std::function<void(std::string_view tool, std::string_view path)>& fn) const;
  // A string field of an entry (unescaped), or nullopt if absent / not a string.
  std::optional<std::string> StringField(size_t index, std::string_view key) const;
  // The header line's JSON (migrated: with the new version).
  std::string HeaderJson() const;

  // Tells the session that the bytes under `view` (a view it handed out, e.g.
  // MessageJson) will not be read again soon: a mapped file gives the pages
  // back to the kernel. The bytes stay valid and readable. Streaming writers
  // call this to keep resident memory flat on large files.
  void ReleaseBytes(std::string_view view) const;

  // The whole file as pi would write it after migration (v3). Identical bytes
  // for a v3 file without malformed lines.
  std::string ToV3Jsonl() const;

  struct Impl;

 private:
  explicit Session(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace compactor

#endif  // COMPACTOR_INCLUDE_COMPACTOR_SESSION_H_
