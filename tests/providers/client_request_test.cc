// Client requests (client_request.h): reading realistic bodies of each API
// (Claude Code-like Anthropic Messages, Codex-like Responses, pi-like Chat
// Completions) into items, the cut rules, and rewrites that keep every byte
// they do not replace; Anthropic cache_control budgeting.
#include "compactor/client_request.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <thread>
#include <utility>

#include "compactor/estimate.h"
#include "compactor/message.h"
#include "compactor/provider_api.h"

namespace compactor {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using Json = nlohmann::ordered_json;

// --- bodies --------------------------------------------------------------------

// Claude Code-like: two system blocks with breakpoints, a first user message
// of 4 blocks, thinking blocks with signatures, tool_use / tool_result, a
// breakpoint on the last message; unknown fields at every level, escapes and
// number spellings a re-serialization would change.
const char* kAnthropicBody = R"json({
  "model": "claude-sonnet-4-5",
  "max_tokens": 32000,
  "system": [{"type":"text","text":"You are Claude Code, Anthropic's official CLI for Claude.","cache_control":{"type":"ephemeral"}},
             {"type":"text","text":"Long instructions \u00e9 \/ ...","cache_control":{"type":"ephemeral"}}],
  "messages": [
    {"role":"user","content":[{"type":"text","text":"<system-reminder>\nSkills available.\n</system-reminder>"},{"type":"text","text":"<system-reminder>\nTodo list is empty.\n</system-reminder>"},{"type":"text","text":"<system-reminder>\nCLAUDE.md: use pnpm.\n</system-reminder>"},{"type":"text","text":"Fix the failing test in src/a.ts"}]},
    {"role":"assistant","content":[{"type":"thinking","thinking":"Run the tests first.","signature":"EqQBCkYIBxgCKkB1"},{"type":"text","text":"I'll run the tests."},{"type":"tool_use","id":"toolu_01","name":"Bash","input":{"command":"pnpm test","description":"Run tests"}}]},
    {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_01","content":"FAIL src/a.test.ts\n  expected 2, got 3","is_error":true}]},
    {"role":"assistant","content":[{"type":"thinking","thinking":"Off by one.","signature":"EqQBCkYIBxgCKkB2"},{"type":"tool_use","id":"toolu_02","name":"Read","input":{"file_path":"/w/src/a.ts"}}]},
    {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_02","content":[{"type":"text","text":"export const f = () => 3;"}]}]},
    {"role":"assistant","content":[{"type":"text","text":"Fixed: f returns 2 now.","citations":null}],"x_msg":1.50},
    {"role":"user","content":"Now add a test for g."},
    {"role":"assistant","content":[{"type":"thinking","thinking":"Write the test.","signature":"EqQBCkYIBxgCKkB3"},{"type":"tool_use","id":"toolu_03","name":"Write","input":{"file_path":"/w/src/g.test.ts","content":"test('g', () => {})"}}]},
    {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_03","content":"ok"},{"type":"text","text":"<system-reminder>\nFile written.\n</system-reminder>","cache_control":{"type":"ephemeral","ttl":"1h"}}]}
  ],
  "tools": [{"name":"Bash","description":"Run a shell command","input_schema":{"type":"object","properties":{"command":{"type":"string"}}}},
            {"name":"Read","description":"Read a file","input_schema":{"type":"object","properties":{"file_path":{"type":"string"}}}}],
  "metadata": {"user_id": "user_42_account__session_7f3a"},
  "thinking": {"type": "enabled", "budget_tokens": 31999},
  "context_management": {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]},
  "stream": true,
  "x_future": [1e2, 0.10, "\ud83d\ude00"]
})json";

// Codex-like: developer messages, AGENTS.md and environment context as user
// messages, a compaction item from an earlier remote compaction, reasoning
// items with encrypted_content, function_call / function_call_output.
const char* kResponsesBody = R"json({"model":"gpt-5-codex","input":[
{"type":"message","role":"developer","content":[{"type":"input_text","text":"<permissions instructions>sandbox: danger-full-access</permissions instructions>"}]},
{"type":"message","role":"developer","content":[{"type":"input_text","text":"You are Codex, based on GPT-5."}]},
{"type":"message","role":"user","content":[{"type":"input_text","text":"# AGENTS.md instructions for /w\n\nUse make."}]},
{"type":"message","role":"user","content":[{"type":"input_text","text":"<environment_context>\n  <cwd>/w</cwd>\n</environment_context>"}]},
{"type":"compaction","encrypted_content":"gAAAAABcompaction=="},
{"type":"message","role":"user","content":[{"type":"input_text","text":"fix the build"}]},
{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"**Inspecting**"}],"content":null,"encrypted_content":"gAAAAABreasoning1=="},
{"type":"function_call","id":"fc_1","name":"shell","arguments":"{\"command\":[\"bash\",\"-lc\",\"make\"]}","call_id":"call_1"},
{"type":"function_call_output","call_id":"call_1","output":"make: *** [all] Error 1"},
{"type":"reasoning","id":"rs_2","summary":[],"encrypted_content":"gAAAAABreasoning2=="},
{"type":"message","role":"assistant","id":"msg_1","content":[{"type":"output_text","text":"The build fails: a missing header.","annotations":[]}]},
{"type":"message","role":"user","content":[{"type":"input_text","text":"now run the tests"}]},
{"type":"reasoning","id":"rs_3","summary":[],"encrypted_content":"gAAAAABreasoning3=="},
{"type":"function_call","id":"fc_2","name":"shell","arguments":"{\"command\":[\"bash\",\"-lc\",\"make test\"]}","call_id":"call_2"},
{"type":"function_call_output","call_id":"call_2","output":"all 12 tests passed","x_item_extra":true}
],"tools":[{"type":"function","name":"shell","description":"Runs a command","strict":false,"parameters":{"type":"object","properties":{"command":{"type":"array","items":{"type":"string"}}}}}],
"tool_choice":"auto","parallel_tool_calls":false,"reasoning":{"summary":"auto"},"store":false,"stream":true,
"include":["reasoning.encrypted_content"],"prompt_cache_key":"019a7c1e-conv","client_metadata":{"x-codex":1.0}})json";

