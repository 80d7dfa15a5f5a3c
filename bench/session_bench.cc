// In-process cost of loading a session and rebuilding its context, next to a
// plain simdjson parse of the same bytes (the floor for any reader that looks
// at every line).
//
//   session_bench --session=FILE.jsonl [Google Benchmark flags]
//   (or COMPACTOR_BENCH_SESSION=FILE.jsonl session_bench)
//
// Issue 2 target: Session::Open + BuildSessionContext <= 2x the simdjson
// load + parse_many time. scripts/bench_session.sh generates 50 MB sessions
// and runs this next to the whole-process comparison with pi.
#include <benchmark/benchmark.h>
#include <simdjson.h>
#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "compactor/context.h"
#include "compactor/session.h"

namespace {

std::string g_path;
size_t g_bytes = 0;
size_t g_batch = 1 << 20;

// parse_many needs a batch at least as large as the longest document (line).
void MeasureFile() {
  simdjson::padded_string text;
  if (simdjson::padded_string::load(g_path).get(text) != simdjson::SUCCESS) {
    std::fprintf(stderr, "cannot read %s\n", g_path.c_str());
    std::exit(1);
  }
  g_bytes = text.size();
  size_t longest = 0, start = 0;
  std::string_view view(text.data(), text.size());
  while (start < view.size()) {
    size_t end = view.find('\n', start);
    if (end == std::string_view::npos) end = view.size();
    longest = std::max(longest, end - start);
    start = end + 1;
  }
  g_batch = std::max<size_t>(g_batch, longest + 64);
}

size_t ParseMany(simdjson::dom::parser& parser, const simdjson::padded_string& text,
                 benchmark::State& state) {
  simdjson::dom::document_stream docs;
  if (parser.parse_many(text, g_batch).get(docs) != simdjson::SUCCESS) {
    state.SkipWithError("parse_many failed");
    return 0;
  }
  size_t n = 0;
  for (auto doc : docs) {
    std::string_view type;
    // Touch one field per line so the parse cannot be skipped.
    if (doc["type"].get_string().get(type) == simdjson::SUCCESS) n += type.size();
  }
  return n;
}

// Baseline 1: simdjson reads the file and parses every line (DOM, parse_many).
void BM_SimdjsonLoadParseMany(benchmark::State& state) {
  simdjson::dom::parser parser;
  for (auto _ : state) {
    simdjson::padded_string text;
    if (simdjson::padded_string::load(g_path).get(text) != simdjson::SUCCESS) {
      state.SkipWithError("load failed");
      break;
    }
    benchmark::DoNotOptimize(ParseMany(parser, text, state));
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * g_bytes));
}

// Baseline 2: the parse alone, bytes already in memory.
void BM_SimdjsonParseManyInMemory(benchmark::State& state) {
  simdjson::dom::parser parser;
  simdjson::padded_string text;
  if (simdjson::padded_string::load(g_path).get(text) != simdjson::SUCCESS) {
    state.SkipWithError("load failed");
    return;
  }
  for (auto _ : state) benchmark::DoNotOptimize(ParseMany(parser, text, state));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * g_bytes));
}

void BM_SessionOpen(benchmark::State& state) {
  for (auto _ : state) {
    auto session = compactor::Session::Open(g_path);
    if (!session.ok()) {
      state.SkipWithError(session.status().ToString().c_str());
      break;
    }
    benchmark::DoNotOptimize(session.value()->size());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * g_bytes));
}

// What the target is about: load + context of the file's leaf.
void BM_SessionOpenAndContext(benchmark::State& state) {
  for (auto _ : state) {
    auto session = compactor::Session::Open(g_path);
    if (!session.ok()) {
      state.SkipWithError(session.status().ToString().c_str());
      break;
    }
    auto context = compactor::BuildSessionContext(*session.value());
    if (!context.ok()) {
      state.SkipWithError(context.status().ToString().c_str());
      break;
    }
    benchmark::DoNotOptimize(context.value().messages.size());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * g_bytes));
}

// Everything `compactor context FILE --json` does in process, output included.
void BM_SessionOpenContextJson(benchmark::State& state) {
  for (auto _ : state) {
    auto session = compactor::Session::Open(g_path);
    if (!session.ok()) {
      state.SkipWithError(session.status().ToString().c_str());
      break;
    }
    auto context = compactor::BuildSessionContext(*session.value());
    if (!context.ok()) {
      state.SkipWithError(context.status().ToString().c_str());
      break;
    }
    std::string json = compactor::ContextToJson(context.value());
    benchmark::DoNotOptimize(json.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * g_bytes));
}

