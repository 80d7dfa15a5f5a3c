// Context -> agent request (pairing repair, images, remote history replay),
// response -> pi messages, and the /responses/compact hook through the real
// engine against the fake server.
#include "compactor/model_input.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "compactor/compact.h"
#include "compactor/context.h"
#include "compactor/mem_env.h"
#include "compactor/session.h"
#include "support/fake_llm_server.h"
#include "support/test_util.h"

namespace compactor {
namespace {

using testing::FakeLlmServer;
using testing::FakeReply;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::ReadFileOrDie;
using testing::RecordedRequest;
using testing::TempDir;
using Json = nlohmann::ordered_json;

std::string Dump(const Json& j) { return j.dump(); }

// A session file built line by line: header, then message entries chained.
class SessionBuilder {
 public:
  SessionBuilder() {
    lines_.push_back(Dump({{"type", "session"},
                           {"version", 3},
                           {"id", "s1"},
                           {"timestamp", "2026-01-01T00:00:00.000Z"},
                           {"cwd", "/w"}}));
  }
  std::string Message(const Json& message) {
    std::string id = NextId();
    lines_.push_back(Dump({{"type", "message"},
                           {"id", id},
                           {"parentId", Parent()},
                           {"timestamp", "2026-01-01T00:00:01.000Z"},
                           {"message", message}}));
    last_ = id;
    return id;
  }
  std::string Compaction(const std::string& first_kept, const Json& preserve) {
    std::string id = NextId();
    Json e = {{"type", "compaction"},      {"id", id},
              {"parentId", Parent()},      {"timestamp", "2026-01-01T00:00:02.000Z"},
              {"summary", "SUMMARY TEXT"}, {"firstKeptEntryId", first_kept},
              {"tokensBefore", 1000}};
    if (!preserve.is_null()) e["preserveData"] = preserve;
    lines_.push_back(Dump(e));
    last_ = id;
    return id;
  }
  std::string Text() const {
    std::string s;
    for (const auto& l : lines_) s += l + "\n";
    return s;
  }