// pi-like Chat Completions: a system message, tool_calls (one parallel
// pair) and tool messages.
const char* kChatBody = R"json({"model":"fake-model","messages":[
  {"role":"system","content":"You are a coding agent."},
  {"role":"user","content":[{"type":"text","text":"list files"}]},
  {"role":"assistant","content":null,"tool_calls":[{"id":"call_a","type":"function","function":{"name":"bash","arguments":"{\"command\":\"ls\"}"}}]},
  {"role":"tool","tool_call_id":"call_a","content":"a.txt\nb.txt"},
  {"role":"assistant","content":"Two files."},
  {"role":"user","content":"read both"},
  {"role":"assistant","content":"","tool_calls":[{"id":"call_b","type":"function","function":{"name":"read","arguments":"{\"path\":\"a.txt\"}"}},{"id":"call_c","type":"function","function":{"name":"read","arguments":"{\"path\":\"b.txt\"}"}}]},
  {"role":"tool","tool_call_id":"call_b","content":"A"},
  {"role":"tool","tool_call_id":"call_c","content":"B","x_meta":{"k":[]}}
],"tools":[{"type":"function","function":{"name":"bash","parameters":{"type":"object"}}}],
"stream":true,"stream_options":{"include_usage":true},"max_completion_tokens":8192,"prompt_cache_key":"pk-1"})json";

ClientRequest Read(std::string_view api, std::string body) {
  auto r = ReadClientRequest(api, std::move(body));
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? std::move(r).value() : ClientRequest{};
}

std::vector<std::string> Kinds(const ClientRequest& r) {
  std::vector<std::string> out;
  for (const ClientItem& i : r.items) out.emplace_back(ClientItemKindName(i.kind));
  return out;
}

std::vector<int> Turns(const ClientRequest& r) {
  std::vector<int> out;
  for (const ClientItem& i : r.items) out.push_back(i.turn);
  return out;
}

std::string Tail(const std::string& body, size_t from) { return body.substr(from); }

