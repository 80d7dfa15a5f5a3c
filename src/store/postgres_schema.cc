// The schema of the PostgreSQL store, as migrations applied in order.
#include "store/postgres_schema.h"

#include <memory>
#include <string>

#include "store/libpq.h"

namespace compactor::postgres_schema {
namespace {

struct Migration {
  int version;
  const char* description;
  const char* sql;  // one or more statements, run in the migration's transaction
};

// Append only: a released migration is never edited; a change is a new one.
constexpr Migration kMigrations[] = {
    {1, "sessions, entries, conversation index, summary cache",
     "CREATE TABLE compactor_sessions ("
     "  id text PRIMARY KEY,"
     "  header bytea NOT NULL,"
     "  entries bigint NOT NULL DEFAULT 0,"
     "  size_bytes bigint NOT NULL,"
     "  title bytea NOT NULL DEFAULT ''::bytea,"
     "  named boolean NOT NULL DEFAULT false,"
     "  last_activity_ms bigint NOT NULL,"
     "  created_ms bigint NOT NULL);"
     "CREATE INDEX compactor_sessions_activity ON compactor_sessions (last_activity_ms DESC, id);"
     "CREATE TABLE compactor_entries ("
     "  session_id text NOT NULL REFERENCES compactor_sessions (id) ON DELETE CASCADE,"
     "  seq bigint NOT NULL,"
     "  line bytea NOT NULL,"
     "  PRIMARY KEY (session_id, seq));"
     "CREATE TABLE compactor_conversations ("
     "  conversation bytea PRIMARY KEY,"
     "  session_id text NOT NULL);"
     "CREATE TABLE compactor_summaries ("
     "  key bytea PRIMARY KEY,"
     "  summary bytea NOT NULL);"},
};

// The advisory lock key of migrations: "compactr" as a 64-bit number.
constexpr const char* kMigrationLock = "SELECT pg_advisory_xact_lock(7165064483209884274)";

using PgResult = std::unique_ptr<PGresult, pq::ResultDeleter>;

Status Run(PGconn* c, const char* sql) {
  PgResult r(pq::Get().exec(c, sql));
  ExecStatusType st = pq::Get().resultStatus(r.get());
  if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) return Status::Ok();
  std::string why = r ? pq::Get().resultErrorMessage(r.get()) : pq::Get().errorMessage(c);
  while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.pop_back();
  if (pq::Get().status(c) != CONNECTION_OK)
    return Status::Unavailable("the database connection was lost: " + why);
  return Status::IoError("schema migration: " + why);
}

// The newest version recorded, in the open transaction.
Result<int> Recorded(PGconn* c) {
  PgResult r(pq::Get().exec(c, "SELECT coalesce(max(version), 0) FROM compactor_schema"));
  if (pq::Get().resultStatus(r.get()) != PGRES_TUPLES_OK || pq::Get().ntuples(r.get()) != 1)
    return Status::IoError(std::string("schema migration: ") +
                           pq::Get().resultErrorMessage(r.get()));
  return std::stoi(pq::Get().getvalue(r.get(), 0, 0));
}

// One step: the next migration if one is due, in a transaction. Sets
// `*done` when the schema is current.
Status Step(PGconn* c, bool* done) {
  COMPACTOR_RETURN_IF_ERROR(Run(c, "BEGIN"));
  Status s = [&]() -> Status {
    COMPACTOR_RETURN_IF_ERROR(Run(c, kMigrationLock));
    COMPACTOR_RETURN_IF_ERROR(Run(c,
                                  "CREATE TABLE IF NOT EXISTS compactor_schema ("
                                  "  version integer PRIMARY KEY,"
                                  "  description text NOT NULL,"
                                  "  applied_at timestamptz NOT NULL DEFAULT now())"));
    COMPACTOR_ASSIGN_OR_RETURN(int version, Recorded(c));
    if (version > KnownVersion())
      return Status::FailedPrecondition(
          "the database's compactor schema is version " + std::to_string(version) +
          ", newer than this compactor knows (" + std::to_string(KnownVersion()) +
          "): use a newer compactor");
    if (version == KnownVersion()) {
      *done = true;
      return Status::Ok();
    }
    const Migration& m = kMigrations[version];  // versions are 1, 2, ... in order
    COMPACTOR_RETURN_IF_ERROR(Run(c, m.sql));
    std::string record = "INSERT INTO compactor_schema (version, description) VALUES (" +
                         std::to_string(m.version) + ", '" + m.description + "')";
    return Run(c, record.c_str());
  }();
  if (!s.ok()) {
    PgResult r(pq::Get().exec(c, "ROLLBACK"));
    return s;
  }
  return Run(c, "COMMIT");
}

}  // namespace

int KnownVersion() { return static_cast<int>(std::size(kMigrations)); }

Status Migrate(PGconn* c) {
  bool done = false;
  for (int step = 0; !done && step <= KnownVersion(); ++step)
    COMPACTOR_RETURN_IF_ERROR(Step(c, &done));
  return done ? Status::Ok() : Status::IoError("schema migration did not converge");
}

}  // namespace compactor::postgres_schema