 private:
  std::string NextId() {
    char buf[16];
    snprintf(buf, sizeof buf, "e%07d", ++n_);
    return buf;
  }
  Json Parent() const { return last_.empty() ? Json(nullptr) : Json(last_); }
  std::vector<std::string> lines_;
  std::string last_;
  int n_ = 0;
};

Json User(const std::string& text) {
  return {{"role", "user"}, {"content", text}, {"timestamp", 1}};
}
Json Assistant(const Json& content, const std::string& stop = "stop") {
  return {
      {"role", "assistant"},
      {"content", content},
      {"api", "openai-responses"},
      {"provider", "openai"},
      {"model", "gpt"},
      {"usage",
       {{"input", 10}, {"output", 1}, {"cacheRead", 0}, {"cacheWrite", 0}, {"totalTokens", 11}}},
      {"stopReason", stop},
      {"timestamp", 2}};
}
Json Call(const std::string& id, const std::string& name) {
  return {{"type", "toolCall"}, {"id", id}, {"name", name}, {"arguments", {{"path", "a.txt"}}}};
}
Json Result(const std::string& id, const std::string& text) {
  return {{"role", "toolResult"}, {"toolCallId", id},
          {"toolName", "read"},   {"content", Json::array({{{"type", "text"}, {"text", text}}})},
          {"isError", false},     {"timestamp", 3}};
}

std::unique_ptr<Session> Load(const std::string& text) {
  auto s = Session::FromString(text, "t.jsonl");
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return std::move(s).value();
}

ModelConfig Model(std::string kind, std::string base = "http://h/v1") {
  ModelConfig m;
  m.name = "agent";
  m.api = kind;
  m.base_url = std::move(base);
  m.model_id = "gpt-x";
  return m;
}

TEST(ToLlmMessagesTest, ConvertsRolesAndRepairsPairs) {
  SessionBuilder b;
  b.Message(User("hi"));
  b.Message(Assistant(Json::array({{{"type", "thinking"}, {"thinking", "hmm"}},
                                   {{"type", "text"}, {"text", "reading"}},
                                   Call("c1", "read")}),
                      "toolUse"));
  b.Message(Result("c1", "file body"));
  b.Message(Result("zz", "a result whose call is gone"));
  b.Message(Assistant(Json::array({Call("c2", "read")}), "toolUse"));  // never answered
  b.Message({{"role", "bashExecution"},
             {"command", "ls"},
             {"output", "a\n"},
             {"exitCode", 0},
             {"cancelled", false},
             {"truncated", false},
             {"timestamp", 4}});
  b.Message(Assistant(Json::array({{{"type", "text"}, {"text", "partial"}}}), "error"));
  b.Message({{"role", "user"},
             {"content",
              Json::array({{{"type", "text"}, {"text", "see"}},
                           {{"type", "image"}, {"data", "QUJD"}, {"mimeType", "image/jpeg"}}})},
             {"timestamp", 5}});
  auto session = Load(b.Text());
  auto ctx = BuildSessionContext(*session);
  ASSERT_TRUE(ctx.ok());
  std::vector<LlmMessage> m = ToLlmMessages(ctx->messages);
  ASSERT_EQ(m.size(), 7u);
  EXPECT_EQ(m[0].role, LlmMessage::Role::kUser);
  EXPECT_EQ(m[0].parts[0].text, "hi");
  EXPECT_EQ(m[1].role, LlmMessage::Role::kAssistant);
  ASSERT_EQ(m[1].parts.size(), 1u);  // thinking is not sent
  EXPECT_EQ(m[1].parts[0].text, "reading");
  ASSERT_EQ(m[1].tool_calls.size(), 1u);
  EXPECT_EQ(m[1].tool_calls[0].arguments_json, R"({"path":"a.txt"})");
  EXPECT_EQ(m[2].tool_call_id, "c1");
  EXPECT_EQ(m[2].parts[0].text, "file body");
  // The orphaned result "zz" is gone; c2 got a synthetic error result before the bash message.
  EXPECT_EQ(m[3].tool_calls[0].id, "c2");
  EXPECT_EQ(m[4].role, LlmMessage::Role::kToolResult);
  EXPECT_EQ(m[4].tool_call_id, "c2");
  EXPECT_TRUE(m[4].is_error);
  EXPECT_EQ(m[4].parts[0].text, kMissingToolResultText);
  EXPECT_EQ(m[5].role, LlmMessage::Role::kUser);
  EXPECT_EQ(m[5].parts[0].text, "Ran `ls`\n```\na\n\n```");  // pi: output as stored, then a newline
  // The errored assistant is dropped; the image keeps its data.
  ASSERT_EQ(m[6].parts.size(), 2u);
  EXPECT_EQ(m[6].parts[1].kind, LlmPart::Kind::kImage);
  EXPECT_EQ(m[6].parts[1].data, "QUJD");
  EXPECT_EQ(m[6].parts[1].mime_type, "image/jpeg");
}

Json StoredRemote(const std::string& provider) {
  return {
      {"openaiRemoteCompaction",
       {{"provider", provider},
        {"replacementHistory",
         Json::array({{{"type", "message"},
                       {"role", "user"},
                       {"content", Json::array({{{"type", "input_text"}, {"text", "old ask"}}})}},
                      {{"type", "compaction"}, {"encrypted_content", "ENC"}}})},
        {"compactionItem", {{"type", "compaction"}, {"encrypted_content", "ENC"}}}}}};
}

TEST(BuildModelInputTest, RemoteHistoryReplacesTheSummaryForItsProviderOnly) {
  SessionBuilder b;
  b.Message(User("old ask"));
  b.Message(Assistant(Json::array({{{"type", "text"}, {"text", "old answer"}}})));
  std::string kept = b.Message(User("kept ask"));
  b.Message(Assistant(Json::array({{{"type", "text"}, {"text", "kept answer"}}})));
  b.Compaction(kept, StoredRemote("openai"));
  b.Message(User("new ask"));
  auto session = Load(b.Text());
  auto ctx = BuildSessionContext(*session);
  ASSERT_TRUE(ctx.ok());
  ModelInputOptions o;
  o.system_prompt = "You are an agent.";
  o.tools.push_back({"read", "Read a file", R"({"type":"object"})"});

  auto responses = BuildModelInput(*session, *ctx, Model("openai-responses"), o);
  ASSERT_TRUE(responses.ok());
  EXPECT_TRUE(responses->replayed_remote_history);
  Json body =
      Json::parse(BuildProviderRequest(Model("openai-responses"), responses->request, "")->body);
  ASSERT_EQ(body["input"].size(), 5u);
  EXPECT_EQ(body["input"][1]["encrypted_content"], "ENC");
  EXPECT_EQ(body["input"][2]["content"][0]["text"], "kept ask");  // kept messages stay raw
  EXPECT_EQ(body["input"][4]["content"][0]["text"], "new ask");
  EXPECT_THAT(body.dump(), Not(HasSubstr("SUMMARY TEXT")));
  EXPECT_EQ(body["tools"][0]["name"], "read");
  EXPECT_EQ(body["instructions"], "You are an agent.");

  // Any other model sees the text summary and the kept messages.
  for (std::string k : {"openai-chat", "anthropic"}) {
    auto other = BuildModelInput(*session, *ctx, Model(k), o);
    ASSERT_TRUE(other.ok());
    EXPECT_FALSE(other->replayed_remote_history);
    ASSERT_EQ(other->request.messages.size(), 4u);
    EXPECT_THAT(other->request.messages[0].parts[0].text, HasSubstr("SUMMARY TEXT"));
    EXPECT_THAT(BuildProviderRequest(Model(k), other->request, "")->body, Not(HasSubstr("ENC")));
  }
  // A Responses endpoint of another provider does not get OpenAI's opaque items.
  o.remote_provider = "azure";
  auto azure = BuildModelInput(*session, *ctx, Model("openai-responses"), o);
  ASSERT_TRUE(azure.ok());
  EXPECT_FALSE(azure->replayed_remote_history);
}

TEST(MessageJsonTest, AssistantRoundTripsThroughTheSessionParser) {
  LlmResponse r;
  r.text = "Writing it.";
  r.stop_reason = "toolUse";
  r.tool_calls.push_back({"call_1", "write", R"({"path":"x.txt","content":"hi"})"});
  r.tool_calls.push_back({"call_2", "bash", "not json"});
  r.usage.input = 100;
  r.usage.output = 7;
  std::string json = AssistantMessageJson(Model("openai-chat"), "openai", r, 1767225600123);
  EXPECT_EQ(json.substr(0, 60), R"({"role":"assistant","content":[{"type":"text","text":"Writin)");
  auto m = ParseMessage(json);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->api, "openai-completions");
  EXPECT_EQ(m->provider, "openai");
  EXPECT_EQ(m->model, "gpt-x");
  EXPECT_EQ(m->stop_reason, "toolUse");
  ASSERT_TRUE(m->usage.has_value());
  EXPECT_EQ(m->usage->total_tokens, 107);
  ASSERT_EQ(m->content.size(), 3u);
  EXPECT_EQ(m->content[1].tool_name, "write");
  EXPECT_EQ(m->content[1].arguments_json, R"({"path":"x.txt","content":"hi"})");
  EXPECT_EQ(m->content[2].arguments_json, R"({"_raw":"not json"})");
  EXPECT_EQ(m->timestamp, 1767225600123);