// `body` with the one occurrence of `from` replaced by `to`.
std::string Replace(std::string body, std::string_view from, std::string_view to) {
  size_t at = body.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  EXPECT_EQ(body.find(from, at + 1), std::string::npos) << from;
  if (at != std::string::npos) body.replace(at, from.size(), to);
  return body;
}

// Everything before the conversation array and after it is unchanged.
void ExpectSameOutside(const ClientRequest& r, const std::string& out) {
  ASSERT_GE(out.size(), r.body.size() - r.conversation.size());
  EXPECT_EQ(out.substr(0, r.conversation.begin), r.body.substr(0, r.conversation.begin));
  const std::string after = r.body.substr(r.conversation.end);
  EXPECT_EQ(out.substr(out.size() - after.size()), after);
}

int CountMarkers(const Json& j) {
  int n = 0;
  if (j.is_object()) {
    if (j.contains("cache_control") && !j["cache_control"].is_null()) ++n;
    for (const auto& [k, v] : j.items()) n += CountMarkers(v);
  } else if (j.is_array()) {
    for (const Json& v : j) n += CountMarkers(v);
  }
  return n;
}

// --- Anthropic -------------------------------------------------------------------

TEST(ClientRequestTest, AnthropicItems) {
  ClientRequest r = Read("anthropic", kAnthropicBody);
  EXPECT_EQ(r.api, "anthropic");
  EXPECT_EQ(r.model, "claude-sonnet-4-5");
  EXPECT_TRUE(r.stream);
  EXPECT_THAT(std::string(r.Text(r.system)), ::testing::StartsWith("[{\"type\":\"text\""));
  EXPECT_THAT(std::string(r.Text(r.system)), HasSubstr("\\u00e9 \\/"));
  EXPECT_THAT(std::string(r.Text(r.tools)), ::testing::StartsWith("[{\"name\":\"Bash\""));
  EXPECT_EQ(r.system_cache_breakpoints, 2);
  EXPECT_EQ(r.tools_cache_breakpoints, 0);
  EXPECT_EQ(r.hints.at("metadata.user_id"), "user_42_account__session_7f3a");
  EXPECT_THAT(Kinds(r), ElementsAre("user", "tool_call", "tool_result", "tool_call", "tool_result",
                                    "assistant", "user", "tool_call", "tool_result"));
  EXPECT_THAT(Turns(r), ElementsAre(0, 0, 0, 0, 0, 0, 1, 1, 1));
  EXPECT_THAT(r.items[1].call_ids, ElementsAre("toolu_01"));
  EXPECT_THAT(r.items[1].call_names, ElementsAre("Bash"));
  EXPECT_THAT(r.items[2].result_ids, ElementsAre("toolu_01"));
  EXPECT_TRUE(r.items[1].opaque);
  EXPECT_TRUE(r.items[3].opaque);
  EXPECT_FALSE(r.items[5].opaque);
  EXPECT_EQ(r.items[8].cache_breakpoints, 1);
  EXPECT_EQ(
      r.Text(r.items[5]),
      R"({"role":"assistant","content":[{"type":"text","text":"Fixed: f returns 2 now.","citations":null}],"x_msg":1.50})");
  EXPECT_EQ(r.Text(r.items[6]), R"({"role":"user","content":"Now add a test for g."})");
  // pi's estimate: "Now add a test for g." is 21 characters.
  EXPECT_EQ(r.items[6].tokens, 6);
  EXPECT_EQ(r.ItemTokens(0, r.items.size()), [&] {
    int64_t sum = 0;
    for (const ClientItem& i : r.items) sum += i.tokens;
    return sum;
  }());
}

