#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "compactor/compact.h"
#include "compactor/context.h"
#include "compactor/entries.h"
#include "compactor/estimate.h"
#include "compactor/message.h"
#include "compactor/prepare.h"
#include "compactor/strategy.h"
#include "compactor/writer.h"
#include "support/compaction_fixtures.h"
#include "support/oracle.h"
#include "support/test_util.h"

namespace compactor {
namespace {

using testing::MakeSession;
using testing::Options;
using testing::ReadFileOrDie;
using testing::RecordingSummarizer;
using testing::TempDir;

TEST(Engine, SummaryAppendsACompactionPiAndCompactorRebuild) {
  TempDir d;
  std::string path = d.Write("s.jsonl", MakeSession(20, 2000));
  std::string before = ReadFileOrDie(path);
  RecordingSummarizer sum;
  auto r = CompactFile(path, Options(&sum));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->compacted);
  EXPECT_GT(r->messages_summarized, 0u);
  EXPECT_LT(r->tokens_after, r->tokens_before);
  EXPECT_NE(r->summary.find("SUMMARY(history,"), std::string::npos);
  EXPECT_NE(r->summary.find("<modified-files>\nsrc/f0.ts"), std::string::npos);
  std::string after = ReadFileOrDie(path);
  ASSERT_EQ(after.substr(0, before.size()), before);  // append-only
  EXPECT_EQ(after.substr(before.size()), r->entry_json + "\n");
  auto s = Session::Open(path);
  ASSERT_TRUE(s.ok());
  auto ctx = BuildSessionContext(**s);
  ASSERT_TRUE(ctx.ok());
  EXPECT_EQ(ctx->messages[0].role, Role::kCompactionSummary);
  EXPECT_EQ(s.value()->entry(s.value()->size() - 1).first_kept_entry_id, r->first_kept_entry_id);
  auto j = nlohmann::json::parse(r->entry_json);
  EXPECT_EQ(j["method"], "summary");
  EXPECT_EQ(j["details"]["modifiedFiles"][0], "src/f0.ts");
  EXPECT_EQ(j["timestamp"], "2026-01-01T00:00:00.000Z");

