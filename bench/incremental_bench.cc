// The incremental session path (issue 13, docs/incremental.md): appending one
// entry to a loaded session and producing the context of the new leaf,
// against the path it replaces (append, then Session::Open + a full
// BuildSessionContext), on generated sessions of 5 MB and 50 MB, side by
// side in one run; and the same through the service API's loaded sessions
// (BM_ServiceAppendAndContext).
//
//   incremental_bench [--dir=DIR] [Google Benchmark flags]
//
// The sessions are generated into DIR (default: a fresh directory under
// $TMPDIR, removed at the end): user prompts, assistant answers with usage
// and tool calls, tool results (~2.3 KB per entry), a compaction every 200
// entries, so the context holds a summary and everything after it. Each
// iteration appends one assistant message entry (child of the leaf) through
// the write protocol (sidecar lock, one write(), writer.h), so the files grow
// by ~1 KB per iteration. After the runs, one line per size gives both
// figures and their ratio. Target: <= 1 ms for the incremental path,
// independent of the session's size.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "compactor/context.h"
#include "compactor/entries.h"
#include "compactor/js_json.h"
#include "compactor/session.h"
#include "compactor/store.h"
#include "compactor/strategy.h"
#include "compactor/writer.h"
#include "serve/loaded_sessions.h"

namespace {

namespace fs = std::filesystem;

std::string g_dir;
std::map<int, std::string> g_files;  // size in MB -> path

std::string Text(size_t n, int salt) {
  static const char* const kWords[] = {"the",   "session", "context", "compaction", "file",
                                       "entry", "tool",    "result",  "summary",    "append"};
  std::string out;
  for (size_t i = 0; out.size() < n; ++i) {
    out += kWords[(i * 7 + static_cast<size_t>(salt)) % 10];
    out += ' ';
  }
  return out;
}

std::string Assistant(int k, const std::string& text) {
  std::string m = R"({"role":"assistant","content":[{"type":"text","text":)";
  compactor::AppendJsString(m, text);
  m += R"(},{"type":"toolCall","id":"call)" + std::to_string(k) +
       R"(","name":"read","arguments":{"path":"src/f)" + std::to_string(k % 50) + R"(.cc"}}],)";
  m += R"("api":"anthropic-messages","provider":"anthropic","model":"claude-sonnet-4-5",)";
  m += R"("usage":{"input":)" + std::to_string(20000 + k) +
       R"(,"output":300,"cacheRead":0,"cacheWrite":0,"totalTokens":)" + std::to_string(20300 + k) +
       R"(},"stopReason":"toolUse","timestamp":1767225600000})";
  return m;
}

std::string EntryLine(int k, const std::string& id, const std::string& parent,
                      const std::string& first_kept) {
  const compactor::EntryBase base{id, parent, "2026-01-01T00:00:00.000Z"};
  if (k % 200 == 199 && !first_kept.empty()) {
    compactor::CompactionEntryFields f;
    f.summary = Text(1500, k);
    f.first_kept_entry_id = first_kept;
    f.tokens_before = 150000;
    return compactor::MakeCompactionEntry(base, f);
  }
  switch (k % 3) {
    case 0: {
      std::string m = R"({"role":"user","content":[{"type":"text","text":)";
      compactor::AppendJsString(m, Text(600, k));
      m += R"(}],"timestamp":1767225600000})";
      return compactor::MakeMessageEntry(base, m);
    }
    case 1:
      return compactor::MakeMessageEntry(base, Assistant(k, Text(1200, k)));
    default: {
      std::string m = R"({"role":"toolResult","toolCallId":"call)" + std::to_string(k - 1) +
                      R"(","toolName":"read","content":[{"type":"text","text":)";
      compactor::AppendJsString(m, Text(4000, k));
      m += R"(}],"isError":false,"timestamp":1767225600000})";
      return compactor::MakeMessageEntry(base, m);
    }
  }
}