TEST(ClientRequestTest, AnthropicItemsAsPiMessages) {
  ClientRequest r = Read("anthropic", kAnthropicBody);
  const ProviderApi* api = FindProviderApi("anthropic");
  ASSERT_NE(api, nullptr);
  std::vector<std::string> first = api->ClientItemMessages(r, 0);
  ASSERT_EQ(first.size(), 1u);
  auto user = ParseMessage(first[0]);
  ASSERT_TRUE(user.ok());
  EXPECT_EQ(user->role, Role::kUser);
  EXPECT_EQ(user->content.size(), 4u);

  std::vector<std::string> call = api->ClientItemMessages(r, 1);
  ASSERT_EQ(call.size(), 1u);
  EXPECT_EQ(
      call[0],
      R"({"role":"assistant","content":[{"type":"thinking","thinking":"Run the tests first.",)"
      R"("thinkingSignature":"EqQBCkYIBxgCKkB1"},{"type":"text","text":"I'll run the tests."},)"
      R"({"type":"toolCall","id":"toolu_01","name":"Bash","arguments":)"
      R"({"command":"pnpm test","description":"Run tests"}}]})");
  EXPECT_EQ(r.items[1].tokens, EstimateMessageTokens(call[0]));

  // A tool_result message with a text block: one toolResult, then the text as a user message.
  std::vector<std::string> last = api->ClientItemMessages(r, 8);
  ASSERT_EQ(last.size(), 2u);
  auto result = ParseMessage(last[0]);
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->role, Role::kToolResult);
  EXPECT_EQ(result->tool_call_id, "toolu_03");
  EXPECT_EQ(result->tool_name, "Write");
  EXPECT_EQ(ParseMessage(last[1])->role, Role::kUser);
  EXPECT_TRUE(ParseMessage(api->ClientItemMessages(r, 2)[0])->is_error);
}

// Each item's estimate is pi's estimate of its messages, whether the thread
// read the item before (an agent resends its conversation with every
// request: the estimate is then remembered) or not: the same items read again,
// in a new thread (nothing remembered), and moved to other neighbours.
TEST(ClientRequestTest, ItemEstimatesAreTheSameWhenTheItemsWereReadBefore) {
  for (const auto& [api_name, body] :
       {std::pair<const char*, const char*>{"anthropic", kAnthropicBody},
        {"openai-responses", kResponsesBody},
        {"openai-chat", kChatBody}}) {
    const ProviderApi* api = FindProviderApi(api_name);
    ASSERT_NE(api, nullptr);
    ClientRequest first = Read(api_name, body);
    ClientRequest again = Read(api_name, body);
    ClientRequest fresh;
    std::thread([&] { fresh = Read(api_name, body); }).join();
    ASSERT_EQ(first.items.size(), again.items.size());
    ASSERT_EQ(first.items.size(), fresh.items.size());
    for (size_t i = 0; i < first.items.size(); ++i) {
      int64_t expected = 0;
      for (const std::string& m : api->ClientItemMessages(first, i)) {
        expected += EstimateMessageTokens(m);
      }
      EXPECT_EQ(first.items[i].tokens, expected) << api_name << " item " << i;
      EXPECT_EQ(again.items[i].tokens, expected) << api_name << " item " << i;
      EXPECT_EQ(fresh.items[i].tokens, expected) << api_name << " item " << i;
    }
  }
  // The same bytes under another API are another item (Chat has no
  // input_text parts): read by Responses first, then by Chat.
  const std::string item =
      R"({"role":"user","content":[{"type":"input_text","text":"a longer text to count"}]})";
  ClientRequest responses = Read("openai-responses", R"({"model":"m","input":[)" + item + "]}");
  ClientRequest chat = Read("openai-chat", R"({"model":"m","messages":[)" + item + "]}");
  EXPECT_GT(responses.items[0].tokens, 0);
  int64_t chat_expected = 0;
  for (const std::string& m : FindProviderApi("openai-chat")->ClientItemMessages(chat, 0)) {
    chat_expected += EstimateMessageTokens(m);
  }
  EXPECT_EQ(chat.items[0].tokens, chat_expected);
  EXPECT_NE(chat.items[0].tokens, responses.items[0].tokens);
}