// Context of an already loaded session (the service's hot path).
void BM_ContextOnly(benchmark::State& state) {
  auto session = compactor::Session::Open(g_path);
  if (!session.ok()) {
    state.SkipWithError(session.status().ToString().c_str());
    return;
  }
  for (auto _ : state) {
    auto context = compactor::BuildSessionContext(*session.value());
    benchmark::DoNotOptimize(context.ok());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * g_bytes));
}

BENCHMARK(BM_SimdjsonLoadParseMany)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_SimdjsonParseManyInMemory)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_SessionOpen)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_SessionOpenAndContext)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_SessionOpenContextJson)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_ContextOnly)->Unit(benchmark::kMillisecond)->UseRealTime();

// The same on one thread (LoadOptions::threads = 1): the cost of the work
// itself, comparable with simdjson's single-threaded parse.
void BM_SessionOpenAndContextOneThread(benchmark::State& state) {
  compactor::LoadOptions one;
  one.threads = 1;
  for (auto _ : state) {
    auto session = compactor::Session::Open(g_path, one);
    if (!session.ok()) {
      state.SkipWithError(session.status().ToString().c_str());
      break;
    }
    auto context = compactor::BuildSessionContext(*session.value());
    if (!context.ok()) {
      state.SkipWithError(context.status().ToString().c_str());
      break;
    }
    benchmark::DoNotOptimize(context.value().messages.size());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * g_bytes));
}
BENCHMARK(BM_SessionOpenAndContextOneThread)->Unit(benchmark::kMillisecond)->UseRealTime();

// Console output plus a summary of the ratios the targets are stated in.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& reports) override {
    ConsoleReporter::ReportRuns(reports);
    for (const Run& run : reports) {
      if (run.error_occurred) continue;
      // "BM_X/real_time" -> "BM_X"
      std::string name = run.benchmark_name();
      name = name.substr(0, name.find('/'));
      ms_[name] = run.GetAdjustedRealTime();
    }
  }

  void PrintSummary() const {
    auto get = [&](const char* name) {
      auto it = ms_.find(name);
      return it == ms_.end() ? -1.0 : it->second;
    };
    double mb = static_cast<double>(g_bytes) / 1e6;
    std::printf("\nfile: %s (%.1f MB)\n", g_path.c_str(), mb);
    for (const auto& [name, ms] : ms_) {
      std::printf("  %-30s %9.2f ms  %8.1f MB/s\n", name.c_str(), ms,
                  ms > 0 ? mb / (ms / 1e3) : 0.0);
    }
    double base = get("BM_SimdjsonLoadParseMany");
    double ours = get("BM_SessionOpenAndContext");
    if (base > 0 && ours > 0) {
      std::printf("ratio load+context / simdjson load+parse_many: %.2f (target <= 2.00)\n",
                  ours / base);
    }
    double base_mem = get("BM_SimdjsonParseManyInMemory");
    if (base_mem > 0 && ours > 0) {
      std::printf("ratio load+context / simdjson parse_many in memory: %.2f\n", ours / base_mem);
    }
    double one = get("BM_SessionOpenAndContextOneThread");
    if (base > 0 && one > 0) {
      std::printf("ratio load+context on one thread / simdjson load+parse_many: %.2f\n",
                  one / base);
    }
    if (base_mem > 0 && one > 0) {
      std::printf("ratio load+context on one thread / simdjson parse_many in memory: %.2f\n",
                  one / base_mem);
    }
    struct rusage usage {};
    getrusage(RUSAGE_SELF, &usage);
    std::printf("peak RSS of this process: %.1f MB\n",
                static_cast<double>(usage.ru_maxrss) / 1024.0);
  }

 private:
  std::map<std::string, double> ms_;
};

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--session=", 10) == 0) g_path = argv[i] + 10;
  }
  if (g_path.empty() && std::getenv("COMPACTOR_BENCH_SESSION") != nullptr) {
    g_path = std::getenv("COMPACTOR_BENCH_SESSION");
  }
  if (g_path.empty()) {
    std::fprintf(stderr,
                 "usage: %s --session=FILE.jsonl [benchmark flags]\n"
                 "  (scripts/bench_session.sh generates 50 MB sessions with pi's gen_large.mjs)\n",
                 argv[0]);
    return 2;
  }
  MeasureFile();
  benchmark::Initialize(&argc, argv);
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  reporter.PrintSummary();
  benchmark::Shutdown();
  return 0;
}