std::string Generate(int megabytes) {
  std::string path = g_dir + "/session-" + std::to_string(megabytes) + "mb.jsonl";
  compactor::SessionHeaderFields h;
  h.id = "bench-" + std::to_string(megabytes);
  h.timestamp = "2026-01-01T00:00:00.000Z";
  h.cwd = "/work";
  std::string text = compactor::MakeSessionHeader(h) + "\n";
  const size_t target = static_cast<size_t>(megabytes) << 20;
  std::string parent, first_kept;
  for (int k = 0; text.size() < target; ++k) {
    const std::string id = std::string("e") + std::to_string(k);
    text += EntryLine(k, id, parent, first_kept) + "\n";
    if (k % 200 == 150) first_kept = id;  // the next compaction keeps from here
    parent = id;
  }
  if (!compactor::WriteFileAtomic(path, text).ok()) {
    std::fprintf(stderr, "cannot write %s\n", path.c_str());
    std::exit(1);
  }
  return path;
}

// One new assistant message entry, child of the session's leaf.
std::string NextLine(const compactor::Session& s, int64_t n) {
  const std::string parent(s.entry(*s.Leaf()).id);
  return compactor::MakeMessageEntry(
      {std::string("n") + std::to_string(n), parent, "2026-01-01T00:00:01.000Z"},
      Assistant(static_cast<int>(n), Text(900, 3)));
}

void BM_AppendIncremental(benchmark::State& state) {
  const std::string& path = g_files[static_cast<int>(state.range(0))];
  auto opened = compactor::Session::Open(path);
  if (!opened.ok()) return state.SkipWithError(opened.status().ToString().c_str());
  std::unique_ptr<compactor::Session> s = std::move(opened).value();
  compactor::ContextOptions expanding;
  expanding.expander = compactor::StrategyExpander();
  compactor::ContextCache cache(expanding);
  if (!cache.Get(*s).ok()) return state.SkipWithError("context");
  static int64_t n = 0;
  size_t messages = 0;
  for (auto _ : state) {
    auto r = compactor::AppendToSession(s.get(), {NextLine(*s, ++n)});
    if (!r.ok()) return state.SkipWithError(r.status().ToString().c_str());
    auto ctx = cache.Get(*s);
    if (!ctx.ok()) return state.SkipWithError(ctx.status().ToString().c_str());
    messages = (*ctx)->messages.size();
    benchmark::DoNotOptimize(messages);
  }
  state.counters["messages"] = static_cast<double>(messages);
  state.counters["rebuilt"] = static_cast<double>(cache.rebuilt());
}

void BM_AppendReopen(benchmark::State& state) {
  const std::string& path = g_files[static_cast<int>(state.range(0))];
  static int64_t n = 1000000;
  size_t messages = 0;
  auto first = compactor::Session::Open(path);
  if (!first.ok()) return state.SkipWithError(first.status().ToString().c_str());
  std::string leaf(first.value()->entry(*first.value()->Leaf()).id);
  first.value().reset();
  for (auto _ : state) {
    const std::string id = std::string("r") + std::to_string(++n);
    const std::string line = compactor::MakeMessageEntry(
        {id, leaf, "2026-01-01T00:00:01.000Z"}, Assistant(static_cast<int>(n), Text(900, 3)));
    if (auto st = compactor::AppendLines(path, {line}); !st.ok())
      return state.SkipWithError(st.ToString().c_str());
    leaf = id;
    auto s = compactor::Session::Open(path);
    if (!s.ok()) return state.SkipWithError(s.status().ToString().c_str());
    compactor::ContextOptions co;
    co.expander = compactor::StrategyExpander();
    auto ctx = compactor::BuildSessionContext(**s, co);
    if (!ctx.ok()) return state.SkipWithError(ctx.status().ToString().c_str());
    messages = ctx->messages.size();
    benchmark::DoNotOptimize(messages);
  }
  state.counters["messages"] = static_cast<double>(messages);
}

// The parts of the incremental path: the append through the write protocol
// alone (sidecar lock, torn-tail check, one write()).
void BM_AppendLinesOnly(benchmark::State& state) {
  const std::string& path = g_files[static_cast<int>(state.range(0))];
  auto opened = compactor::Session::Open(path);
  if (!opened.ok()) return state.SkipWithError(opened.status().ToString().c_str());
  std::string leaf(opened.value()->entry(*opened.value()->Leaf()).id);
  static int64_t n = 2000000;
  for (auto _ : state) {
    const std::string id = std::string("w") + std::to_string(++n);
    const std::string line = compactor::MakeMessageEntry(
        {id, leaf, "2026-01-01T00:00:01.000Z"}, Assistant(static_cast<int>(n), Text(900, 3)));
    if (auto st = compactor::AppendLines(path, {line}); !st.ok())
      return state.SkipWithError(st.ToString().c_str());
    leaf = id;
  }
}

