// The PostgreSQL store (compactor/store.h, docs/store.md): sessions as a row
// (header and the list's view) plus their entry lines in order, the
// conversation index and the summary cache, in one database many servers
// share. Every multi-statement write is one transaction that locks the
// session's row first, so appends of two servers to one session serialize
// and `expected_entries` is checked against what is committed.
//
// Byte columns are bytea and every result is read in binary: session lines
// may hold any bytes (a client's invalid UTF-8 included) and come back as
// they were given.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <utility>

#include "compactor/entries.h"
#include "compactor/store.h"
#include "compactor/writer.h"
#include "store/libpq.h"
#include "store/postgres_schema.h"
#include "store/session_info.h"

namespace compactor {
namespace {

using PgResult = std::unique_ptr<PGresult, pq::ResultDeleter>;

// A statement parameter: text (ints, ids) or binary (bytea contents).
struct Param {
  std::string value;
  bool binary = false;
};
Param Text(std::string v) { return Param{std::move(v), false}; }
Param Bytes(std::string_view v) { return Param{std::string(v), true}; }
Param Int(int64_t v) { return Param{std::to_string(v), false}; }

// Binary results: int8 is 8 bytes big-endian, bool one byte.
int64_t GetInt64(const PGresult* r, int row, int col) {
  const auto* p = reinterpret_cast<const unsigned char*>(pq::Get().getvalue(r, row, col));
  if (pq::Get().getlength(r, row, col) != 8) return 0;
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | p[i];
  return static_cast<int64_t>(v);
}
bool GetBool(const PGresult* r, int row, int col) {
  return pq::Get().getlength(r, row, col) == 1 && pq::Get().getvalue(r, row, col)[0] != 0;
}
std::string GetBytes(const PGresult* r, int row, int col) {
  return std::string(pq::Get().getvalue(r, row, col),
                     static_cast<size_t>(pq::Get().getlength(r, row, col)));
}

std::string OneLineError(const char* text) {
  std::string s = text == nullptr ? "" : text;
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  for (char& c : s)
    if (c == '\n') c = ' ';
  return s;
}

// A pool of connections to one database, at most `max` open. A connection
// that broke is closed when given back; one left inside a transaction (an
// error between BEGIN and COMMIT) is rolled back first.
class Pool {
 public:
  explicit Pool(const PostgresStoreOptions& o) : o_(o), shown_uri_(RedactUri(o.uri)) {}
  ~Pool() {
    for (PGconn* c : idle_) pq::Get().finish(c);
  }
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;

  const std::string& shown_uri() const { return shown_uri_; }

  // A connection for the caller alone, given back by the Lease.
  class Lease {
   public:
    Lease(Pool* pool, PGconn* conn) : pool_(pool), conn_(conn) {}
    Lease(Lease&& o) noexcept : pool_(o.pool_), conn_(std::exchange(o.conn_, nullptr)) {}
    Lease& operator=(Lease&&) = delete;
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    ~Lease() {
      if (conn_ != nullptr) pool_->Release(conn_);
    }
    PGconn* get() const { return conn_; }

   private:
    Pool* pool_;
    PGconn* conn_;
  };

  Result<Lease> Acquire() {
    std::unique_lock<std::mutex> lock(mu_);
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(o_.acquire_timeout_ms);
    while (idle_.empty() && open_ >= std::max(1, o_.max_connections)) {
      if (cv_.wait_until(lock, deadline) == std::cv_status::timeout && idle_.empty() &&
          open_ >= std::max(1, o_.max_connections))
        return Status::Unavailable(shown_uri_ + ": no free database connection after " +
                                   std::to_string(o_.acquire_timeout_ms) + " ms");
    }
    if (!idle_.empty()) {
      PGconn* c = idle_.back();
      idle_.pop_back();
      return Lease(this, c);
    }
    ++open_;
    lock.unlock();
    auto c = Connect();
    if (!c.ok()) {
      lock.lock();
      --open_;
      cv_.notify_one();
      return c.status();
    }
    return Lease(this, *c);
  }

