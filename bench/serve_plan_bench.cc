// The proxy's decision and rewrite on a large request whose summary is
// cached (docs/benchmarks.md, "compactor serve"): the compaction hook
// (serve/compact_hook.h) reads a ~1 MB Anthropic request, finds its
// conversation's summary in the table, decides the cut and writes the
// rewritten body, in process (no sockets). Target (issue 13): <= 2 ms.
//
// The summary is put in the table the way the service does it: one request
// of the same conversation goes through the hook first (the offline
// summarizer writes the summary); the measured requests then reuse it.
#include <benchmark/benchmark.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "serve/compact_hook.h"
#include "serve/compact_plan.h"
#include "serve/compact_requests.h"
#include "serve/hooks.h"
#include "serve/http_util.h"

namespace compactor::serve {
namespace {

// The proxy's side of one exchange, reduced to what the hook uses.
class BenchExchange : public Exchange {
 public:
  BenchExchange(std::string body, Metrics* metrics) : metrics_(metrics) {
    request_.method = "POST";
    request_.target = "/v1/messages";
    request_.path = request_.target;
    request_.route = ClassifyPath(request_.path);
    request_.headers = {{"content-type", "application/json"},
                        {"x-claude-code-session-id", "bench-large"}};
    request_.body = std::move(body);
  }
  const ProxyRequest& request() const override { return request_; }
  Result<std::string_view> DecodedBody() override { return std::string_view(request_.body); }
  // One scan of the top-level members per exchange, as the proxy does.
  bool declares_tools() override { return Outline().declares_tools; }
  const std::optional<std::string>& named_conversation() override {
    return Outline().named_conversation;
  }
  const RequestOutline& Outline() {
    if (!outline_) {
      outline_ =
          OutlineRequest(FindProviderApi(request_.route.api), request_.body, request_.headers);
    }
    return *outline_;
  }
  // Read once per exchange, as the proxy does (ProxyExchange::client_request):
  // part of what is measured.
  std::shared_ptr<const ClientRequestView> client_request() override {
    if (parsed_) return view_;
    parsed_ = true;
    const ProviderApi* api = FindProviderApi(request_.route.api);
    if (api == nullptr) return nullptr;
    view_ = ReadClientRequestView(*api, request_.body, request_.headers);
    return view_;
  }
  void set_compaction(std::optional<ExchangeCompaction> compaction) override {
    compaction_ = std::move(compaction);
  }
  const std::optional<ExchangeCompaction>& compaction() const override { return compaction_; }
  void ReplaceBody(std::string body) override {
    replaced_ = true;
    forwarded_ = std::move(body);
  }
  const std::string& forwarded_body() const override {
    return replaced_ ? forwarded_ : request_.body;
  }
  void AddResponseHeader(std::string /*name*/, std::string /*value*/) override {}
  void Respond(int /*status*/, HeaderList /*headers*/, std::string /*body*/) override {}
  int attempt() const override { return 0; }
  RequestRecord& record() override { return record_; }
  Metrics& metrics() override { return *metrics_; }
  bool client_gone() const override { return false; }

  bool replaced() const { return replaced_; }

