// Load figures of the two session stores side by side (docs/benchmarks.md,
// "Session stores"): appends/s and context requests/s (load the session,
// build its context) with p50/p99 latency at 1, 16 and 64 concurrent
// clients, for the directory store and the PostgreSQL store.
//
//   tests/store/pg_server.sh run build/store_bench [--seconds S] [--quick]
//
// The database is the one COMPACTOR_TEST_PG_URI names (pg_server.sh run sets
// it; PG_FSYNC=on makes that server sync its commits like a production one),
// else a throwaway server the bench starts itself.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "compactor/context.h"
#include "compactor/store.h"
#include "support/pg_test_server.h"
#include "support/test_util.h"

namespace compactor {
namespace {

using Clock = std::chrono::steady_clock;

struct Figures {
  double per_second = 0;
  double p50_ms = 0, p99_ms = 0;
  size_t ops = 0, errors = 0;
};

// Runs `op(client, i)` on `clients` threads for `seconds`; latencies of
// every call.
template <typename Op>
Figures Measure(int clients, double seconds, Op op) {
  std::vector<std::vector<double>> lat(static_cast<size_t>(clients));
  std::atomic<size_t> errors{0};
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(clients));
  const auto start = Clock::now();
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      for (size_t i = 0; !stop.load(std::memory_order_relaxed); ++i) {
        const auto t0 = Clock::now();
        if (!op(c, i)) ++errors;
        lat[static_cast<size_t>(c)].push_back(
            std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop = true;
  for (auto& t : threads) t.join();
  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  std::vector<double> all;
  for (auto& l : lat) all.insert(all.end(), l.begin(), l.end());
  std::sort(all.begin(), all.end());
  Figures f;
  f.ops = all.size();
  f.errors = errors.load();
  f.per_second = static_cast<double>(all.size()) / elapsed;
  if (!all.empty()) {
    f.p50_ms = all[all.size() / 2];
    f.p99_ms = all[std::min(all.size() - 1, all.size() * 99 / 100)];
  }
  return f;
}

std::string Entry(const std::string& id, const std::string& parent) {
  return R"({"type":"message","id":")" + id + R"(","parentId":)" +
         (parent.empty() ? std::string("null") : "\"" + parent + "\"") +
         R"(,"timestamp":"2026-01-01T10:00:00.000Z","message":{"role":"user","content":"a line of about three hundred bytes, as a recorded user turn of a coding agent would be: please read src/main.cc and fix the failing test in tests/main_test.cc, then run the build again","timestamp":1}})";
}

struct Row {
  std::string store;
  int clients;
  Figures append, context;
};

// Appends (each client its own session, one entry a call, synced) and
// context requests (every client the same 225-entry session) on `store`.
Row RunCell(SessionStore& store, const std::string& name, int clients, double seconds,
            const std::string& sample_id) {
  std::vector<std::string> ids;
  ids.reserve(static_cast<size_t>(clients));
  std::vector<std::string> leaves(static_cast<size_t>(clients), "r");
  for (int c = 0; c < clients; ++c) {
    auto id = store.Create("", "", {Entry("r", "")});
    ids.push_back(id.ok() ? *id : "");
  }
  Row row{name, clients, {}, {}};
  row.append = Measure(clients, seconds, [&](int c, size_t i) {
    const std::string id = "e" + std::to_string(i);
    StoreAppendOptions ao;
    ao.sync = true;
    std::string& leaf = leaves[static_cast<size_t>(c)];
    bool ok = store.Append(ids[static_cast<size_t>(c)], {Entry(id, leaf)}, ao).ok();
    leaf = id;
    return ok;
  });
  row.context = Measure(clients, seconds, [&](int, size_t) {
    auto s = store.Load(sample_id);
    if (!s.ok()) return false;
    return BuildSessionContext(**s).ok();
  });
  return row;
}

int Main(int argc, char** argv) {
  double seconds = 3;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) seconds = 0.5;
    if (std::strcmp(argv[i], "--seconds") == 0 && i + 1 < argc) seconds = std::atof(argv[++i]);
  }
  std::string why;
  auto base = testing::TestPgUri(&why);
  if (!base) {
    std::fprintf(stderr, "store_bench: no PostgreSQL server: %s\n", why.c_str());
    return 1;
  }
  const std::string db = testing::FreshDatabase(*base, &why);
  if (db.empty()) {
    std::fprintf(stderr, "store_bench: %s\n", why.c_str());
    return 1;
  }
  testing::TempDir dir;
  const std::string sample =
      testing::ReadFileOrDie(std::string(COMPACTOR_SOURCE_DIR) + "/examples/session.jsonl");
  std::vector<Row> rows;
  for (const std::string& spec : {dir.path() + "/store", db}) {
    StoreSpec s;
    s.store = spec;
    auto store = OpenStore(s);
    if (!store.ok()) {
      std::fprintf(stderr, "store_bench: %s\n", store.status().ToString().c_str());
      return 1;
    }
    auto sample_id = (*store)->Import(sample);
    if (!sample_id.ok()) {
      std::fprintf(stderr, "store_bench: %s\n", sample_id.status().ToString().c_str());
      return 1;
    }
    const std::string name = IsPostgresUri(spec) ? "postgres" : "directory";
    for (int clients : {1, 16, 64})
      rows.push_back(RunCell(**store, name, clients, seconds, *sample_id));
  }
  std::printf(
      "| store | clients | appends/s | append p50 ms | append p99 ms | contexts/s | context p50 ms "
      "| context p99 ms |\n|---|---|---|---|---|---|---|---|\n");
  size_t errors = 0;
  for (const Row& r : rows) {
    std::printf("| %s | %d | %.0f | %.2f | %.2f | %.0f | %.2f | %.2f |\n", r.store.c_str(),
                r.clients, r.append.per_second, r.append.p50_ms, r.append.p99_ms,
                r.context.per_second, r.context.p50_ms, r.context.p99_ms);
    errors += r.append.errors + r.context.errors;
  }
  if (errors != 0) std::fprintf(stderr, "store_bench: %zu failed calls\n", errors);
  return errors == 0 ? 0 : 1;
}

}  // namespace
}  // namespace compactor

int main(int argc, char** argv) { return compactor::Main(argc, argv); }