TEST(ClientRequestTest, AnthropicCuts) {
  ClientRequest r = Read("anthropic", kAnthropicBody);
  // Opaque thinking keeps turn 0 whole (only its first user message may go
  // alone); the newest tool call (item 7) stays.
  EXPECT_THAT(ValidCuts(r), ElementsAre(1, 6, 7));
  for (size_t k = 0; k <= r.items.size(); ++k) {
    bool listed = k == 1 || k == 6 || k == 7;
    EXPECT_EQ(ValidateCut(r, k).ok(), listed) << k << ": " << ValidateCut(r, k).ToString();
  }
  EXPECT_THAT(ValidateCut(r, 2).message(), HasSubstr("toolu_01"));
  EXPECT_THAT(ValidateCut(r, 3).message(), HasSubstr("opaque"));
  EXPECT_THAT(ValidateCut(r, 8).message(), HasSubstr("newest tool call"));
  EXPECT_EQ(ValidateCut(r, 0).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ValidateCut(r, 9).code(), StatusCode::kInvalidArgument);
}

TEST(ClientRequestTest, AnthropicRewriteKeepsBytesAndAddsBreakpoint) {
  ClientRequest r = Read("anthropic", kAnthropicBody);
  auto out = RewriteClientRequest(r, {6, "Summary of turn 0: the test was fixed.", {}});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ExpectSameOutside(r, *out);
  // "[" + the summary + "," + items 6.. with their separators, byte for byte.
  std::string summary =
      R"({"role":"user","content":[{"type":"text","text":"Summary of turn 0: the test was fixed.",)"
      R"("cache_control":{"type":"ephemeral","ttl":"1h"}}]})";
  EXPECT_EQ(out->substr(r.conversation.begin, 1 + summary.size() + 1), "[" + summary + ",");
  EXPECT_EQ(out->substr(r.conversation.begin + 2 + summary.size()),
            Tail(r.body, r.items[6].raw.begin));
  // 2 system + the summary + the last message = 4 breakpoints.
  Json doc = Json::parse(*out);
  EXPECT_EQ(CountMarkers(doc), 4);
  ASSERT_EQ(doc["messages"].size(), 4u);

  // The rewritten body reads back: summary first, then the kept items.
  ClientRequest again = Read("anthropic", *out);
  EXPECT_THAT(Kinds(again), ElementsAre("user", "user", "tool_call", "tool_result"));
  for (size_t i = 1; i < again.items.size(); ++i) {
    EXPECT_EQ(again.Text(again.items[i]), r.Text(r.items[i + 5]));
  }
}

TEST(ClientRequestTest, AnthropicRewriteStaysWithinFourBreakpoints) {
  // One more breakpoint on item 6 (left from a previous request) and one on
  // the tools: 2 + 1 + 1 + 1 (last) + 1 (summary) = 6, two too many.
  const std::string marked_item6 = Replace(
      kAnthropicBody, R"({"role":"user","content":"Now add a test for g."})",
      R"({"role":"user","content":[{"type":"text","text":"Now add a test for g.","cache_control":{"type":"ephemeral"}}]})");
  const std::string body =
      Replace(marked_item6, R"("description":"Read a file")",
              R"("description":"Read a file","cache_control":{"type":"ephemeral"})");
  ClientRequest r = Read("anthropic", body);
  EXPECT_EQ(r.tools_cache_breakpoints, 1);
  EXPECT_EQ(r.items[6].cache_breakpoints, 1);
  auto out = RewriteClientRequest(r, {6, "S", {}});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ExpectSameOutside(r, *out);
  Json doc = Json::parse(*out);
  EXPECT_EQ(CountMarkers(doc), 4);
  // The earliest kept breakpoints went (item 6's, then the last message's);
  // the messages are otherwise unchanged.
  ClientRequest again = Read("anthropic", *out);
  ASSERT_EQ(again.items.size(), 4u);
  EXPECT_EQ(again.items[0].cache_breakpoints, 1) << "the summary keeps its breakpoint";
  EXPECT_EQ(again.items[1].cache_breakpoints, 0);
  EXPECT_EQ(again.items[3].cache_breakpoints, 0);
  EXPECT_TRUE(SameIgnoringCacheControl(again.Text(again.items[1]), r.Text(r.items[6])));
  EXPECT_TRUE(SameIgnoringCacheControl(again.Text(again.items[3]), r.Text(r.items[8])));
  EXPECT_EQ(again.Text(again.items[2]), r.Text(r.items[7]));

  // One too many: only item 6's goes, the last message keeps its breakpoint.
  ClientRequest r2 = Read("anthropic", marked_item6);
  EXPECT_EQ(r2.tools_cache_breakpoints, 0);
  auto out2 = RewriteClientRequest(r2, {6, "S", {}});
  ASSERT_TRUE(out2.ok());
  ClientRequest again2 = Read("anthropic", *out2);
  EXPECT_EQ(CountMarkers(Json::parse(*out2)), 4);
  EXPECT_EQ(again2.items[1].cache_breakpoints, 0);
  EXPECT_EQ(again2.Text(again2.items[3]), r2.Text(r2.items[8]));
}