 private:
  ProxyRequest request_;
  std::optional<RequestOutline> outline_;
  bool parsed_ = false;
  std::shared_ptr<const ClientRequestView> view_;
  std::optional<ExchangeCompaction> compaction_;
  RequestRecord record_;
  Metrics* metrics_;
  std::string forwarded_;
  bool replaced_ = false;
};

// ~1 MB: 200 turns of ~2.5 kB of user text and ~2.5 kB of tool result.
std::string LargeRequest(int turns) { return testing::AnthropicRequest(turns, 350).dump(); }

void BM_DecideAndRewriteCached(benchmark::State& state) {
  const std::string body = LargeRequest(static_cast<int>(state.range(0)));
  CompactHookOptions o;
  o.context_window = 200'000;
  o.summarizer = CompactHookOptions::SummarizerKind::kOffline;
  std::shared_ptr<ProxyHook> hook = NewCompactHook(o);
  Metrics metrics;
  {  // the summary, written once and cached
    BenchExchange ex(body, &metrics);
    auto h = hook->Begin(ex);
    if (h) h->BeforeForward(ex);
    if (!ex.replaced()) {
      std::string why = "the first request was not compacted:";
      for (const auto& [k, v] : ex.record().extra) why += " " + k + "=" + v;
      why += " bytes=" + std::to_string(body.size());
      state.SkipWithError(why.c_str());
      return;
    }
  }
  const int64_t hits_before = metrics.summary_cache_hits().value();
  size_t out_bytes = 0;
  for (auto _ : state) {
    BenchExchange ex(body, &metrics);
    auto h = hook->Begin(ex);
    if (h) h->BeforeForward(ex);
    if (!ex.replaced()) {
      state.SkipWithError("not compacted");
      return;
    }
    out_bytes = ex.forwarded_body().size();
    benchmark::DoNotOptimize(out_bytes);
  }
  if (metrics.summary_cache_hits().value() - hits_before !=
      static_cast<int64_t>(state.iterations())) {
    state.SkipWithError("the cached summary was not reused on every request");
  }
  state.counters["request_bytes"] = static_cast<double>(body.size());
  state.counters["rewritten_bytes"] = static_cast<double>(out_bytes);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(body.size()));
}
BENCHMARK(BM_DecideAndRewriteCached)->Arg(200)->Unit(benchmark::kMillisecond);

// What the request path of a pass-through request costs before anything goes
// upstream (serve_bench's request: 3 turns, ~2.9 kB): the compaction hook's
// Begin and BeforeForward, the client's request read once as the proxy does.
void BM_PassThroughDecision(benchmark::State& state) {
  auto json = testing::AnthropicRequest(3, 40);
  json["stream"] = true;
  const std::string body = json.dump();
  CompactHookOptions o;
  o.context_window = 1'000'000;
  o.summarizer = CompactHookOptions::SummarizerKind::kOffline;
  std::shared_ptr<ProxyHook> hook = NewCompactHook(o);
  Metrics metrics;
  for (auto _ : state) {
    BenchExchange ex(body, &metrics);
    auto h = hook->Begin(ex);
    if (h) h->BeforeForward(ex);
    if (ex.replaced()) {
      state.SkipWithError("compacted");
      return;
    }
    benchmark::DoNotOptimize(h);
  }
  state.counters["request_bytes"] = static_cast<double>(body.size());
}
BENCHMARK(BM_PassThroughDecision)->Unit(benchmark::kMicrosecond);

// Reading serve_bench's request into the view every hook shares (done after
// the send for a pass-through request): Arg 0 the same body every time (every
// item read before, as in serve_bench), Arg 1 a body whose newest turn (user
// text, call, result) is new every time, as an agent's next request is.
void BM_ReadPassThroughRequest(benchmark::State& state) {
  const bool new_turn = state.range(0) != 0;
  std::vector<std::string> bodies;
  for (int i = 0; i < (new_turn ? 4096 : 1); ++i) {
    auto json = testing::AnthropicRequest(3, 40);
    json["stream"] = true;
    if (new_turn) {
      const std::string tag = " turn-" + std::to_string(i);
      auto& messages = json["messages"];
      const size_t n = messages.size();
      messages[n - 3]["content"] = messages[n - 3]["content"].get<std::string>() + tag;
      messages[n - 2]["content"][1]["input"]["path"] = "f" + tag;
      messages[n - 1]["content"][0]["content"] =
          messages[n - 1]["content"][0]["content"].get<std::string>() + tag;
    }
    bodies.push_back(json.dump());
  }
  const ProviderApi& api = *FindProviderApi("anthropic");
  const HeaderList headers = {{"x-claude-code-session-id", "bench"}};
  size_t i = 0;
  for (auto _ : state) {
    auto view = ReadClientRequestView(api, bodies[i++ % bodies.size()], headers);
    if (view == nullptr) {
      state.SkipWithError("the request does not read");
      return;
    }
    benchmark::DoNotOptimize(view);
  }
}
BENCHMARK(BM_ReadPassThroughRequest)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace compactor::serve

BENCHMARK_MAIN();