  Result<PGconn*> Connect() const {
    const std::string timeout = std::to_string(o_.connect_timeout_s);
    // connect_timeout first: a value in the URI (expanded from dbname) wins.
    const char* keys[] = {"connect_timeout", "application_name", "dbname", nullptr};
    const char* values[] = {timeout.c_str(), "compactor", o_.uri.c_str(), nullptr};
    PGconn* c = pq::Get().connectdbParams(keys, values, 1);
    if (c == nullptr) return Status::Unavailable(shown_uri_ + ": out of memory for a connection");
    if (pq::Get().status(c) != CONNECTION_OK) {
      std::string why = OneLineError(pq::Get().errorMessage(c));
      pq::Get().finish(c);
      return Status::Unavailable(shown_uri_ + ": cannot connect: " + why);
    }
    // Quiet NOTICEs (CREATE ... IF NOT EXISTS) instead of lines on stderr.
    pq::Get().setNoticeProcessor(
        c, [](void*, const char*) {}, nullptr);
    return c;
  }

 private:
  void Release(PGconn* c) {
    bool healthy = pq::Get().status(c) == CONNECTION_OK;
    if (healthy && pq::Get().transactionStatus(c) != PQTRANS_IDLE) {
      PgResult r(pq::Get().exec(c, "ROLLBACK"));
      healthy = pq::Get().resultStatus(r.get()) == PGRES_COMMAND_OK &&
                pq::Get().transactionStatus(c) == PQTRANS_IDLE;
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (healthy) {
      idle_.push_back(c);
    } else {
      pq::Get().finish(c);
      --open_;
    }
    cv_.notify_one();
  }

  const PostgresStoreOptions o_;
  const std::string shown_uri_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<PGconn*> idle_;  // guarded by mu_
  int open_ = 0;               // connections out and idle; guarded by mu_
};

// Runs `sql` with `params`; results in binary. kIoError naming the failed
// statement's error (the URI never: the caller adds the shown one), or
// kUnavailable when the connection is gone.
Result<PgResult> Exec(PGconn* c, const char* sql, const std::vector<Param>& params = {}) {
  std::vector<const char*> values;
  std::vector<int> lengths, formats;
  for (const Param& p : params) {
    values.push_back(p.value.data());
    lengths.push_back(static_cast<int>(p.value.size()));
    formats.push_back(p.binary ? 1 : 0);
  }
  PgResult r(pq::Get().execParams(c, sql, static_cast<int>(params.size()), nullptr, values.data(),
                                  lengths.data(), formats.data(), 1));
  ExecStatusType st = pq::Get().resultStatus(r.get());
  if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) return r;
  std::string why =
      OneLineError(r ? pq::Get().resultErrorMessage(r.get()) : pq::Get().errorMessage(c));
  if (why.empty()) why = OneLineError(pq::Get().errorMessage(c));
  if (pq::Get().status(c) != CONNECTION_OK)
    return Status::Unavailable("the database connection was lost: " + why);
  return Status::IoError("database: " + why);
}

Status ExecOk(PGconn* c, const char* sql, const std::vector<Param>& params = {}) {
  auto r = Exec(c, sql, params);
  return r.ok() ? Status::Ok() : r.status();
}

// A session's bytes split into its header line and its entry lines. Blank
// lines are dropped, so the stored line count is the entry count callers
// compare with `expected_entries` (Session::size()).
struct SplitSession {
  std::string header;
  std::vector<std::string> lines;
};
SplitSession Split(std::string_view jsonl) {
  SplitSession out;
  bool first = true;
  while (!jsonl.empty()) {
    size_t nl = jsonl.find('\n');
    std::string_view line = jsonl.substr(0, nl);
    jsonl.remove_prefix(nl == std::string_view::npos ? jsonl.size() : nl + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find_first_not_of(" \t") == std::string_view::npos) continue;
    if (first) {
      out.header = std::string(line);
      first = false;
    } else {
      out.lines.emplace_back(line);
    }
  }
  return out;
}

// The list's view of a session row, kept current by every write.
struct RowInfo {
  int64_t entries = 0;
  int64_t size_bytes = 0;
  std::string title;
  bool named = false;
  int64_t last_activity_ms = 0;
};

// `row` after `lines` were appended to it.
RowInfo Merge(RowInfo row, const std::vector<std::string>& lines) {
  std::string bytes = "{}\n";
  for (const std::string& l : lines) bytes += l + "\n";
  StoredSessionInfo chunk;
  store_internal::FillFromBytes(bytes, &chunk);
  row.entries += static_cast<int64_t>(lines.size());
  row.size_bytes += static_cast<int64_t>(bytes.size() - 3);
  if (chunk.named) {
    row.title = chunk.title;
    row.named = true;
  } else if (!row.named && row.title.empty()) {
    row.title = chunk.title;
  }
  if (chunk.last_activity_ms > 0) row.last_activity_ms = chunk.last_activity_ms;
  return row;
}

// FNV-1a, 64 bits: the advisory lock key of a summary key. Summary locks
// share the lock space with the migration lock (one fixed key), a
// collision only serializes two summaries.
int64_t LockKey(std::string_view key) {
  uint64_t h = 1469598103934665603ull;
  for (char c : key) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return static_cast<int64_t>(h);
}

// Holds the session's advisory lock. Released explicitly (the unlock has
// taken effect when it returns; a closed connection's locks go only when
// its backend exits, a moment later), and by the close whatever happens.
class LockClaim final : public SummaryClaim {
 public:
  LockClaim(PGconn* c, int64_t key) : c_(c), key_(key) {}
  ~LockClaim() override {
    const std::string sql = "SELECT pg_advisory_unlock(" + std::to_string(key_) + ")";
    pq::Get().clear(pq::Get().exec(c_, sql.c_str()));
    pq::Get().finish(c_);
  }