  auto tr = ParseMessage(ToolResultMessageJson("call_1", "write", "ok", false, 5));
  ASSERT_TRUE(tr.ok());
  EXPECT_EQ(tr->role, Role::kToolResult);
  EXPECT_EQ(tr->tool_call_id, "call_1");
  EXPECT_EQ(tr->JoinedText(), "ok");
  auto u = ParseMessage(UserMessageJson("go", 6));
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->JoinedText(), "go");
}

std::string CompactReply(const std::string& enc) {
  return Dump(
      {{"output",
        Json::array({{{"type", "message"},
                      {"role", "user"},
                      {"content", Json::array({{{"type", "input_text"}, {"text", "ask"}}})}},
                     {{"type", "reasoning"}, {"summary", Json::array()}},
                     {{"type", "compaction"}, {"encrypted_content", enc}}})}});
}

std::string LongSession() {
  SessionBuilder b;
  for (int i = 0; i < 12; ++i) {
    b.Message(User("request " + std::to_string(i) + " " + std::string(2000, 'x')));
    b.Message(Assistant(Json::array({{{"type", "text"}, {"text", std::string(2000, 'y')}}})));
  }
  return b.Text();
}

// The hook registered for a Responses model at a fake server, and a session to compact.
class RemoteCompactionHookTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(server.Start()); }
  void UseHook(const std::string& base_suffix, const std::string& key_env = "") {
    RemoteCompactionOptions ro;
    ro.model = Model("openai-responses", server.base_url() + base_suffix);
    ro.model.api_key_env = key_env;
    if (!key.empty() && !key_env.empty()) vars->SetEnvVar(key_env, key);
    ro.call.env = vars.get();  // the key's variable; retries wait no real time
    ro.on_error = [this](const Status& s) { errors.push_back(s); };
    hooks.OnCompacting(RemoteCompactionHook(ro));
    co.hooks = &hooks;
    co.settings.keep_recent_tokens = 1000;
  }
  FakeLlmServer server;
  TempDir dir;
  std::string key = "sk-test-123";  // what the key's variable holds; empty = unset
  std::unique_ptr<MemEnv> vars = NewMemEnv();
  std::vector<Status> errors;
  CompactionHooks hooks;
  CompactOptions co;
};

