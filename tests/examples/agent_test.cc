// The example agent (examples/agent) as a user runs it: the real binary
// against a fake OpenAI-compatible server on 127.0.0.1 with scripted replies,
// real tools in a temporary directory, and a real session file.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "compactor/context.h"
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
using testing::RunProgram;
using testing::RunResult;
using testing::TempDir;
using Json = nlohmann::json;

std::string ToolCallReply(const std::string& id, const std::string& name, const Json& args,
                          int prompt_tokens) {
  Json j = {
      {"choices",
       Json::array(
           {{{"index", 0},
             {"message",
              {{"role", "assistant"},
               {"content", nullptr},
               {"tool_calls",
                Json::array({{{"id", id},
                              {"type", "function"},
                              {"function", {{"name", name}, {"arguments", args.dump()}}}}})}}},
             {"finish_reason", "tool_calls"}}})},
      {"usage", {{"prompt_tokens", prompt_tokens}, {"completion_tokens", 30}}}};
  return j.dump();
}

std::vector<Json> EntriesOfType(const std::string& path, const std::string& type) {
  std::vector<Json> out;
  std::string text = ReadFileOrDie(path);
  size_t start = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    Json j = Json::parse(text.substr(start, nl - start));
    if (j.value("type", "") == type) out.push_back(j);
    if (nl == std::string::npos) break;
    start = nl + 1;
  }
  return out;
}

class AgentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(server_.Start());
    work_ = dir_.path() + "/work";
    std::filesystem::create_directories(work_);
    session_ = dir_.path() + "/session.jsonl";
    settings_ = dir_.Write("settings.json", R"({"reserveTokens": 4096, "keepRecentTokens": 300})");
  }
  RunResult Run(std::vector<std::string> extra, const std::string& stdin_text = "") {
    std::vector<std::string> argv = {COMPACTOR_AGENT_PATH,
                                     "--session",
                                     session_,
                                     "--base-url",
                                     server_.base_url() + "/v1",
                                     "--model",
                                     "local-model",
                                     "--window",
                                     "32000",
                                     "--workdir",
                                     work_};
    if (std::find(extra.begin(), extra.end(), "--bash-timeout-ms") == extra.end()) {
      argv.insert(argv.end(), {"--bash-timeout-ms", "5000"});
    }
    argv.insert(argv.end(), extra.begin(), extra.end());
    return RunProgram(argv, stdin_text);
  }
  FakeLlmServer server_;
  TempDir dir_;
  std::string work_, session_, settings_;
};