// The service API's path (serve/loaded_sessions.h): POST .../entries (the
// session acquired, one entry appended through the directory store) then
// GET .../context?expand (acquired again: refreshed, the cached context
// extended), without the HTTP and JSON around them.
void BM_ServiceAppendAndContext(benchmark::State& state) {
  const int mb = static_cast<int>(state.range(0));
  const std::string id = "bench-" + std::to_string(mb);
  compactor::DirectoryStoreOptions so;
  so.dir = g_dir;
  auto store = compactor::NewDirectoryStore(so);
  if (!store.ok()) return state.SkipWithError(store.status().ToString().c_str());
  compactor::serve::LoadedSessions loaded(store->get());
  if (!loaded.Acquire(id).ok()) return state.SkipWithError("load");
  static int64_t n = 3000000;
  size_t messages = 0;
  for (auto _ : state) {
    {
      auto h = loaded.Acquire(id);
      if (!h.ok()) return state.SkipWithError(h.status().ToString().c_str());
      compactor::StoreAppendOptions ao;
      ao.expected_entries = h->session().size();
      ao.loaded = &h->session();
      if (auto st = (*store)->Append(id, {NextLine(h->session(), ++n)}, ao); !st.ok())
        return state.SkipWithError(st.ToString().c_str());
    }
    auto h = loaded.Acquire(id);
    if (!h.ok()) return state.SkipWithError(h.status().ToString().c_str());
    auto ctx = h->Context(std::nullopt, true);
    if (!ctx.ok()) return state.SkipWithError(ctx.status().ToString().c_str());
    messages = (*ctx)->messages.size();
    benchmark::DoNotOptimize(messages);
  }
  state.counters["messages"] = static_cast<double>(messages);
}

// Collects the mean real time of each run to print the ratios at the end.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& r : runs) {
      if (r.error_occurred || r.run_type != Run::RT_Iteration) continue;
      // In the run's time unit (us); keyed "NAME/MB".
      const std::string name = r.benchmark_name();
      const size_t arg_end = name.find('/', name.find('/') + 1);
      times_[name.substr(0, arg_end)] = {r.GetAdjustedRealTime(), r.GetAdjustedCPUTime()};
    }
  }
  void PrintRatios() const {
    for (const auto& [mb, path] : g_files) {
      const std::string suffix = std::string("/") + std::to_string(mb);
      auto inc = times_.find("BM_AppendIncremental" + suffix);
      auto old = times_.find("BM_AppendReopen" + suffix);
      if (inc == times_.end() || old == times_.end()) continue;
      std::printf(
          "%d MB: incremental %.1f us (cpu %.1f), re-open + context %.1f us (cpu %.1f), "
          "ratio %.0fx (cpu %.0fx)\n",
          mb, inc->second.first, inc->second.second, old->second.first, old->second.second,
          old->second.first / inc->second.first, old->second.second / inc->second.second);
    }
  }

 private:
  std::map<std::string, std::pair<double, double>> times_;  // real, CPU
};

}  // namespace

BENCHMARK(BM_AppendIncremental)->Arg(5)->Arg(50)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_AppendReopen)->Arg(5)->Arg(50)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_AppendLinesOnly)->Arg(5)->Arg(50)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_ServiceAppendAndContext)
    ->Arg(5)
    ->Arg(50)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

int main(int argc, char** argv) {
  bool own_dir = true;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--dir=", 0) == 0) {
      g_dir = a.substr(6);
      own_dir = false;
      for (int j = i; j + 1 < argc; ++j) argv[j] = argv[j + 1];
      --argc;
      break;
    }
  }
  if (own_dir) {
    const char* tmp = std::getenv("TMPDIR");
    g_dir = std::string(tmp && *tmp ? tmp : "/tmp") + "/incremental_bench." +
            std::to_string(static_cast<long>(getpid()));
  }
  fs::create_directories(g_dir);
  for (int mb : {5, 50}) g_files[mb] = Generate(mb);
  benchmark::Initialize(&argc, argv);
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  reporter.PrintRatios();
  benchmark::Shutdown();
  if (own_dir) fs::remove_all(g_dir);
  return 0;
}