TEST_F(RemoteCompactionHookTest, StoresTheNativeHistoryAndChainsIt) {
  std::string path = dir.Write("s.jsonl", LongSession());
  server.Push(FakeReply(200, CompactReply("ENC1")));
  UseHook("/v1", "TEST_OPENAI_KEY");
  auto r = CompactFile(path, co);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_TRUE(r->compacted);
  EXPECT_TRUE(errors.empty());
  ASSERT_EQ(server.request_count(), 1u);
  RecordedRequest req = server.requests()[0];
  EXPECT_EQ(req.path, "/v1/responses/compact");
  EXPECT_EQ(req.headers["authorization"], "Bearer sk-test-123");
  Json sent = Json::parse(req.body);
  EXPECT_EQ(sent["model"], "gpt-x");
  EXPECT_EQ(sent["input"][0]["content"][0]["text"].get<std::string>().substr(0, 9), "request 0");
  EXPECT_EQ(sent["input"].size(), r->messages_summarized);
  Json entry = Json::parse(r->entry_json);
  EXPECT_EQ(entry["preserveData"]["openaiRemoteCompaction"]["provider"], "openai");
  EXPECT_EQ(entry["preserveData"]["openaiRemoteCompaction"]["compactionItem"]["encrypted_content"],
            "ENC1");
  EXPECT_EQ(entry["preserveData"]["openaiRemoteCompaction"]["replacementHistory"].size(), 2u);
  EXPECT_THAT(entry["summary"].get<std::string>(),
              Not(HasSubstr("ENC1")));  // text summary as usual

  // More work, then a second compaction: the first history replaces its text summary.
  auto session = Session::Open(path);
  ASSERT_TRUE(session.ok());
  std::string leaf((*session)->entry(*(*session)->Leaf()).id);
  std::string text = ReadFileOrDie(path);
  for (int i = 0; i < 8; ++i) {
    std::string id = "f000000" + std::to_string(i);
    Json msg = i % 2 == 0
                   ? User("later " + std::string(3000, 'z'))
                   : Assistant(Json::array({{{"type", "text"}, {"text", std::string(3000, 'w')}}}));
    text += Dump({{"type", "message"},
                  {"id", id},
                  {"parentId", leaf},
                  {"timestamp", "2026-01-01T00:00:09.000Z"},
                  {"message", msg}}) +
            "\n";
    leaf = id;
  }
  path = dir.Write("s.jsonl", text);
  server.Push(FakeReply(200, CompactReply("ENC2")));
  auto r2 = CompactFile(path, co);
  ASSERT_TRUE(r2.ok()) << r2.status().ToString();
  ASSERT_TRUE(r2->compacted);
  ASSERT_EQ(server.request_count(), 2u);
  Json sent2 = Json::parse(server.requests()[1].body);
  EXPECT_EQ(sent2["input"][1]["encrypted_content"], "ENC1");
  EXPECT_THAT(sent2.dump(), Not(HasSubstr("<summary>")));
  EXPECT_EQ(Json::parse(r2->entry_json)["preserveData"]["openaiRemoteCompaction"]["compactionItem"]
                                       ["encrypted_content"],
            "ENC2");
}

