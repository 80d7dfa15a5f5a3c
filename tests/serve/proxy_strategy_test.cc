// --strategy applied by the proxy (docs/serve.md, "Strategies in the
// proxy"): summary, user-prompts, notes and mask, end to end through the
// server in front of the fake upstream for the three APIs. Whatever the
// strategy, the request the upstream gets stays well-formed: tool calls
// paired, system, tools and the newest call and result unchanged, opaque
// items (signed thinking, encrypted reasoning) kept or dropped only with
// their turn.
#include "serve/proxy_strategy.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "compactor/mem_env.h"
#include "serve/compact_requests.h"
#include "serve/serve_fixture.h"

namespace compactor::testing {
namespace {

using Json = nlohmann::json;
using Fields = std::vector<std::pair<std::string, std::string>>;

struct ApiCase {
  const char* api;
  const char* path;
  Json (*make)(int, int);
};

// The requests with opaque items in every turn: a signed thinking block in
// each Anthropic assistant message, an encrypted reasoning item before each
// Responses function call (Chat has none).
Json WithOpaqueItems(std::string_view api, Json req) {
  if (api == "anthropic") {
    for (Json& m : req["messages"]) {
      if (m["role"] != "assistant") continue;
      m["content"].insert(m["content"].begin(),
                          Json{{"type", "thinking"},
                               {"thinking", "let me look"},
                               {"signature", "sig-" + m.dump().substr(0, 8)}});
    }
  } else if (api == "openai-responses") {
    Json input = Json::array();
    int n = 0;
    for (Json& item : req["input"]) {
      if (item["type"] == "function_call") {
        input.push_back({{"type", "reasoning"},
                         {"id", "rs_" + std::to_string(n++)},
                         {"summary", Json::array()},
                         {"encrypted_content", "gAAAA-opaque"}});
      }
      input.push_back(item);
    }
    req["input"] = input;
  }
  return req;
}

// Each tool output repeated `times` times: observations much larger than
// the rest of the conversation, as in a real agent's history (mask).
Json WithLargeOutputs(std::string_view api, Json req, int times) {
  auto repeat = [times](Json& v) {
    std::string one = v.get<std::string>(), all;
    for (int i = 0; i < times; ++i) all += (i ? "\n" : "") + one;
    v = all;
  };
  if (api == "anthropic") {
    for (Json& m : req["messages"]) {
      if (!m["content"].is_array()) continue;
      for (Json& b : m["content"]) {
        if (b["type"] == "tool_result") repeat(b["content"]);
      }
    }
  } else if (api == "openai-responses") {
    for (Json& item : req["input"]) {
      if (item["type"] == "function_call_output") repeat(item["output"]);
    }
  } else {
    for (Json& m : req["messages"]) {
      if (m["role"] == "tool") repeat(m["content"]);
    }
  }
  return req;
}

Fields HeadersOf(std::string_view api) {
  if (api == "anthropic") {
    return {{"x-api-key", "dummy"},
            {"anthropic-version", "2023-06-01"},
            {"content-type", "application/json"}};
  }
  return {{"authorization", "Bearer dummy"}, {"content-type", "application/json"}};
}

ClientRequest Read(std::string_view api, const std::string& body) {
  auto r = ReadClientRequest(api, body);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? std::move(*r) : ClientRequest{};
}

std::multiset<std::string> RawItems(const ClientRequest& r) {
  std::multiset<std::string> out;
  for (const ClientItem& item : r.items) out.emplace(r.Text(item));
  return out;
}

// The checks every strategy must pass.
void ExpectWellFormed(const ClientRequest& orig, const ClientRequest& sent) {
  // Tool calls paired.
  std::multiset<std::string> calls, results;
  for (const ClientItem& item : sent.items) {
    calls.insert(item.call_ids.begin(), item.call_ids.end());
    results.insert(item.result_ids.begin(), item.result_ids.end());
  }
  EXPECT_EQ(calls, results);
  // System, tools, parameters and the newest call and result unchanged.
  EXPECT_EQ(sent.Text(sent.system), orig.Text(orig.system));
  EXPECT_EQ(sent.Text(sent.tools), orig.Text(orig.tools));
  EXPECT_EQ(sent.model, orig.model);
  ASSERT_GE(sent.items.size(), 2u);
  const size_t n = orig.items.size(), m = sent.items.size();
  EXPECT_EQ(sent.Text(sent.items[m - 1]), orig.Text(orig.items[n - 1]));
  EXPECT_EQ(sent.Text(sent.items[m - 2]), orig.Text(orig.items[n - 2]));
  // Opaque items verbatim, kept or dropped with their whole turn (the
  // user's own prompts of a dropped turn may stay: user-prompts).
  const std::multiset<std::string> kept = RawItems(sent);
  std::map<int, std::vector<size_t>> turns;
  for (size_t i = 0; i < n; ++i) turns[orig.items[i].turn].push_back(i);
  for (const auto& [turn, items] : turns) {
    int opaque = 0, opaque_kept = 0, other_kept = 0;
    for (size_t i : items) {
      const bool in = kept.count(std::string(orig.Text(orig.items[i]))) > 0;
      if (orig.items[i].opaque) {
        ++opaque;
        opaque_kept += in;
      } else if (orig.items[i].kind != ClientItemKind::kUser && in) {
        ++other_kept;
      }
    }
    if (opaque == 0) continue;
    EXPECT_TRUE(opaque_kept == 0 || opaque_kept == opaque) << "turn " << turn;
    if (opaque_kept == 0) {
      EXPECT_EQ(other_kept, 0) << "turn " << turn;
    }
  }
  for (const ClientItem& item : sent.items) {
    if (item.opaque) {
      EXPECT_GT(RawItems(orig).count(std::string(sent.Text(item))), 0u);
    }
  }
}

struct StrategyCase {
  const char* strategy;
  int64_t window;
  int words;
  int output_repeat;  // each tool output this many times
};

class ProxyStrategyTest : public ServeFixture,
                          public ::testing::WithParamInterface<std::tuple<ApiCase, StrategyCase>> {
 protected:
  const ApiCase& api() const { return std::get<0>(GetParam()); }
  const StrategyCase& strategy() const { return std::get<1>(GetParam()); }

  // Sends the conversation at `turns` turns; returns what the upstream got.
  std::string Send(int turns, std::string* client_body) {
    *client_body =
        WithLargeOutputs(api().api, WithOpaqueItems(api().api, api().make(turns, strategy().words)),
                         strategy().output_repeat)
            .dump();
    const size_t before = upstream_.request_count();
    auto res = Fetch(port_, "POST", api().path, HeadersOf(api().api), *client_body);
    EXPECT_TRUE(res.has_value());
    if (!res) return "";
    EXPECT_EQ(res->status, 200) << res->body;
    EXPECT_EQ(res->Header("x-compactor-compacted").rfind("tokens-before=", 0), 0u)
        << res->Header("x-compactor-compacted");
    EXPECT_EQ(upstream_.request_count(), before + 1);
    return upstream_.requests().back().body;
  }

  std::string notes_path_ = ::testing::TempDir() + "/proxy_strategy_notes.md";
};

TEST_P(ProxyStrategyTest, AppliedAndTheRequestStaysWellFormed) {
  const std::string name = strategy().strategy;
  const std::string notes = "NOTES: the parser is done; next, the writer.";
  {
    std::ofstream f(notes_path_);
    f << "\n  " << notes << "\n\n";
  }
  StartProxy([&](ServeOptions& o) {
    o.context_window = strategy().window;
    o.summarizer = "offline";
    o.strategy = name;
    if (name == "notes") o.notes_file = notes_path_;
  });
  std::string client;
  const std::string sent_body = Send(30, &client);
  ASSERT_FALSE(sent_body.empty());
  const ClientRequest orig = Read(api().api, client);
  const ClientRequest sent = Read(api().api, sent_body);
  EXPECT_LT(sent_body.size(), client.size());
  ExpectWellFormed(orig, sent);

  // Where the summary message is (none for mask).
  size_t summary_at = sent.items.size();
  for (size_t i = 0; i < sent.items.size(); ++i) {
    if (sent.Text(sent.items[i]).find("<summary>") != std::string_view::npos) summary_at = i;
  }
  if (name == "mask") {
    EXPECT_EQ(summary_at, sent.items.size());
    ASSERT_EQ(sent.items.size(), orig.items.size());
    int masked = 0;
    for (size_t i = 0; i < orig.items.size(); ++i) {
      EXPECT_EQ(sent.items[i].kind, orig.items[i].kind) << i;
      EXPECT_EQ(sent.items[i].call_ids, orig.items[i].call_ids) << i;
      EXPECT_EQ(sent.items[i].result_ids, orig.items[i].result_ids) << i;
      if (sent.Text(sent.items[i]) == orig.Text(orig.items[i])) continue;
      // Only tool results change, to the placeholder.
      EXPECT_EQ(orig.items[i].kind, ClientItemKind::kToolResult) << i;
      EXPECT_NE(sent.Text(sent.items[i]).find("[Masked output of read: "), std::string_view::npos)
          << sent.Text(sent.items[i]);
      ++masked;
    }
    EXPECT_GT(masked, 0);
  } else {
    ASSERT_LT(summary_at, sent.items.size());
    EXPECT_LT(sent.items.size(), orig.items.size());
    if (name == "notes") {
      EXPECT_NE(sent.Text(sent.items[summary_at]).find(notes), std::string_view::npos);
    }
    // Before the summary: the user's own prompts, verbatim (user-prompts),
    // otherwise nothing but system items.
    const std::multiset<std::string> orig_items = RawItems(orig);
    for (size_t i = 0; i < summary_at; ++i) {
      const ClientItem& item = sent.items[i];
      if (item.kind == ClientItemKind::kSystem) continue;
      EXPECT_EQ(name, "user-prompts") << sent.Text(item);
      EXPECT_EQ(item.kind, ClientItemKind::kUser);
      EXPECT_GT(orig_items.count(std::string(sent.Text(item))), 0u);
    }
    if (name == "user-prompts") {
      // The first prompt (the task) and the newest ones before the cut.
      const size_t first = sent.items[0].kind == ClientItemKind::kSystem ? 1 : 0;
      ASSERT_GE(summary_at, first + 2);
      EXPECT_NE(sent.Text(sent.items[first]).find("turn 0:"), std::string_view::npos)
          << sent.Text(sent.items[first]);
    }
  }

  // The next request of the conversation: what the first one sent before
  // its kept tail reaches the upstream with the same bytes (prompt cache).
  std::string client2;
  const std::string sent2_body = Send(31, &client2);
  ASSERT_FALSE(sent2_body.empty());
  const ClientRequest sent2 = Read(api().api, sent2_body);
  ExpectWellFormed(Read(api().api, client2), sent2);
  const size_t same = name == "mask" ? 1 : summary_at + 1;
  ASSERT_GE(sent2.items.size(), same);
  for (size_t i = 0; i < same; ++i) {
    EXPECT_EQ(sent2.Text(sent2.items[i]), sent.Text(sent.items[i])) << i;
  }
  if (name == "mask") {
    // Every result masked the first time is masked the same way again.
    for (size_t i = 0; i < sent.items.size(); ++i) {
      if (sent.Text(sent.items[i]).find("[Masked output") == std::string_view::npos) continue;
      EXPECT_EQ(sent2.Text(sent2.items[i]), sent.Text(sent.items[i])) << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    ThreeApis, ProxyStrategyTest,
    ::testing::Combine(
        ::testing::Values(ApiCase{"anthropic", "/v1/messages", AnthropicRequest},
                          ApiCase{"openai-responses", "/v1/responses", ResponsesRequest},
                          ApiCase{"openai-chat", "/v1/chat/completions", ChatRequest}),
        ::testing::Values(StrategyCase{"summary", 8000, 40, 1},
                          StrategyCase{"user-prompts", 8000, 40, 1},
                          StrategyCase{"notes", 8000, 40, 1}, StrategyCase{"mask", 24000, 40, 12})),
    [](const auto& info) {
      std::string name =
          std::string(std::get<0>(info.param).api) + "_" + std::get<1>(info.param).strategy;
      for (char& c : name) {
        if (c == '-') c = '_';
      }
      return name;
    });

// Mask never touches a result under the size floor, the newest result, or
// the protected skill tool's results; under the threshold nothing happens.
TEST(PlanMaskRequestTest, KeepsTheNewestSmallAndProtectedResults) {
  Json req = AnthropicRequest(6, 120);
  req["messages"][1]["content"][1]["name"] = "skill";  // turn 0's call
  const std::string body = req.dump();
  const ClientRequest r = Read("anthropic", body);
  const ProviderApi& api = *FindProviderApi("anthropic");
  serve::MaskInput in;
  in.force = true;  // whatever the threshold, as long as it gets smaller
  in.keep_recent_tokens = 0;
  std::string why;
  auto m = serve::PlanMaskRequest(api, r, in, &why);
  ASSERT_TRUE(m.has_value()) << why;
  const ClientRequest sent = Read("anthropic", m->body);
  EXPECT_EQ(m->masked, 4u);  // turns 1..4; turn 0 is the skill's, turn 5 the newest
  EXPECT_EQ(sent.Text(sent.items[2]), r.Text(r.items[2]));
  EXPECT_EQ(sent.Text(sent.items.back()), r.Text(r.items.back()));
  EXPECT_NE(sent.Text(sent.items[5]), r.Text(r.items[5]));
  in.force = false;
  in.threshold = 1'000'000;
  EXPECT_FALSE(serve::PlanMaskRequest(api, r, in, &why).has_value());
  EXPECT_EQ(why, "under the threshold");
  in.threshold = m->tokens_after - 1;  // masking cannot get under it
  EXPECT_FALSE(serve::PlanMaskRequest(api, r, in, &why).has_value());
  EXPECT_EQ(why, "masking cannot bring the request under the threshold");
  in.force = true;
  in.min_output_tokens = 100'000;
  EXPECT_FALSE(serve::PlanMaskRequest(api, r, in, &why).has_value());
}

TEST(KeptPromptsTest, OldestThenNewestWholePromptsWithinTheBudget) {
  const ClientRequest r = Read("openai-chat", ChatRequest(15, 40).dump());
  // Items: 0 system, then user / call / result per turn: prompts at 1, 4, ..., 43.
  const size_t cut = 43;
  const int64_t budget = 10 * r.items[1].tokens + 9;  // a tenth: the first prompt
  std::vector<size_t> kept = serve::KeptPrompts(r, cut, budget);
  ASSERT_GE(kept.size(), 3u);
  EXPECT_EQ(kept.front(), 1u);
  EXPECT_LT(kept.size(), 14u);  // some prompts in the middle are left to the summary
  EXPECT_EQ(kept.back(), 40u);  // the newest before the cut
  int64_t tail = 0;
  for (size_t k = 1; k < kept.size(); ++k) {
    EXPECT_EQ(r.items[kept[k]].kind, ClientItemKind::kUser);
    if (k + 1 < kept.size()) {
      EXPECT_EQ(kept[k] + 3, kept[k + 1]);  // the newest, contiguous
    }
    tail += r.items[kept[k]].tokens;
  }
  EXPECT_LE(tail, budget - budget / 10);
  EXPECT_GT(tail + r.items[kept[1] - 3].tokens, budget - budget / 10);  // the next did not fit
  EXPECT_TRUE(serve::KeptPrompts(r, cut, 0).empty());
  EXPECT_EQ(serve::KeptPrompts(r, cut, budget), kept);  // stable
}

TEST(ProxyStrategyOfTest, HandoffAndNotesWithoutAFileAreRefused) {
  EXPECT_EQ(*serve::ProxyStrategyOf("summary", false), serve::ProxyStrategy::kSummary);
  EXPECT_EQ(*serve::ProxyStrategyOf("user-prompts", false), serve::ProxyStrategy::kUserPrompts);
  EXPECT_EQ(*serve::ProxyStrategyOf("mask", false), serve::ProxyStrategy::kMask);
  EXPECT_EQ(*serve::ProxyStrategyOf("notes", true), serve::ProxyStrategy::kNotes);
  EXPECT_FALSE(serve::ProxyStrategyOf("notes", false).ok());
  EXPECT_FALSE(serve::ProxyStrategyOf("handoff", false).ok());
  auto mixed = serve::ProxyStrategyOf("mask-summary", false);
  ASSERT_FALSE(mixed.ok());
  EXPECT_NE(mixed.status().message().find("use mask or summary"), std::string::npos);
  // The notes file comes from the settings file's serve section.
  auto env = NewMemEnv();
  env->SetFile("/s.json", R"({"serve": {"notesFile": "/notes.md"}})");
  ServeOptions o;
  o.env = env.get();
  o.upstream = "http://127.0.0.1:9";
  o.store = "/store";
  o.strategy = "notes";
  std::vector<std::string> warnings;
  Status without = ResolveServeDefaults(&o, &warnings);
  EXPECT_NE(without.message().find("notesFile"), std::string::npos) << without.ToString();
  o.settings_file = "/s.json";
  Status with = ResolveServeDefaults(&o, &warnings);
  EXPECT_TRUE(with.ok()) << with.ToString();
  EXPECT_EQ(o.notes_file, "/notes.md");
}

}  // namespace
}  // namespace compactor::testing