  // A second compaction updates the previous summary.
  std::string more = MakeSession(30, 2000);
  auto r2 = CompactFile(path, Options(&sum));
  ASSERT_TRUE(r2.ok());
  EXPECT_FALSE(r2->compacted);  // the leaf is the compaction itself
  EXPECT_EQ(r2->skipped_reason, "already compacted");
}

// One line per message a summarizer was given: enough to tell messages apart
// and to see their order.
std::string Fingerprint(const Message& m) {
  std::string f = m.role_name + ":" + m.tool_call_id + ":" + m.content_string;
  for (const ContentBlock& b : m.content) f += "|" + b.text + b.tool_call_id + b.arguments_json;
  return f;
}

// Histories of several megabytes are parsed by two threads: the summarizer
// and the compacting hooks must still get every message once, in order.
TEST(Engine, LongHistoriesReachTheSummarizerInOrder) {
  TempDir d;
  std::string path = d.Write("s.jsonl", MakeSession(500, 12000));  // ~6 MB of tool output
  class Fingerprints : public Summarizer {
   public:
    std::string_view name() const override { return "fingerprints"; }
    Result<std::string> Summarize(const SummaryRequest& r) const override {
      std::vector<std::string> call;
      for (const Message& m : r.messages) call.push_back(Fingerprint(m));
      std::lock_guard<std::mutex> lock(mu);  // a split turn's two summaries run concurrently
      calls.push_back(std::move(call));
      return std::string("ok");
    }
    mutable std::mutex mu;
    mutable std::vector<std::vector<std::string>> calls;
  } sum;
  std::vector<std::string> hook_seen;
  CompactionHooks hooks;
  hooks.OnCompacting([&](const CompactingEvent& e) {
    for (const Message& m : e.messages) hook_seen.push_back(Fingerprint(m));
    return CompactingResult{};
  });
  CompactOptions o = Options(&sum);
  o.hooks = &hooks;
  o.dry_run = true;

  auto session = Session::Open(path);
  ASSERT_TRUE(session.ok());
  PrepareOptions po;
  po.settings = o.settings;
  auto prep = PrepareCompaction(**session, po);
  ASSERT_TRUE(prep.ok() && prep->preparation);
  std::vector<std::string> expected;
  for (const auto* list :
       {&prep->preparation->messages_to_summarize, &prep->preparation->turn_prefix_messages}) {
    for (const ContextMessage& cm : *list) {
      auto m = ParseMessage(cm.json());
      ASSERT_TRUE(m.ok());
      expected.push_back(Fingerprint(*m));
    }
  }
  ASSERT_GT(expected.size(), 1500u);

  auto r = CompactFile(path, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->compacted);
  EXPECT_EQ(hook_seen, expected);

  // A summarizer that reads in order gets the messages while they are parsed:
  // it waits for each before reading it and sees the same sequence.
  class InOrder : public Summarizer {
   public:
    std::string_view name() const override { return "in-order"; }
    bool ReadsMessagesInOrder() const override { return true; }
    Result<std::string> Summarize(const SummaryRequest& r) const override {
      std::vector<std::string> call;
      for (size_t i = 0; i < r.messages.size(); ++i) {
        AwaitMessages(r, i + 1);
        call.push_back(Fingerprint(r.messages[i]));
      }
      std::lock_guard<std::mutex> lock(mu);
      streamed = streamed || static_cast<bool>(r.wait_for_messages);
      calls.push_back(std::move(call));
      return std::string("ok");
    }
    mutable std::mutex mu;
    mutable bool streamed = false;
    mutable std::vector<std::vector<std::string>> calls;
  } in_order;
  CompactOptions streaming = Options(&in_order);
  streaming.dry_run = true;
  auto s = CompactFile(path, streaming);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_TRUE(in_order.streamed);
  std::vector<std::string> all_seen;
  for (const auto& call : in_order.calls) all_seen.insert(all_seen.end(), call.begin(), call.end());
  std::vector<std::string> sorted_seen = all_seen, sorted_expected = expected;
  std::sort(sorted_seen.begin(), sorted_seen.end());
  std::sort(sorted_expected.begin(), sorted_expected.end());
  EXPECT_EQ(sorted_seen, sorted_expected);
  ASSERT_FALSE(in_order.calls.empty());
  // The history call is the one that starts with the first message.
  bool history_in_order = false;
  for (const auto& call : in_order.calls) {
    if (!call.empty() && call.front() == expected.front()) {
      history_in_order = std::equal(call.begin(), call.end(), expected.begin());
    }
  }
  EXPECT_TRUE(history_in_order);
  // Without a split turn the one summary sees everything; with one the history
  // and the turn prefix go to two calls (finishing in either order).
  std::vector<std::vector<std::string>> want = {expected};
  if (prep->preparation->is_split_turn) {
    auto split = expected.end() -
                 static_cast<std::ptrdiff_t>(prep->preparation->turn_prefix_messages.size());
    want = {std::vector<std::string>(expected.begin(), split),
            std::vector<std::string>(split, expected.end())};
    if (sum.calls.size() == 2 && sum.calls[0] != want[0]) std::swap(want[0], want[1]);
  }
  EXPECT_EQ(sum.calls, want);
}

TEST(Engine, SizeAfterCompactionIgnoresStaleUsage) {
  TempDir d;
  std::string path = d.Write("s.jsonl", MakeSession(20, 2000));
  RecordingSummarizer sum;
  auto r = CompactFile(path, Options(&sum));
  ASSERT_TRUE(r.ok() && r->compacted);
  auto s = Session::Open(path);
  ASSERT_TRUE(s.ok());
  auto ctx = BuildSessionContext(**s);
  ASSERT_TRUE(ctx.ok());
  // pi's estimateContextTokens still anchors on the kept assistant's old usage...
  EXPECT_GT(EstimateContextTokens(ctx->messages).usage_tokens, 0);
  // ...the current size does not: only messages are measured.
  ContextEstimate now = EstimateCurrentContextTokens(**s, *ctx, TokenCounter());
  EXPECT_EQ(now.usage_tokens, 0);
  EXPECT_EQ(now.tokens, static_cast<double>(now.heuristic_sum));
  EXPECT_EQ(now.heuristic_sum, r->tokens_after);
}

TEST(Engine, DryRunWritesNothing) {
  TempDir d;
  std::string path = d.Write("s.jsonl", MakeSession(20, 2000));
  std::string before = ReadFileOrDie(path);
  RecordingSummarizer sum;
  CompactOptions o = Options(&sum);
  o.dry_run = true;
  auto r = CompactFile(path, o);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->compacted);
  EXPECT_EQ(ReadFileOrDie(path), before);
}

