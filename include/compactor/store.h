// A store of pi sessions addressed by their session id (the header's `id`),
// what `compactor serve` records proxied conversations into and serves
// through its service API (docs/api.md). Two kinds are planned: the
// directory of pi session files (NewDirectoryStore, the default, embedded)
// and a database shared by many servers; both implement SessionStore, so the
// service and the recorder never see which one they use. OpenStore picks
// one from a `--store` value (a directory or a postgres:// URI);
// docs/store.md is the contract of both.
//
// Every write keeps the write protocol of session files (docs/reliability.md):
// appends are whole lines under the session's sidecar lock, new sessions and
// rewrites are atomic replacements; nothing is ever truncated.
//
// Thread safety: a SessionStore may be used from any number of threads at
// once. A Session returned by Load belongs to the caller.
#ifndef COMPACTOR_INCLUDE_COMPACTOR_STORE_H_
#define COMPACTOR_INCLUDE_COMPACTOR_STORE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compactor/env.h"
#include "compactor/session.h"
#include "compactor/status.h"

namespace compactor {

// What the session list shows of a session.
struct StoredSessionInfo {
  std::string id;    // the header's id
  std::string path;  // where it lives (a file path for the directory store)
  // The session's name (its last session_info entry), else the text of its
  // first user message (one line, at most 200 bytes), else "".
  std::string title;
  bool named = false;            // `title` is a name, not a first prompt
  uint64_t size_bytes = 0;       // as stored
  size_t entries = 0;            // entries after the header
  int64_t last_activity_ms = 0;  // the newest entry's timestamp, else the file's mtime
  bool read_only = false;        // served from a read-only source: writes are refused
};

struct StoreAppendOptions {
  // fsync before returning (a batch of records is synced once).
  bool sync = false;
  // The number of entries the caller's copy of the session had when it
  // computed the lines (Session::size()): when the session has another
  // number now, nothing is written and the answer is kFailedPrecondition
  // ("changed since it was read"). nullopt: append whatever the session holds.
  std::optional<size_t> expected_entries;
  // The caller's copy of the session, read from this store, whose size() is
  // expected_entries (null: none). A store that can tell from it that the
  // session has not changed since it was read appends without reading the
  // session again to count its entries (the directory store compares the
  // file's identity with Session::file_identity()): an append to a large
  // loaded session then costs what the new lines cost.
  const Session* loaded = nullptr;
};

// A claim on writing one summary (SessionStore::TryClaimSummary), held
// until destroyed.
class SummaryClaim {
 public:
  virtual ~SummaryClaim() = default;
  SummaryClaim(const SummaryClaim&) = delete;
  SummaryClaim& operator=(const SummaryClaim&) = delete;

 protected:
  SummaryClaim() = default;
};

class SessionStore {
 public:
  virtual ~SessionStore() = default;
  SessionStore(const SessionStore&) = delete;
  SessionStore& operator=(const SessionStore&) = delete;

  // Every session, newest activity first.
  virtual Result<std::vector<StoredSessionInfo>> List() = 0;
  // One session's line of the list. kNotFound for an unknown id.
  virtual Result<StoredSessionInfo> Info(std::string_view id) = 0;
  // Whether writes to the session are refused (it comes from a read-only
  // source). kNotFound for an unknown id.
  virtual Result<bool> ReadOnly(std::string_view id) = 0;
  // The whole session, loaded. kNotFound for an unknown id; load errors as
  // Session::Open.
  virtual Result<std::unique_ptr<Session>> Load(std::string_view id,
                                                const LoadOptions& options = {}) = 0;
  // A new writable session: a v3 header with the id `id` (empty: a fresh
  // UUIDv7; otherwise 1..128 characters of A-Z a-z 0-9 . _ - not starting
  // with '.', and not taken) and `cwd`, followed by `lines` (complete entry
  // lines without newlines), durable when this returns. Returns the id.
  // kInvalidArgument for a bad id, kFailedPrecondition for a taken one.
  virtual Result<std::string> Create(std::string_view id, std::string_view cwd,
                                     const std::vector<std::string>& lines) = 0;
  // A new writable session holding `jsonl` as it is (a whole session file
  // whose header has an id no stored session has). Returns its id.
  // kInvalidArgument when it is not a session; kFailedPrecondition when the
  // id exists.
  virtual Result<std::string> Import(std::string_view jsonl) = 0;
  // The session as a pi session file (header line, then one entry a line,
  // each ending in a newline): the directory store's file as it is (a torn
  // last line left out, as readers skip it), the database's rows in order.
  // Loading it builds the same session as Load. kNotFound for an unknown id.
  virtual Result<std::string> Export(std::string_view id) = 0;
  // Appends complete entry lines (without newlines). kNotFound, or
  // kFailedPrecondition for a read-only session or one changed since the
  // caller read it (options.expected_entries).
  virtual Status Append(std::string_view id, const std::vector<std::string>& lines,
                        const StoreAppendOptions& options = {}) = 0;
  // Replaces the whole session with `jsonl` (same header id), keeping what
  // other writers append meanwhile. Errors as Append.
  virtual Status Replace(std::string_view id, std::string_view jsonl,
                         std::optional<size_t> expected_entries) = 0;