 private:
  PGconn* c_;
  int64_t key_;
};

class PostgresStore final : public SessionStore {
 public:
  explicit PostgresStore(const PostgresStoreOptions& o)
      : o_(o), env_(EnvOrDefault(o.env)), pool_(o) {}

  Status Open() {
    COMPACTOR_ASSIGN_OR_RETURN(Pool::Lease lease, pool_.Acquire());
    return Named(postgres_schema::Migrate(lease.get()));
  }

  Result<std::vector<StoredSessionInfo>> List() override {
    COMPACTOR_ASSIGN_OR_RETURN(Pool::Lease lease, pool_.Acquire());
    auto r = Exec(lease.get(),
                  "SELECT id, size_bytes, entries, title, named, last_activity_ms "
                  "FROM compactor_sessions ORDER BY last_activity_ms DESC, id");
    if (!r.ok()) return Named(r.status());
    std::vector<StoredSessionInfo> out;
    const int n = pq::Get().ntuples(r->get());
    out.reserve(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) out.push_back(InfoOfRow(r->get(), i));
    return out;
  }

  Result<StoredSessionInfo> Info(std::string_view id) override {
    COMPACTOR_ASSIGN_OR_RETURN(Pool::Lease lease, pool_.Acquire());
    auto r = Exec(lease.get(),
                  "SELECT id, size_bytes, entries, title, named, last_activity_ms "
                  "FROM compactor_sessions WHERE id = $1",
                  {Text(std::string(id))});
    if (!r.ok()) return Named(r.status());
    if (pq::Get().ntuples(r->get()) == 0) return NotFound(id);
    return InfoOfRow(r->get(), 0);
  }

  Result<bool> ReadOnly(std::string_view id) override {
    COMPACTOR_RETURN_IF_ERROR(Info(id).status());
    return false;  // every session of the database is writable
  }

  Result<std::unique_ptr<Session>> Load(std::string_view id, const LoadOptions& options) override {
    COMPACTOR_ASSIGN_OR_RETURN(std::string text, Export(id));
    LoadOptions lo = options;
    lo.env = env_;
    return Session::FromString(std::move(text), PathOf(id), lo);
  }

  Result<std::string> Create(std::string_view wanted, std::string_view cwd,
                             const std::vector<std::string>& lines) override {
    std::string id = wanted.empty() ? NewUuidV7(env_) : std::string(wanted);
    if (!store_internal::SafeSessionId(id))
      return Status::InvalidArgument("the session id cannot name a file: " + id);
    std::string header = MakeSessionHeader({id, NowIsoTimestamp(env_), std::string(cwd), ""});
    COMPACTOR_RETURN_IF_ERROR(Insert(id, header, lines));
    return id;
  }