TEST_F(AgentTest, ToolLoopThenThresholdCompactionThenOverflowRecovery) {
  std::string content(4000, 'h');
  server_.Push(FakeReply(
      200,
      ToolCallReply("call_1", "write", {{"path", "notes/hello.txt"}, {"content", content}}, 1000)));
  server_.Push(FakeReply(
      200, ToolCallReply("call_2", "bash", {{"command", "wc -c notes/hello.txt"}}, 2500)));
  server_.Push(
      FakeReply(200, FakeLlmServer::ChatReply("Done: the file is written.", "stop", 30000)));
  RunResult r = Run({"--settings", settings_, "Write", "the", "file"});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_THAT(r.out, HasSubstr("Done: the file is written."));
  EXPECT_EQ(ReadFileOrDie(work_ + "/notes/hello.txt"), content);
  EXPECT_THAT(r.err, HasSubstr("[compactor] threshold compact"));

  auto requests = server_.requests();
  ASSERT_EQ(requests.size(), 3u);
  EXPECT_EQ(requests[0].path, "/v1/chat/completions");
  Json first = Json::parse(requests[0].body);
  EXPECT_EQ(first["model"], "local-model");
  EXPECT_EQ(first["messages"][1]["content"], "Write the file");
  ASSERT_EQ(first["tools"].size(), 3u);  // read, write, bash (no notes tool without notes)
  EXPECT_THAT(requests[1].body,
              HasSubstr(R"("role":"tool","tool_call_id":"call_1","content":"Wrote 4000 bytes)"));
  EXPECT_THAT(requests[2].body, HasSubstr("4000 notes/hello.txt\\n[exit code 0]"));

  ASSERT_EQ(EntriesOfType(session_, "compaction").size(), 1u);
  // pi's reader (ours) loads the result; the context starts with the summary.
  auto session = Session::Open(session_);
  ASSERT_TRUE(session.ok());
  auto ctx = BuildSessionContext(**session);
  ASSERT_TRUE(ctx.ok());
  EXPECT_EQ(ctx->messages[0].role, Role::kCompactionSummary);

  // Second prompt: the model rejects the context as too long. The runtime
  // drops that response, compacts, and the retried request succeeds.
  server_.Push(FakeReply(
      400,
      R"({"error":{"message":"This model's maximum context length is 32000 tokens. However, your messages resulted in 41000 tokens.","type":"invalid_request_error","code":"context_length_exceeded"}})"));
  server_.Push(FakeReply(200, FakeLlmServer::ChatReply("Recovered and finished.", "stop", 3000)));
  r = Run(
      {"--settings", settings_, "Now summarise what you did in detail: " + std::string(1500, 'x')});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_THAT(r.out, HasSubstr("Recovered and finished."));
  EXPECT_THAT(r.err, HasSubstr("[compactor] overflow compact"));
  EXPECT_THAT(r.err, HasSubstr("retrying the request"));
  requests = server_.requests();
  ASSERT_EQ(requests.size(), 5u);
  EXPECT_THAT(requests[4].body, Not(HasSubstr("maximum context length")));
  EXPECT_EQ(EntriesOfType(session_, "compaction").size(), 2u);
  EXPECT_THAT(ReadFileOrDie(session_), Not(HasSubstr("maximum context length")));
  // The retried request carries the new summary and the prompt, nothing orphaned.
  Json retried = Json::parse(requests[4].body);
  EXPECT_THAT(retried["messages"][1]["content"].get<std::string>(), HasSubstr("<summary>"));
  for (const Json& m : retried["messages"]) EXPECT_NE(m["role"], "tool");
}

TEST_F(AgentTest, NotesStrategyOffersTheNotesToolAndItsFileBecomesTheSummary) {
  server_.Push(FakeReply(200, ToolCallReply("c1", "bash", {{"command", "echo step one"}}, 800)));
  server_.Push(FakeReply(
      200,
      ToolCallReply("c2", "write_notes",
                    {{"content", "Goal: ship v2.\nDecided: keep SQLite (simpler ops)."}}, 900)));
  server_.Push(FakeReply(200, ToolCallReply("c3", "bash", {{"command", "echo step two"}}, 1000)));
  server_.Push(FakeReply(200, FakeLlmServer::ChatReply("Noted and done.", "stop", 30000)));
  RunResult r = Run({"--strategy", "notes", "Plan v2"});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_EQ(ReadFileOrDie(session_ + ".notes.md"),
            "Goal: ship v2.\nDecided: keep SQLite (simpler ops).");
  Json first = Json::parse(server_.requests()[0].body);
  ASSERT_EQ(first["tools"].size(), 4u);
  EXPECT_EQ(first["tools"][3]["function"]["name"], "write_notes");
  auto compactions = EntriesOfType(session_, "compaction");
  ASSERT_EQ(compactions.size(), 1u);
  EXPECT_THAT(compactions[0]["summary"].get<std::string>(),
              HasSubstr("Decided: keep SQLite (simpler ops)."));
}

TEST_F(AgentTest, TheModelItselfCanSummarizeAndAFailedSummaryLeavesTheSessionIntact) {
  // 1) --summarizer agent: the summary request goes to the same endpoint. Two
  // prompts from stdin; the second is long, so the cut lands on it (no split turn).
  server_.Push(FakeReply(
      200, ToolCallReply("c1", "bash", {{"command", "echo " + std::string(3000, 'a')}}, 900)));
  server_.Push(FakeReply(200, FakeLlmServer::ChatReply("First answer.", "stop", 1000)));
  server_.Push(FakeReply(200, FakeLlmServer::ChatReply("Second answer.", "stop", 30000)));
  server_.Push(FakeReply(200, FakeLlmServer::ChatReply("## Goal\nLLM SUMMARY", "stop", 500)));
  RunResult r = Run({"--settings", settings_, "--summarizer", "agent"},
                    "Do a thing\nMore: " + std::string(2000, 'm') + "\n");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("First answer.\nSecond answer."));
  auto requests = server_.requests();
  ASSERT_EQ(requests.size(), 4u);
  Json summary_req = Json::parse(requests[3].body);
  EXPECT_FALSE(summary_req.contains("tools"));
  EXPECT_EQ(summary_req["max_tokens"], 3276);  // 0.8 x reserveTokens 4096
  std::string prompt = summary_req["messages"][1]["content"].get<std::string>();
  EXPECT_THAT(prompt, HasSubstr("<conversation>\n[User]: Do a thing"));
  EXPECT_THAT(prompt, Not(HasSubstr("More: mmm")));  // kept, not summarized
  auto compactions = EntriesOfType(session_, "compaction");
  ASSERT_EQ(compactions.size(), 1u);
  EXPECT_THAT(compactions[0]["summary"].get<std::string>(), HasSubstr("LLM SUMMARY"));

  // 2) The summarizer is refused (401, no retry): the threshold compaction
  // fails, is reported, and the session holds no partial compaction.
  std::string before = ReadFileOrDie(session_);
  server_.Push(FakeReply(200, FakeLlmServer::ChatReply("Third answer.", "stop", 31000)));
  server_.Push(FakeReply(401, R"({"error":{"message":"bad key"}})"));
  r = Run({"--settings", settings_, "--summarizer", "agent", "Another: " + std::string(2000, 'n')});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("Third answer."));
  EXPECT_THAT(r.err, HasSubstr("threshold compaction failed"));
  EXPECT_EQ(server_.request_count(), 6u);
  EXPECT_EQ(EntriesOfType(session_, "compaction").size(), 1u);
  std::string after = ReadFileOrDie(session_);
  ASSERT_EQ(after.substr(0, before.size()), before);  // append-only
  auto session = Session::Open(session_);
  ASSERT_TRUE(session.ok());
  EXPECT_TRUE((*session)->warnings().empty());
}

// --stream: tool calls arrive as argument fragments over SSE and are assembled.
TEST_F(AgentTest, StreamedToolCallsAreAssembled) {
  FakeReply tool_call(200, "", "text/event-stream");
  tool_call.chunks = {
      "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"tool_calls\":[{\"index\":0,\"id\":"
      "\"s1\",\"type\":\"function\",\"function\":{\"name\":\"write\",\"arguments\":\"\"}}]}}]}\n\n",
      "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":"
      "\"{\\\"path\\\":\\\"s.txt\\\",\"}}]}}]}\n\n",
      "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":"
      "\"\\\"content\\\":\\\"streamed\\\"}\"}}]}}]}\n\n",
      "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"tool_calls\"}],\"usage\":"
      "{\"prompt_tokens\":50,\"completion_tokens\":9}}\n\n",
      "data: [DONE]\n\n"};
  server_.Push(tool_call);
  FakeReply answer(200, "", "text/event-stream");
  answer.chunks = {"data: {\"choices\":[{\"delta\":{\"content\":\"All \"}}]}\n\n",
                   "data: {\"choices\":[{\"delta\":{\"content\":\"written.\"},"
                   "\"finish_reason\":\"stop\"}]}\n\n",
                   "data: [DONE]\n\n"};
  server_.Push(answer);
  RunResult r = Run({"--stream", "--json", "write it"});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_EQ(ReadFileOrDie(work_ + "/s.txt"), "streamed");
  EXPECT_THAT(r.out, HasSubstr(R"({"type":"tool","name":"write","isError":false})"));
  EXPECT_THAT(r.out, HasSubstr(R"({"type":"answer","text":"All written."})"));
  EXPECT_EQ(Json::parse(server_.requests()[0].body)["stream"], true);
  // The assistant message stored in the session has the parsed arguments.
  auto messages = EntriesOfType(session_, "message");
  ASSERT_GE(messages.size(), 2u);
  EXPECT_EQ(messages[1]["message"]["content"][0]["arguments"]["content"], "streamed");
  EXPECT_EQ(messages[1]["message"]["usage"]["input"], 50);
}

TEST_F(AgentTest, KeyEchoedInAnErrorBodyReachesNeitherTheSessionNorTheJson) {
  // Issue 12: a body echoing the key across the 4,000-byte cut leaked its
  // beginning into the session's error message and --json.
  const std::string key = "sk-agent-SECRET-0123456789abcdef";
  ::setenv("COMPACTOR_AGENT_TEST_KEY", key.c_str(), 1);
  std::string body = R"({"error":{"message":")" + std::string(3975, 'x') + "key " + key +
                     R"( is not valid here","type":"invalid_request_error"}})";
  server_.Push(FakeReply(400, body));
  RunResult r = Run({"--api-key-env", "COMPACTOR_AGENT_TEST_KEY", "--json", "hello"});
  ::unsetenv("COMPACTOR_AGENT_TEST_KEY");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  ASSERT_EQ(server_.request_count(), 1u);
  EXPECT_EQ(server_.requests()[0].headers["authorization"], "Bearer " + key);
  std::string session = ReadFileOrDie(session_);
  for (const std::string* text : {&r.out, &r.err, &session}) {
    EXPECT_THAT(*text, Not(HasSubstr("sk-a"))) << text->substr(0, 200);
    EXPECT_THAT(*text, Not(HasSubstr("SECRET")));
  }
  EXPECT_THAT(r.out, HasSubstr("400"));
}