TEST(ClientRequestTest, AnthropicSystemAndToolsFullLeavesNoRoomForTheSummary) {
  std::string body =
      Replace(kAnthropicBody, R"("description":"Run a shell command")",
              R"("description":"Run a shell command","cache_control":{"type":"ephemeral"})");
  body = Replace(body, R"("description":"Read a file")",
                 R"("description":"Read a file","cache_control":{"type":"ephemeral"})");
  ClientRequest r = Read("anthropic", body);
  EXPECT_EQ(r.system_cache_breakpoints + r.tools_cache_breakpoints, 4);
  auto out = RewriteClientRequest(r, {6, "S", {}});
  ASSERT_TRUE(out.ok());
  ExpectSameOutside(r, *out);  // the system prompt and tools are never changed
  EXPECT_EQ(CountMarkers(Json::parse(*out)), 4);
  ClientRequest again = Read("anthropic", *out);
  EXPECT_EQ(again.items[0].cache_breakpoints, 0);
  EXPECT_EQ(again.items[3].cache_breakpoints, 0);
}

TEST(ClientRequestTest, PrefixComparisonIgnoresMovingBreakpoints) {
  ClientRequest first = Read("anthropic", kAnthropicBody);
  // The next request: the breakpoint moved from item 8 to a new last message.
  std::string next =
      Replace(kAnthropicBody, R"(,"cache_control":{"type":"ephemeral","ttl":"1h"})", "");
  next = Replace(next, "\n  ],\n  \"tools\"", R"(,
    {"role":"assistant","content":[{"type":"text","text":"Added."}]},
    {"role":"user","content":[{"type":"text","text":"thanks","cache_control":{"type":"ephemeral"}}]}
  ],
  "tools")");
  ClientRequest second = Read("anthropic", next);
  ASSERT_EQ(second.items.size(), 11u);
  EXPECT_NE(first.Text(first.items[8]), second.Text(second.items[8]));
  EXPECT_EQ(SharedItemPrefix(first, second), 9u);
  EXPECT_TRUE(SameSystemAndTools(first, second));
  EXPECT_FALSE(SameIgnoringCacheControl(R"({"a":1})", R"({"a":2,"cache_control":{}})"));
  EXPECT_TRUE(SameIgnoringCacheControl(R"({"a":[{"b":1,"cache_control":{"type":"ephemeral"}}]})",
                                       R"({"a":[{"b":1}]})"));
  EXPECT_FALSE(SameIgnoringCacheControl("not json", "not  json"));
  ClientRequest chat = Read("openai-chat", kChatBody);
  EXPECT_EQ(SharedItemPrefix(first, chat), 0u) << "different APIs share nothing";
}

// --- Responses -------------------------------------------------------------------