  Result<std::string> Import(std::string_view jsonl) override {
    COMPACTOR_ASSIGN_OR_RETURN(std::string id, store_internal::ImportedSessionId(jsonl));
    SplitSession split = Split(jsonl);
    COMPACTOR_RETURN_IF_ERROR(Insert(id, split.header, split.lines));
    return id;
  }

  Status Append(std::string_view id, const std::vector<std::string>& lines,
                const StoreAppendOptions& options) override {
    COMPACTOR_ASSIGN_OR_RETURN(Pool::Lease lease, pool_.Acquire());
    PGconn* c = lease.get();
    COMPACTOR_RETURN_IF_ERROR(Named(ExecOk(c, "BEGIN")));
    COMPACTOR_ASSIGN_OR_RETURN(RowInfo row, LockRow(c, id));
    if (options.expected_entries && static_cast<int64_t>(*options.expected_entries) != row.entries)
      return Changed(id, *options.expected_entries, row.entries);
    COMPACTOR_RETURN_IF_ERROR(InsertLines(c, id, row.entries, lines));
    COMPACTOR_RETURN_IF_ERROR(UpdateRow(c, id, Merge(std::move(row), lines)));
    return Named(ExecOk(c, "COMMIT"));  // durable: synchronous_commit (options.sync holds)
  }

  Status Replace(std::string_view id, std::string_view jsonl,
                 std::optional<size_t> expected_entries) override {
    auto s = Session::FromString(std::string(jsonl), PathOf(id));
    if (!s.ok()) return Status::InvalidArgument(s.status().message());
    if ((*s)->header().id != id)
      return Status::InvalidArgument("the new contents of session " + std::string(id) +
                                     " have the header id " + (*s)->header().id);
    SplitSession split = Split(jsonl);
    COMPACTOR_ASSIGN_OR_RETURN(Pool::Lease lease, pool_.Acquire());
    PGconn* c = lease.get();
    COMPACTOR_RETURN_IF_ERROR(Named(ExecOk(c, "BEGIN")));
    // The row lock keeps every other writer out until COMMIT: no append can
    // land between the check and the rewrite, so none is lost.
    COMPACTOR_ASSIGN_OR_RETURN(RowInfo row, LockRow(c, id));
    if (expected_entries && static_cast<int64_t>(*expected_entries) != row.entries)
      return Changed(id, *expected_entries, row.entries);
    COMPACTOR_RETURN_IF_ERROR(Named(
        ExecOk(c, "DELETE FROM compactor_entries WHERE session_id = $1", {Text(std::string(id))})));
    COMPACTOR_RETURN_IF_ERROR(
        Named(ExecOk(c, "UPDATE compactor_sessions SET header = $2 WHERE id = $1",
                     {Text(std::string(id)), Bytes(split.header)})));
    COMPACTOR_RETURN_IF_ERROR(InsertLines(c, id, 0, split.lines));
    RowInfo fresh;
    fresh.size_bytes = static_cast<int64_t>(split.header.size() + 1);
    fresh.last_activity_ms = row.last_activity_ms;
    COMPACTOR_RETURN_IF_ERROR(UpdateRow(c, id, Merge(std::move(fresh), split.lines)));
    return Named(ExecOk(c, "COMMIT"));
  }

  Status SetConversation(std::string_view conversation, std::string_view session_id) override {
    COMPACTOR_ASSIGN_OR_RETURN(Pool::Lease lease, pool_.Acquire());
    return Named(ExecOk(lease.get(),
                        "INSERT INTO compactor_conversations (conversation, session_id) "
                        "VALUES ($1, $2) ON CONFLICT (conversation) "
                        "DO UPDATE SET session_id = EXCLUDED.session_id",
                        {Bytes(conversation), Text(std::string(session_id))}));
  }