TEST_F(RemoteCompactionHookTest, FailureKeepsTheLocalCompaction) {
  std::string path = dir.Write("s.jsonl", LongSession());
  server.Push(FakeReply(500, R"({"error":{"message":"boom"}})"));
  UseHook("");
  auto r = CompactFile(path, co);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->compacted);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_THAT(errors[0].ToString(), HasSubstr("500"));
  EXPECT_EQ(server.requests()[0].path, "/v1/responses/compact");
  EXPECT_FALSE(Json::parse(r->entry_json).contains("preserveData"));

  // A response without a compaction item is a failure too.
  server.Push(FakeReply(200, R"({"output":[{"type":"reasoning"}]})"));
  std::string path2 = dir.Write("s2.jsonl", LongSession());
  auto r2 = CompactFile(path2, co);
  ASSERT_TRUE(r2.ok());
  EXPECT_TRUE(r2->compacted);
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_THAT(errors[1].ToString(), HasSubstr("missing compaction item"));
}

TEST_F(RemoteCompactionHookTest, KeyEchoedAcrossTheCutIsRedacted) {
  // Issue 12: the body was cut at 4,000 bytes before the key was redacted, so
  // a key straddling the cut left its beginning in the error.
  key = "sk-remote-SECRET-0123456789";
  for (size_t at : {3990u, 3995u, 4000u, 4005u}) {
    std::string body = R"({"error":{"message":")" + std::string(at - 24, 'x') + key + R"("}})";
    server.Push(FakeReply(400, body));
  }
  UseHook("/v1", "TEST_OPENAI_KEY");
  for (int i = 0; i < 4; ++i) {
    std::string path = dir.Write("s" + std::to_string(i) + ".jsonl", LongSession());
    auto r = CompactFile(path, co);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
  }
  ASSERT_EQ(errors.size(), 4u);
  for (const Status& e : errors) {
    EXPECT_THAT(e.ToString(), HasSubstr("400"));
    EXPECT_THAT(e.ToString(), Not(HasSubstr("sk-r")));
    EXPECT_THAT(e.ToString(), Not(HasSubstr("SECRET")));
  }
}

TEST_F(RemoteCompactionHookTest, MissingKeyIsReportedWithoutARequest) {
  std::string path = dir.Write("s.jsonl", LongSession());
  key.clear();
  UseHook("/v1", "TEST_OPENAI_KEY");
  auto r = CompactFile(path, co);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->compacted);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_THAT(errors[0].ToString(), HasSubstr("TEST_OPENAI_KEY is not set"));
  EXPECT_EQ(server.request_count(), 0u);
}

}  // namespace
}  // namespace compactor