TEST(ClientRequestTest, ResponsesItems) {
  ClientRequest r = Read("openai-responses", kResponsesBody);
  EXPECT_EQ(r.model, "gpt-5-codex");
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.system.empty()) << "Codex sends no instructions";
  EXPECT_THAT(std::string(r.Text(r.tools)), ::testing::StartsWith("[{\"type\":\"function\""));
  EXPECT_EQ(r.hints.at("prompt_cache_key"), "019a7c1e-conv");
  EXPECT_EQ(r.hints.count("compaction_trigger"), 0u);
  EXPECT_THAT(Kinds(r), ElementsAre("system", "system", "user", "user", "compaction", "user",
                                    "reasoning", "tool_call", "tool_result", "reasoning",
                                    "assistant", "user", "reasoning", "tool_call", "tool_result"));
  EXPECT_THAT(Turns(r), ElementsAre(0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2));
  std::vector<size_t> opaque;
  for (size_t i = 0; i < r.items.size(); ++i) {
    if (r.items[i].opaque) opaque.push_back(i);
  }
  EXPECT_THAT(opaque, ElementsAre(4, 6, 9, 12));
  EXPECT_THAT(r.items[7].call_ids, ElementsAre("call_1"));
  EXPECT_THAT(r.items[7].call_names, ElementsAre("shell"));
  EXPECT_THAT(r.items[8].result_ids, ElementsAre("call_1"));
  EXPECT_EQ(r.items[5].tokens, 4) << "\"fix the build\": 13 characters";
  EXPECT_EQ(r.items[4].tokens, 0) << "encrypted content counts nothing";
  const ProviderApi* api = FindProviderApi("openai-responses");
  EXPECT_EQ(api->ClientItemMessages(r, 7)[0],
            R"({"role":"assistant","content":[{"type":"toolCall","id":"call_1","name":"shell",)"
            R"("arguments":{"command":["bash","-lc","make"]}}]})");
  EXPECT_EQ(api->ClientItemMessages(r, 8)[0],
            R"({"role":"toolResult","toolCallId":"call_1","toolName":"shell","content":)"
            R"([{"type":"text","text":"make: *** [all] Error 1"}],"isError":false})");
  EXPECT_EQ(api->ClientItemMessages(r, 6)[0],
            R"({"role":"assistant","content":[{"type":"thinking","thinking":"**Inspecting**",)"
            R"("thinkingSignature":"gAAAAABreasoning1=="}]})");
  EXPECT_TRUE(api->ClientItemMessages(r, 0).empty()) << "system items have no pi message";
}

TEST(ClientRequestTest, ResponsesCutsAndRewrite) {
  ClientRequest r = Read("openai-responses", kResponsesBody);
  EXPECT_THAT(ValidCuts(r), ElementsAre(3, 4, 5, 6, 11, 12));
  for (size_t k = 0; k <= r.items.size(); ++k) {
    bool listed = k == 3 || k == 4 || k == 5 || k == 6 || k == 11 || k == 12;
    EXPECT_EQ(ValidateCut(r, k).ok(), listed) << k << ": " << ValidateCut(r, k).ToString();
  }
  EXPECT_THAT(ValidateCut(r, 7).message(), HasSubstr("opaque item 6 (reasoning)"));
  EXPECT_THAT(ValidateCut(r, 8).message(), HasSubstr("call_1"));
  EXPECT_THAT(ValidateCut(r, 2).message(), HasSubstr("nothing but system items"));

  // Turn 0 and 1 replaced; the developer messages stay, and so do the
  // AGENTS.md and environment messages the caller keeps.
  auto out = RewriteClientRequest(r, {11, "Earlier: the build was fixed.", {2, 3}});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ExpectSameOutside(r, *out);
  std::string expected = "[";
  for (size_t i : {0, 1, 2, 3}) expected += std::string(r.Text(r.items[i])) + ",";
  expected +=
      R"({"type":"message","role":"user","content":[{"type":"input_text","text":"Earlier: the build was fixed."}]},)";
  expected +=
      Tail(r.body, r.items[11].raw.begin).substr(0, r.conversation.end - r.items[11].raw.begin);
  EXPECT_EQ(out->substr(r.conversation.begin, expected.size()), expected);
  ClientRequest again = Read("openai-responses", *out);
  EXPECT_THAT(Kinds(again), ElementsAre("system", "system", "user", "user", "user", "user",
                                        "reasoning", "tool_call", "tool_result"));
  EXPECT_EQ(again.Text(again.items.back()), r.Text(r.items.back()));

  EXPECT_THAT(RewriteClientRequest(r, {11, "S", {6}}).status().message(),
              HasSubstr("only user and system items"));
  EXPECT_THAT(RewriteClientRequest(r, {11, "S", {12}}).status().message(),
              HasSubstr("not before the cut"));
  EXPECT_EQ(RewriteClientRequest(r, {8, "S", {}}).status().code(), StatusCode::kInvalidArgument);
}