  Result<std::string> ClaimConversation(std::string_view conversation,
                                        std::string_view session_id) override {
    {
      COMPACTOR_ASSIGN_OR_RETURN(Pool::Lease lease, pool_.Acquire());
      // One statement: the insert when absent, else the row that is there.
      auto r = Exec(lease.get(),
                    "WITH ins AS (INSERT INTO compactor_conversations (conversation, session_id) "
                    "VALUES ($1, $2) ON CONFLICT (conversation) DO NOTHING RETURNING session_id) "
                    "SELECT session_id::bytea FROM ins UNION ALL "
                    "SELECT session_id::bytea FROM compactor_conversations WHERE conversation = $1 "
                    "AND NOT EXISTS (SELECT 1 FROM ins)",
                    {Bytes(conversation), Text(std::string(session_id))});
      if (!r.ok()) return Named(r.status());
      if (pq::Get().ntuples(r->get()) == 1) return GetBytes(r->get(), 0, 0);
    }
    // A concurrent claim committed while this one waited on it: the
    // statement's snapshot predates that row; a new statement sees it.
    auto again = FindConversation(conversation);
    if (!again) return Named(Status::IoError("the conversation claim found no row"));
    return *again;
  }

  std::optional<std::string> FindConversation(std::string_view conversation) override {
    auto lease = pool_.Acquire();
    if (!lease.ok()) return std::nullopt;
    auto r = Exec(lease->get(),
                  "SELECT session_id::bytea FROM compactor_conversations WHERE conversation = $1",
                  {Bytes(conversation)});
    if (!r.ok() || pq::Get().ntuples(r->get()) == 0) return std::nullopt;
    return GetBytes(r->get(), 0, 0);
  }

  Status PutSummary(std::string_view key, std::string_view summary) override {
    COMPACTOR_ASSIGN_OR_RETURN(Pool::Lease lease, pool_.Acquire());
    return Named(ExecOk(lease.get(),
                        "INSERT INTO compactor_summaries (key, summary) VALUES ($1, $2) "
                        "ON CONFLICT (key) DO UPDATE SET summary = EXCLUDED.summary",
                        {Bytes(key), Bytes(summary)}));
  }

  // An advisory lock on the key's 64-bit hash, on a connection of its own
  // (outside the pool: a summary takes seconds, the pool's connections are
  // for short statements) held until the claim ends.
  Result<std::unique_ptr<SummaryClaim>> TryClaimSummary(std::string_view key) override {
    COMPACTOR_ASSIGN_OR_RETURN(PGconn * c, pool_.Connect());
    const int64_t lock = LockKey(key);
    auto r = Exec(c, "SELECT pg_try_advisory_lock($1::bigint)", {Int(lock)});
    if (!r.ok()) {
      pq::Get().finish(c);
      return Named(r.status());
    }
    if (!GetBool(r->get(), 0, 0)) {
      pq::Get().finish(c);
      return std::unique_ptr<SummaryClaim>();
    }
    return std::unique_ptr<SummaryClaim>(std::make_unique<LockClaim>(c, lock));
  }

  std::optional<std::string> FindSummary(std::string_view key) override {
    auto lease = pool_.Acquire();
    if (!lease.ok()) return std::nullopt;
    auto r =
        Exec(lease->get(), "SELECT summary FROM compactor_summaries WHERE key = $1", {Bytes(key)});
    if (!r.ok() || pq::Get().ntuples(r->get()) == 0) return std::nullopt;
    return GetBytes(r->get(), 0, 0);
  }

  // The whole session as a pi session file, from one snapshot (a single
  // statement sees one consistent state of both tables).
  Result<std::string> Export(std::string_view id) override {
    COMPACTOR_ASSIGN_OR_RETURN(Pool::Lease lease, pool_.Acquire());
    auto r = Exec(lease.get(),
                  "SELECT s.header, e.line FROM compactor_sessions s "
                  "LEFT JOIN compactor_entries e ON e.session_id = s.id "
                  "WHERE s.id = $1 ORDER BY e.seq",
                  {Text(std::string(id))});
    if (!r.ok()) return Named(r.status());
    const int n = pq::Get().ntuples(r->get());
    if (n == 0) return NotFound(id);
    std::string text = GetBytes(r->get(), 0, 0) + "\n";
    for (int i = 0; i < n; ++i) {
      if (pq::Get().getisnull(r->get(), i, 1)) continue;  // no entries: the header alone
      text.append(pq::Get().getvalue(r->get(), i, 1),
                  static_cast<size_t>(pq::Get().getlength(r->get(), i, 1)));
      text += '\n';
    }
    return text;
  }

