// The offline summarizer on a large summarized part: the same planted-fact
// coding session as its tests (tests/support/sample_conversation.h),
// repeated to the size given as the benchmark's argument (MB of message text
// and tool arguments). There is no peer: pi has no offline summarizer, it
// needs a model (docs/benchmarks.md, "Offline summarizer").
#include <benchmark/benchmark.h>

#include "compactor/summarizer.h"
#include "support/sample_conversation.h"

namespace compactor {
namespace {

void BM_OfflineSummarize(benchmark::State& state) {
  const int64_t megabytes = state.range(0);
  summarize_test::Convo c = summarize_test::LargeConversation(megabytes * 1024 * 1024);
  auto summarizer = NewOfflineSummarizer();
  SummaryRequest req;
  req.messages = c.messages;
  size_t out_bytes = 0;
  for (auto _ : state) {
    auto r = summarizer->Summarize(req);
    if (!r.ok()) {
      state.SkipWithError(r.status().ToString().c_str());
      return;
    }
    out_bytes = r->size();
    benchmark::DoNotOptimize(r);
  }
  state.counters["messages"] = static_cast<double>(c.messages.size());
  state.counters["summary_bytes"] = static_cast<double>(out_bytes);
  state.SetBytesProcessed(state.iterations() * megabytes * 1024 * 1024);
}
BENCHMARK(BM_OfflineSummarize)
    ->Arg(5)
    ->Arg(50)
    ->Unit(benchmark::kMillisecond)
    ->MeasureProcessCPUTime();

}  // namespace
}  // namespace compactor

BENCHMARK_MAIN();