TEST(ClientRequestTest, ResponsesStringInputAndCompactionTrigger) {
  ClientRequest s = Read("openai-responses", R"({"model":"m","input":"hello there"})");
  ASSERT_EQ(s.items.size(), 1u);
  EXPECT_EQ(s.items[0].kind, ClientItemKind::kUser);
  EXPECT_EQ(s.Text(s.items[0]), "\"hello there\"");
  EXPECT_EQ(s.items[0].tokens, 3);
  EXPECT_TRUE(ValidCuts(s).empty());
  EXPECT_FALSE(RewriteClientRequest(s, {1, "S", {}}).ok());

  ClientRequest t =
      Read("openai-responses", R"({"model":"m","input":[{"role":"user","content":"hi"},)"
                               R"({"type":"compaction_trigger"}],"stream":false})");
  EXPECT_EQ(t.hints.at("compaction_trigger"), "true");
  EXPECT_EQ(t.items[0].type, "message") << "a message without a type";
  EXPECT_EQ(t.items[1].kind, ClientItemKind::kOther);
  EXPECT_FALSE(t.stream);
}

// --- Chat ------------------------------------------------------------------------

TEST(ClientRequestTest, ChatItemsCutsAndRewrite) {
  ClientRequest r = Read("openai-chat", kChatBody);
  EXPECT_TRUE(r.system.empty());
  EXPECT_EQ(r.hints.at("prompt_cache_key"), "pk-1");
  EXPECT_THAT(Kinds(r), ElementsAre("system", "user", "tool_call", "tool_result", "assistant",
                                    "user", "tool_call", "tool_result", "tool_result"));
  EXPECT_THAT(Turns(r), ElementsAre(0, 0, 0, 0, 0, 1, 1, 1, 1));
  EXPECT_THAT(r.items[6].call_ids, ElementsAre("call_b", "call_c"));
  EXPECT_THAT(r.items[8].result_ids, ElementsAre("call_c"));
  EXPECT_THAT(ValidCuts(r), ElementsAre(2, 4, 5, 6));
  EXPECT_THAT(ValidateCut(r, 3).message(), HasSubstr("call_a"));
  EXPECT_THAT(ValidateCut(r, 7).message(), HasSubstr("newest tool call"));

  auto out = RewriteClientRequest(r, {5, "They listed two files.", {}});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ExpectSameOutside(r, *out);
  std::string expected = "[" + std::string(r.Text(r.items[0])) +
                         R"(,{"role":"user","content":"They listed two files."},)" +
                         Tail(r.body, r.items[5].raw.begin);
  EXPECT_EQ(out->substr(r.conversation.begin), expected);

  const ProviderApi* api = FindProviderApi("openai-chat");
  EXPECT_EQ(api->ClientItemMessages(r, 7)[0],
            R"({"role":"toolResult","toolCallId":"call_b","toolName":"read","content":)"
            R"([{"type":"text","text":"A"}],"isError":false})");
  EXPECT_EQ(api->ClientItemMessages(r, 5)[0], R"({"role":"user","content":"read both"})");
}

// --- errors ----------------------------------------------------------------------

TEST(ClientRequestTest, Errors) {
  EXPECT_EQ(ReadClientRequest("gemini", "{}").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ReadClientRequest("remote", "{}").status().code(), StatusCode::kUnsupported);
  for (const char* api : {"anthropic", "openai-chat", "openai-responses"}) {
    EXPECT_THAT(ReadClientRequest(api, "{not json").status().message(), HasSubstr("invalid JSON"))
        << api;
    EXPECT_THAT(ReadClientRequest(api, "[1]").status().message(), HasSubstr("not a JSON object"))
        << api;
    EXPECT_EQ(ReadClientRequest(api, R"({"model":"m"})").status().code(),
              StatusCode::kInvalidArgument)
        << api;
  }
  ClientRequest r = Read("openai-chat", kChatBody);
  r.api = "gemini";
  EXPECT_EQ(RewriteClientRequest(r, {5, "S", {}}).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace compactor