 private:
  // A new session row with its lines, in one transaction.
  Status Insert(const std::string& id, const std::string& header,
                const std::vector<std::string>& lines) {
    COMPACTOR_ASSIGN_OR_RETURN(Pool::Lease lease, pool_.Acquire());
    PGconn* c = lease.get();
    COMPACTOR_RETURN_IF_ERROR(Named(ExecOk(c, "BEGIN")));
    const int64_t now_ms = env_->NowMs();
    auto r =
        Exec(c,
             "INSERT INTO compactor_sessions (id, header, size_bytes, last_activity_ms, "
             "created_ms) VALUES ($1, $2, $3, $4, $4) ON CONFLICT (id) DO NOTHING",
             {Text(id), Bytes(header), Int(static_cast<int64_t>(header.size() + 1)), Int(now_ms)});
    if (!r.ok()) return Named(r.status());
    if (std::string_view(pq::Get().cmdTuples(r->get())) != "1")
      return Status::FailedPrecondition("session " + id + " exists");
    COMPACTOR_RETURN_IF_ERROR(InsertLines(c, id, 0, lines));
    RowInfo row;
    row.size_bytes = static_cast<int64_t>(header.size() + 1);
    row.last_activity_ms = now_ms;
    COMPACTOR_RETURN_IF_ERROR(UpdateRow(c, id, Merge(std::move(row), lines)));
    return Named(ExecOk(c, "COMMIT"));
  }

  // Locks the session's row for this transaction and reads it.
  Result<RowInfo> LockRow(PGconn* c, std::string_view id) {
    auto r = Exec(c,
                  "SELECT entries, size_bytes, title, named, last_activity_ms "
                  "FROM compactor_sessions WHERE id = $1 FOR UPDATE",
                  {Text(std::string(id))});
    if (!r.ok()) return Named(r.status());
    if (pq::Get().ntuples(r->get()) == 0) return NotFound(id);
    RowInfo row;
    row.entries = GetInt64(r->get(), 0, 0);
    row.size_bytes = GetInt64(r->get(), 0, 1);
    row.title = GetBytes(r->get(), 0, 2);
    row.named = GetBool(r->get(), 0, 3);
    row.last_activity_ms = GetInt64(r->get(), 0, 4);
    return row;
  }

  // Inserts `lines` as entries first_seq, first_seq + 1, ...: many rows a
  // statement (a statement takes at most 65535 parameters).
  Status InsertLines(PGconn* c, std::string_view id, int64_t first_seq,
                     const std::vector<std::string>& lines) {
    constexpr size_t kRowsPerStatement = 2000;
    for (size_t begin = 0; begin < lines.size(); begin += kRowsPerStatement) {
      const size_t end = std::min(lines.size(), begin + kRowsPerStatement);
      std::string sql = "INSERT INTO compactor_entries (session_id, seq, line) VALUES ";
      std::vector<Param> params{Text(std::string(id))};
      for (size_t i = begin; i < end; ++i) {
        if (i > begin) sql += ",";
        sql += "($1,$" + std::to_string(params.size() + 1) + "::bigint,$" +
               std::to_string(params.size() + 2) + ")";
        params.push_back(Int(first_seq + static_cast<int64_t>(i)));
        params.push_back(Bytes(lines[i]));
      }
      COMPACTOR_RETURN_IF_ERROR(Named(ExecOk(c, sql.c_str(), params)));
    }
    return Status::Ok();
  }

  Status UpdateRow(PGconn* c, std::string_view id, const RowInfo& row) {
    return Named(
        ExecOk(c,
               "UPDATE compactor_sessions SET entries = $2::bigint, size_bytes = "
               "$3::bigint, title = $4, named = $5::boolean, last_activity_ms = "
               "$6::bigint WHERE id = $1",
               {Text(std::string(id)), Int(row.entries), Int(row.size_bytes), Bytes(row.title),
                Text(row.named ? "true" : "false"), Int(row.last_activity_ms)}));
  }