TEST(Engine, SkipsWithReasons) {
  TempDir d;
  RecordingSummarizer sum;
  std::string small = d.Write("small.jsonl", MakeSession(1, 10));
  auto r = CompactFile(small, Options(&sum));
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->compacted);
  EXPECT_EQ(r->skipped_reason, "nothing to summarize");
  EXPECT_EQ(sum.calls, 0);  // never call a summarizer with nothing to summarize

  std::string big = d.Write("big.jsonl", MakeSession(20, 2000));
  CompactOptions o = Options(&sum);
  o.only_if_needed = true;
  o.settings.context_window = 200000;
  auto below = CompactFile(big, o);
  ASSERT_TRUE(below.ok());
  EXPECT_FALSE(below->compacted);
  EXPECT_NE(below->skipped_reason.find("below threshold"), std::string::npos);

  o.settings.enabled = false;
  auto disabled = CompactFile(big, o);
  ASSERT_TRUE(disabled.ok());
  EXPECT_EQ(disabled->skipped_reason, "disabled");

  CompactOptions bad = Options(&sum);
  bad.leaf_id = "nope";
  EXPECT_EQ(CompactFile(big, bad).status().code(), StatusCode::kInvalidArgument);
}

TEST(Engine, UnknownStrategyIsRefusedBeforeAnyWork) {
  TempDir d;
  RecordingSummarizer sum;
  std::string big = d.Write("big.jsonl", MakeSession(20, 2000));
  std::string before = ReadFileOrDie(big);
  CompactOptions o = Options(&sum);
  o.settings.strategy = "everything";
  auto r = CompactFile(big, o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("unknown strategy \"everything\""), std::string::npos)
      << r.status().message();
  EXPECT_EQ(sum.calls, 0);
  EXPECT_EQ(ReadFileOrDie(big), before);
}

TEST(Engine, IneffectiveCompactionIsReported) {
  TempDir d;
  RecordingSummarizer sum;
  std::string path = d.Write("s.jsonl", MakeSession(20, 2000));
  CompactOptions o = Options(&sum);
  o.settings.context_window = 20000;
  o.settings.reserve_tokens = 16384;  // threshold 3616 < the 8000 tokens kept
  o.settings.keep_recent_tokens = 8000;
  auto r = CompactFile(path, o);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->compacted);
  EXPECT_TRUE(r->ineffective);
}