  // The conversation index of the recorder (serve): which session records
  // the proxied conversation `conversation` (any string a client uses to
  // name it). Durable when SetConversation returns; survives restarts.
  // FindConversation: nullopt when the conversation is not known.
  virtual Status SetConversation(std::string_view conversation, std::string_view session_id) = 0;
  virtual std::optional<std::string> FindConversation(std::string_view conversation) = 0;
  // Records `session_id` for `conversation` unless the index names a
  // session for it already; returns the session the index names now. Atomic
  // in both stores (many servers may race for a new conversation: one wins).
  virtual Result<std::string> ClaimConversation(std::string_view conversation,
                                                std::string_view session_id) = 0;

  // The summary cache of the proxy: summary texts by key (the hash of the
  // conversation items a summary replaced), so that a conversation the
  // proxy forgot (evicted, restarted) gets the identical summary bytes
  // again, and Codex's compaction items can refer to their summary. Durable
  // when PutSummary returns; survives restarts; a key put again keeps the
  // last text. The defaults are a store without a cache: PutSummary is
  // kUnsupported, FindSummary finds nothing.
  virtual Status PutSummary(std::string_view key, std::string_view summary);
  virtual std::optional<std::string> FindSummary(std::string_view key);
  // So that each prefix is summarized once by all the servers sharing the
  // store: the right to write the summary of `key`, held while the claim
  // lives. nullptr (not an error) when someone else holds it: wait for
  // their PutSummary (FindSummary), bounded, then summarize anyway. The
  // directory store claims within its process, the database with an
  // advisory lock (released when the holder's connection ends, so a server
  // that dies leaves no claim behind). The default claims always.
  virtual Result<std::unique_ptr<SummaryClaim>> TryClaimSummary(std::string_view key);

 protected:
  SessionStore() = default;
};

struct DirectoryStoreOptions {
  // The writable directory: new sessions are created here (mode 0600), and
  // every pi session file under it, recursively, is a writable session.
  // Created when missing. Empty: no writable directory (Create fails).
  std::string dir;
  // More directories whose session files are served read-only.
  std::vector<std::string> read_only_dirs;
  // How deep directories are searched (symlinked directories are followed,
  // so a loop ends here).
  int max_depth = 8;
  Env* env = nullptr;  // null = Env::Default()
};

// The directory store: a session is a `*.jsonl` file whose first line is a
// pi session header; its id is the header's `id`. The index (id -> file) is
// built when the store opens and kept current: by the store's own writes,
// and by a new scan whenever an id is not found and on every List (a scan
// reads only the first line of files it has not seen; a file whose identity
// did not change is not read again). Names starting with '.' are skipped
// (backups end in `.bak`, so they are not sessions). When two files have
// the same id, the writable directory wins, then the first path in byte
// order. The conversation index is the file `.compactor/conversations.jsonl`
// of the writable directory (one {"conversation","session"} object a line,
// appended; the last line of a conversation wins), the summary cache its
// `.compactor/summaries.jsonl` (one {"key","summary"} object a line, the
// same way). Errors: the writable
// directory cannot be created, the conversation index cannot be read.
Result<std::unique_ptr<SessionStore>> NewDirectoryStore(const DirectoryStoreOptions& options);

struct PostgresStoreOptions {
  // A libpq connection URI: postgres://[user[:password]@][host][:port][/db][?k=v&...]
  // (a unix socket: ?host=/path/to/dir). Never printed with its password.
  std::string uri;
  // Connections opened at most; a caller past it waits for one to be given
  // back (at most `acquire_timeout_ms`, then kUnavailable): 8.
  int max_connections = 8;
  // The longest a caller waits for a free connection: 30 s.
  int64_t acquire_timeout_ms = 30'000;
  // libpq's connect_timeout when the URI sets none: 10 s.
  int connect_timeout_s = 10;
  Env* env = nullptr;  // clocks and ids; null = Env::Default()
};

// The PostgreSQL store: sessions, their entries (append-only lines in
// order, appended in transactions), the conversation index and the summary
// cache in tables of the database the URI names, shared by every server
// that opens the same URI. The schema is created and migrated when the
// store opens (docs/store.md): each migration once, in a transaction;
// a database whose schema is newer than this binary knows is refused
// (kFailedPrecondition). Errors: kUnavailable when the server cannot be
// reached, kIoError for a failed statement; messages show the URI without
// its password.
Result<std::unique_ptr<SessionStore>> NewPostgresStore(const PostgresStoreOptions& options);

// Whether `spec` (a --store value) is a PostgreSQL URI: it starts with
// postgres:// or postgresql://.
bool IsPostgresUri(std::string_view spec);
// `uri` with its password (user:PASSWORD@ and ?password=...) replaced by ***.
std::string RedactUri(std::string_view uri);

struct StoreSpec {
  // A directory (NewDirectoryStore's `dir`) or a postgres:// URI.
  std::string store;
  // Read-only session directories (a directory store only: with a database
  // they are kInvalidArgument).
  std::vector<std::string> read_only_dirs;
  Env* env = nullptr;
};

// The store a `--store` value names: NewPostgresStore for a PostgreSQL URI,
// else NewDirectoryStore. Errors as theirs.
Result<std::unique_ptr<SessionStore>> OpenStore(const StoreSpec& spec);

}  // namespace compactor

#endif  // COMPACTOR_INCLUDE_COMPACTOR_STORE_H_