TEST_F(AgentTest, FailuresAreReportedWithExitCodes) {
  RunResult help = RunProgram({COMPACTOR_AGENT_PATH, "--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_THAT(help.out, HasSubstr("--session"));
  RunResult usage = RunProgram({COMPACTOR_AGENT_PATH, "--model", "m"});
  EXPECT_EQ(usage.exit_code, 2);
  RunResult api = Run({"--api", "remote", "hi"});
  EXPECT_EQ(api.exit_code, 2);
  // A server that refuses with 401 ends the run with a clear error and exit 1.
  server_.Push(FakeReply(401, R"({"error":{"message":"invalid api key"}})"));
  RunResult auth = Run({"hello"});
  EXPECT_EQ(auth.exit_code, 1);
  EXPECT_THAT(auth.err, HasSubstr("invalid api key"));
  // A tool the model invents is an error result, not a crash.
  server_.Push(FakeReply(200, ToolCallReply("x1", "teleport", Json::object(), 100)));
  server_.Push(FakeReply(200, FakeLlmServer::ChatReply("ok", "stop", 200)));
  RunResult unknown = Run({"go"});
  EXPECT_EQ(unknown.exit_code, 0) << unknown.err;
  EXPECT_THAT(server_.requests().back().body, HasSubstr("Unknown tool: teleport"));
  // Tool failures become error results the model sees: a missing file, a
  // command past its time limit.
  server_.Push(FakeReply(200, ToolCallReply("r1", "read", {{"path", "absent.txt"}}, 100)));
  server_.Push(FakeReply(200, ToolCallReply("b1", "bash", {{"command", "sleep 20"}}, 100)));
  server_.Push(FakeReply(200, FakeLlmServer::ChatReply("ok", "stop", 200)));
  auto start = std::chrono::steady_clock::now();
  RunResult tools = Run({"--bash-timeout-ms", "300", "go"});
  EXPECT_EQ(tools.exit_code, 0) << tools.err;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  auto all = server_.requests();
  EXPECT_THAT(all[all.size() - 2].body,
              HasSubstr("Cannot read absent.txt: no such file or not readable"));
  EXPECT_THAT(all.back().body, HasSubstr("[command killed after 300 ms]"));
  EXPECT_EQ(Run({"--summarizer", "gpt", "hi"}).exit_code, 2);
  RunResult remote = Run({"--remote-compaction", "hi"});
  EXPECT_EQ(remote.exit_code, 2);
  EXPECT_THAT(remote.err, HasSubstr("--remote-compaction needs --api openai-responses"));
}

}  // namespace
}  // namespace compactor
