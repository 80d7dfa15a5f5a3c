// A throwaway PostgreSQL server for the database tests: the one whose URI
// COMPACTOR_TEST_PG_URI names (ctest's StoreDatabase and ScaleOutDatabase
// start it with tests/store/pg_server.sh run), else one this process starts
// with the same script on first use and stops at exit. Each test gets a
// fresh database of it.
#ifndef COMPACTOR_TESTS_SUPPORT_PG_TEST_SERVER_H_
#define COMPACTOR_TESTS_SUPPORT_PG_TEST_SERVER_H_

#include <libpq-fe.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <string>

namespace compactor::testing {

// Runs `cmd` with the shell; its stdout, trimmed; the exit code in *code.
inline std::string RunCapture(const std::string& cmd, int* code) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) {
    *code = -1;
    return out;
  }
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  int st = pclose(p);
  *code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

// The server's URI (postgresql:///postgres?host=DIR&user=compactor), or
// nullopt with the reason in *why (no PostgreSQL binaries: exit 77 of the
// script; a server that did not start).
inline std::optional<std::string> TestPgUri(std::string* why) {
  static std::mutex mu;
  static std::optional<std::string> uri;
  static std::string failure;
  static std::string own_dir;
  std::lock_guard<std::mutex> lock(mu);
  if (uri) return uri;
  if (!failure.empty()) {
    *why = failure;
    return std::nullopt;
  }
  if (const char* env = std::getenv("COMPACTOR_TEST_PG_URI"); env != nullptr && *env != '\0') {
    uri = env;
    return uri;
  }
  char dir[] = "/tmp/compactor-pg.XXXXXX";
  if (mkdtemp(dir) == nullptr) {
    failure = "mkdtemp failed";
    *why = failure;
    return std::nullopt;
  }
  own_dir = dir;
  const std::string script = std::string(COMPACTOR_SOURCE_DIR) + "/tests/store/pg_server.sh";
  int code = 0;
  std::string out = RunCapture(script + " start " + own_dir, &code);
  if (code != 0) {
    failure = code == 77 ? "PostgreSQL's binaries are missing (apt-get install postgresql)"
                         : "the throwaway PostgreSQL server did not start (exit " +
                               std::to_string(code) + ")";
    *why = failure;
    return std::nullopt;
  }
  static const std::string stop = script + " stop " + own_dir;
  std::atexit([] {
    int c = 0;
    RunCapture(stop, &c);
  });
  uri = out;
  return uri;
}

// A URI of a new, empty database of the server at `base` (the form
// TestPgUri returns), or "" with the reason in *why.
inline std::string FreshDatabase(const std::string& base, std::string* why) {
  static std::atomic<int> counter{0};
  const std::string name =
      "t_" + std::to_string(getpid()) + "_" + std::to_string(counter.fetch_add(1));
  PGconn* c = PQconnectdb(base.c_str());
  if (PQstatus(c) != CONNECTION_OK) {
    *why = std::string("cannot connect to the test server: ") + PQerrorMessage(c);
    PQfinish(c);
    return "";
  }
  PGresult* r = PQexec(c, ("CREATE DATABASE " + name + " TEMPLATE template0").c_str());
  bool ok = PQresultStatus(r) == PGRES_COMMAND_OK;
  if (!ok) *why = std::string("CREATE DATABASE failed: ") + PQresultErrorMessage(r);
  PQclear(r);
  PQfinish(c);
  if (!ok) return "";
  const std::string from = "///postgres?";
  std::string uri = base;
  size_t at = uri.find(from);
  if (at == std::string::npos) {
    *why = "unexpected test server URI " + base;
    return "";
  }
  return uri.replace(at, from.size(), "///" + name + "?");
}

// Runs one statement on the database at `uri`: the first value of its
// first row, "" when none; *ok says whether it ran.
inline std::string PgQuery(const std::string& uri, const std::string& sql, bool* ok = nullptr) {
  PGconn* c = PQconnectdb(uri.c_str());
  PGresult* r = PQexec(c, sql.c_str());
  const ExecStatusType st = PQresultStatus(r);
  std::string v;
  if (st == PGRES_TUPLES_OK && PQntuples(r) > 0) v = PQgetvalue(r, 0, 0);
  if (ok != nullptr) *ok = st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK;
  PQclear(r);
  PQfinish(c);
  return v;
}

}  // namespace compactor::testing

#endif  // COMPACTOR_TESTS_SUPPORT_PG_TEST_SERVER_H_