TEST(Engine, HooksCancelSupplyOverrideAndSurviveThrows) {
  TempDir d;
  RecordingSummarizer sum;
  std::string path = d.Write("s.jsonl", MakeSession(20, 2000));
  CompactionHooks hooks;
  int after_calls = 0;
  hooks.OnBeforeCompact(
      [](const BeforeCompactEvent&) -> BeforeCompactResult { throw std::runtime_error("boom"); });
  hooks.OnCompacting([](const CompactingEvent& e) {
    CompactingResult r;
    r.context = {"the user prefers tabs", std::to_string(e.messages.size()) + " messages"};
    r.preserve_data_json = R"({"k":1})";
    return r;
  });
  hooks.OnAfterCompact([&](const AfterCompactEvent& e) {
    ++after_calls;
    EXPECT_TRUE(e.result.compacted);
  });
  CompactOptions o = Options(&sum);
  o.hooks = &hooks;
  o.dry_run = false;
  auto r = CompactFile(path, o);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->compacted);
  ASSERT_EQ(r->hook_errors.size(), 1u);
  EXPECT_NE(r->hook_errors[0].find("boom"), std::string::npos);
  EXPECT_NE(sum.last_instructions.find("- the user prefers tabs"), std::string::npos);
  EXPECT_EQ(nlohmann::json::parse(r->entry_json)["preserveData"]["k"], 1);
  EXPECT_EQ(after_calls, 1);

  std::string path2 = d.Write("s2.jsonl", MakeSession(20, 2000));
  CompactionHooks cancel;
  cancel.OnBeforeCompact([](const BeforeCompactEvent&) {
    return BeforeCompactResult{true, std::nullopt};
  });
  o.hooks = &cancel;
  int calls_before = sum.calls;
  auto c = CompactFile(path2, o);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->skipped_reason, "cancelled by hook");
  EXPECT_EQ(sum.calls, calls_before);

  CompactionHooks supply;
  supply.OnBeforeCompact([](const BeforeCompactEvent& e) {
    BeforeCompactResult r;
    r.compaction = SuppliedCompaction{"from the hook", std::nullopt, std::nullopt, "", ""};
    EXPECT_FALSE(e.preparation.first_kept_entry_id.empty());
    return r;
  });
  o.hooks = &supply;
  auto s = CompactFile(path2, o);
  ASSERT_TRUE(s.ok());
  EXPECT_TRUE(s->from_hook);
  EXPECT_EQ(s->summary, "from the hook");
  EXPECT_EQ(sum.calls, calls_before);
  EXPECT_EQ(nlohmann::json::parse(s->entry_json)["fromHook"], true);
}