  StoredSessionInfo InfoOfRow(const PGresult* r, int i) const {
    StoredSessionInfo info;
    info.id =
        std::string(pq::Get().getvalue(r, i, 0), static_cast<size_t>(pq::Get().getlength(r, i, 0)));
    info.path = PathOf(info.id);
    info.size_bytes = static_cast<uint64_t>(GetInt64(r, i, 1));
    info.entries = static_cast<size_t>(GetInt64(r, i, 2));
    info.title = GetBytes(r, i, 3);
    info.named = GetBool(r, i, 4);
    info.last_activity_ms = GetInt64(r, i, 5);
    return info;
  }

  // Where a session lives, as the list shows it: the URI (no password) and
  // the id as its fragment.
  std::string PathOf(std::string_view id) const {
    return pool_.shown_uri() + "#" + std::string(id);
  }

  // `s` with the shown URI in front (never the password).
  Status Named(const Status& s) const {
    if (s.ok()) return s;
    return Status(s.code(), pool_.shown_uri() + ": " + s.message());
  }

  static Status NotFound(std::string_view id) {
    return Status::NotFound("no session " + std::string(id));
  }
  static Status Changed(std::string_view id, size_t expected, int64_t now) {
    return Status::FailedPrecondition("session " + std::string(id) +
                                      " changed since it was read (" + std::to_string(expected) +
                                      " entries then, " + std::to_string(now) + " now)");
  }

  const PostgresStoreOptions o_;
  Env* const env_;
  Pool pool_;
};

}  // namespace

bool IsPostgresUri(std::string_view spec) {
  return spec.starts_with("postgres://") || spec.starts_with("postgresql://");
}

std::string RedactUri(std::string_view uri) {
  std::string out(uri);
  // user:PASSWORD@ in the authority.
  const size_t scheme = out.find("://");
  if (scheme != std::string::npos) {
    const size_t begin = scheme + 3;
    const size_t end = out.find_first_of("/?#", begin);
    const size_t at = out.rfind('@', end == std::string::npos ? out.size() : end);
    if (at != std::string::npos && at >= begin) {
      const size_t colon = out.find(':', begin);
      if (colon != std::string::npos && colon < at) out.replace(colon + 1, at - colon - 1, "***");
    }
  }
  // password=... among the query parameters.
  for (size_t at = out.find("password="); at != std::string::npos;
       at = out.find("password=", at + 1)) {
    if (at > 0 && out[at - 1] != '?' && out[at - 1] != '&') continue;
    const size_t value = at + 9;
    const size_t end = out.find_first_of("&#", value);
    out.replace(value, (end == std::string::npos ? out.size() : end) - value, "***");
  }
  return out;
}

Result<std::unique_ptr<SessionStore>> NewPostgresStore(const PostgresStoreOptions& options) {
  if (!IsPostgresUri(options.uri))
    return Status::InvalidArgument("not a PostgreSQL URI (postgres://...): " +
                                   RedactUri(options.uri));
  COMPACTOR_RETURN_IF_ERROR(pq::Load());
  auto store = std::make_unique<PostgresStore>(options);
  COMPACTOR_RETURN_IF_ERROR(store->Open());
  return std::unique_ptr<SessionStore>(std::move(store));
}

Result<std::unique_ptr<SessionStore>> OpenStore(const StoreSpec& spec) {
  if (IsPostgresUri(spec.store)) {
    if (!spec.read_only_dirs.empty())
      return Status::InvalidArgument(
          "read-only session directories need a directory store, not a database");
    PostgresStoreOptions o;
    o.uri = spec.store;
    o.env = spec.env;
    return NewPostgresStore(o);
  }
  DirectoryStoreOptions o;
  o.dir = spec.store;
  o.read_only_dirs = spec.read_only_dirs;
  o.env = spec.env;
  return NewDirectoryStore(o);
}

}  // namespace compactor