TEST(Engine, UserPromptsKeepsPromptsAndRebuildsThem) {
  TempDir d;
  RecordingSummarizer sum;
  std::string path = d.Write("s.jsonl", MakeSession(20, 2000));
  CompactOptions o = Options(&sum);
  o.strategy = FindStrategy("user-prompts");
  auto r = CompactFile(path, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_TRUE(r->compacted);
  EXPECT_EQ(r->kept_user_messages, 20u);
  auto entry = nlohmann::json::parse(r->entry_json);
  EXPECT_EQ(entry["method"], "user-prompts");
  EXPECT_EQ(entry["keptUserMessageCount"], 20);
  EXPECT_EQ(entry["tokensAfter"], r->tokens_after);
  EXPECT_EQ(entry["firstKeptEntryId"], entry["id"]);
  auto s = Session::Open(path);
  ASSERT_TRUE(s.ok());
  // pi's view: one compactionSummary carrying the prompts and the summary.
  auto pi_view = BuildSessionContext(**s);
  ASSERT_TRUE(pi_view.ok());
  ASSERT_EQ(pi_view->messages.size(), 1u);
  EXPECT_EQ(pi_view->messages[0].role, Role::kCompactionSummary);
  // Compactor's view: 20 user prompts, then the user-role summary.
  ContextOptions co;
  co.expander = StrategyExpander();
  auto ours = BuildSessionContext(**s, co);
  ASSERT_TRUE(ours.ok());
  ASSERT_EQ(ours->messages.size(), 21u);
  for (size_t i = 0; i < 20; ++i) EXPECT_EQ(ours->messages[i].role, Role::kUser);
  EXPECT_EQ(ours->messages[20].origin, "summary");
  auto first = nlohmann::json::parse(ours->messages[0].json());
  EXPECT_EQ(first["content"], "please edit file 0.ts");  // kept whole: the original message
}

TEST(Engine, NotesStrategyUsesTheNotesFile) {
  TempDir d;
  std::string path = d.Write("s.jsonl", MakeSession(20, 2000));
  CompactOptions o = Options(nullptr);
  o.strategy = FindStrategy("notes");
  o.notes_path = d.Write("notes.md", "  \n");
  auto empty = CompactFile(path, o);
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->skipped_reason, "empty notes");
  o.notes_path = d.Write("notes.md", "- goal: edit all files\n- next: run tests\n");
  auto r = CompactFile(path, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_TRUE(r->compacted);
  EXPECT_EQ(r->summary, "- goal: edit all files\n- next: run tests");
  auto s = Session::Open(path);
  auto ctx = BuildSessionContext(**s);
  ASSERT_TRUE(ctx.ok());
  // summary + the last 4 messages (a whole turn: user, call, result, answer)
  ASSERT_EQ(ctx->messages.size(), 5u);
  EXPECT_EQ(ctx->messages[1].role, Role::kUser);
  o.notes_path = d.path() + "/missing.md";
  EXPECT_FALSE(CompactFile(path, o).ok());
}

TEST(Engine, HandoffWritesANewSessionAndLeavesTheOldOne) {
  TempDir d;
  RecordingSummarizer sum;
  std::string path = d.Write("s.jsonl", MakeSession(5, 100));
  std::string before = ReadFileOrDie(path);
  CompactOptions o = Options(&sum);
  o.strategy = FindStrategy("handoff");
  auto r = CompactFile(path, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_TRUE(r->compacted);
  EXPECT_EQ(ReadFileOrDie(path), before);
  EXPECT_EQ(sum.last_kind, SummaryKind::kHandoff);
  auto s = Session::Open(r->output_path);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ((*s)->header().parent_session, path);
  auto ctx = BuildSessionContext(**s);
  ASSERT_TRUE(ctx.ok());
  ASSERT_EQ(ctx->messages.size(), 1u);
  EXPECT_EQ(ctx->messages[0].role, Role::kCustom);
  EXPECT_EQ(ctx->model->model_id, "m");
  EXPECT_NE(std::string(ctx->messages[0].json()).find("<handoff-context>"), std::string::npos);
}

TEST(Engine, MaskRewritesOldToolOutputsInPlace) {
  TempDir d;
  std::string path = d.Write("s.jsonl", MakeSession(20, 2000));
  std::string before = ReadFileOrDie(path);
  CompactOptions o = Options(nullptr);
  o.strategy = FindStrategy("mask");
  o.dry_run = true;
  auto dry = CompactFile(path, o);
  ASSERT_TRUE(dry.ok()) << dry.status().ToString();
  EXPECT_TRUE(dry->compacted);
  EXPECT_EQ(ReadFileOrDie(path), before);
  o.dry_run = false;
  auto r = CompactFile(path, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->masked_outputs, 10u);  // 20 results, the newest 10 kept
  EXPECT_LT(r->tokens_after, 20 * 500 / 2 + 2000);
  EXPECT_EQ(ReadFileOrDie(path + ".bak"), before);
  auto s = Session::Open(path);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ((*s)->size(), 80u);  // rewritten in place, nothing appended
  auto again = CompactFile(path, o);
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(again->compacted);  // masked outputs count as already pruned
}

TEST(Engine, ParseStrategyNames) {
  EXPECT_EQ((*ParseStrategy("context-full"))->name(), "summary");
  EXPECT_EQ((*ParseStrategy("user-prompts"))->name(), "user-prompts");
  EXPECT_EQ(ParseStrategy("magic").status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace compactor

namespace compactor {
namespace {

// pi itself must load what the engine wrote and build the same context.
TEST(EngineOracle, PiLoadsCompactedFilesAndBuildsTheSameContext) {
  COMPACTOR_REQUIRE_ORACLE();
  TempDir d;
  RecordingSummarizer sum;
  for (std::string_view st : {"summary", "user-prompts"}) {
    std::string path = d.Write(std::string(st) + ".jsonl", MakeSession(20, 2000));
    CompactOptions o = Options(&sum);
    o.strategy = FindStrategy(st);
    auto r = CompactFile(path, o);
    ASSERT_TRUE(r.ok() && r->compacted);
    testing::ExpectPiBuildsOurContextAfterATurn(path, r->entry_id, std::string(st));
  }
}

}  // namespace
}  // namespace compactor

#include "support/fake_llm_server.h"

namespace compactor {
namespace {

// `compact --summarizer MODEL` sends the summary request to the configured
// endpoint (a fake OpenAI-compatible server on 127.0.0.1) and stores its reply.
TEST(EngineCli, CompactWithAConfiguredModel) {
  testing::FakeLlmServer server;
  ASSERT_TRUE(server.Start());
  server.Push(
      testing::FakeReply(200, testing::FakeLlmServer::ChatReply("## Goal\nModel-written summary")));
  server.Push(testing::FakeReply(200, testing::FakeLlmServer::ChatReply("turn prefix summary")));
  TempDir d;
  std::string path = d.Write("s.jsonl", MakeSession(20, 2000));
  std::string settings = d.Write(
      "settings.json",
      R"({"keepRecentTokens": 2000, "models": {"local": {"provider": "openai-chat", "baseUrl": ")" +
          server.base_url() + R"(", "model": "qwen", "contextWindow": 32768}}})");
  auto r =
      testing::RunCli({"compact", path, "--summarizer", "local", "--settings", settings, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j["compacted"].get<bool>());
  EXPECT_NE(j["summary"].get<std::string>().find("Model-written summary"), std::string::npos);
  ASSERT_GE(server.request_count(), 1u);
  auto body = nlohmann::json::parse(server.requests()[0].body);
  EXPECT_EQ(body["model"], "qwen");
  auto unknown = testing::RunCli({"compact", path, "--summarizer", "nope", "--settings", settings});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("nope"), std::string::npos);
  auto no_settings = testing::RunCli({"compact", path, "--summarizer", "local"});
  EXPECT_EQ(no_settings.exit_code, 2);
}

// `compact --remote-compaction MODEL` also stores OpenAI's native compaction;
// the text summary stays what pi and every other model see.
TEST(EngineCli, CompactStoresTheNativeCompactionOfAResponsesModel) {
  testing::FakeLlmServer server;
  ASSERT_TRUE(server.Start());
  server.Push(testing::FakeReply(
      200, R"({"output":[{"type":"compaction","encrypted_content":"OPAQUE-1"}]})"));
  TempDir d;
  std::string path = d.Write("s.jsonl", MakeSession(20, 2000));
  std::string settings = d.Write(
      "settings.json",
      R"({"keepRecentTokens": 2000, "models": {"gpt": {"provider": "openai-responses", "baseUrl": ")" +
          server.base_url() + R"(/v1", "model": "gpt-5"}, "chat": {"provider": "openai-chat",)" +
          R"( "model": "m"}}})");
  auto r = testing::RunCli(
      {"compact", path, "--remote-compaction", "gpt", "--settings", settings, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_TRUE(j["compacted"].get<bool>());
  EXPECT_EQ(
      j["entry"]["preserveData"]["openaiRemoteCompaction"]["compactionItem"]["encrypted_content"],
      "OPAQUE-1");
  ASSERT_EQ(server.request_count(), 1u);
  EXPECT_EQ(server.requests()[0].path, "/v1/responses/compact");
  EXPECT_EQ(nlohmann::json::parse(server.requests()[0].body)["model"], "gpt-5");
  auto ctx = testing::RunCli({"context", path, "--json"});
  ASSERT_EQ(ctx.exit_code, 0);
  EXPECT_EQ(ctx.out.find("OPAQUE-1"), std::string::npos);  // pi's view: the text summary

  auto wrong =
      testing::RunCli({"compact", path, "--remote-compaction", "chat", "--settings", settings});
  EXPECT_EQ(wrong.exit_code, 2);
  EXPECT_NE(wrong.err.find("openai-responses"), std::string::npos);
  // A failing endpoint is a warning; the local compaction is still written.
  server.Push(testing::FakeReply(503, "down"));
  std::string path2 = d.Write("s2.jsonl", MakeSession(20, 2000));
  auto down =
      testing::RunCli({"compact", path2, "--remote-compaction", "gpt", "--settings", settings});
  EXPECT_EQ(down.exit_code, 0) << down.err;
  EXPECT_NE(down.err.find("native compaction failed"), std::string::npos);
}

}  // namespace
}  // namespace compactor
