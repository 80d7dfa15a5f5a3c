// compactor eval with a configured LLM summarizer and judge, against a fake
// OpenAI-compatible server on 127.0.0.1.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/fake_llm_server.h"
#include "support/test_util.h"

namespace compactor {
namespace {

TEST(EvalCli, LlmSummarizerAndJudge) {
  testing::FakeLlmServer server;
  ASSERT_TRUE(server.Start());
  for (int i = 0; i < 24; ++i) {
    server.Push(testing::FakeReply(
        200, testing::FakeLlmServer::ChatReply("SCORE: 4\nThe context answers most of it.")));
  }
  testing::TempDir d;
  auto gen = testing::RunCli(
      {"eval", "--generate", d.path(), "--sessions", "1", "--seed", "5", "--no-eval"});
  ASSERT_EQ(gen.exit_code, 0) << gen.err;
  std::string settings =
      d.Write("settings.json", R"({"models": {"local": {"provider": "openai-chat", "baseUrl": ")" +
                                   server.base_url() +
                                   R"(", "model": "qwen", "contextWindow": 1000000}}})");
  auto r = testing::RunCli({"eval", d.path(), "--strategy", "summary", "--summarizer", "local",
                            "--judge", "local", "--settings", settings, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_FALSE(j["sessions"].empty());
  const auto& s = j["sessions"][0];
  EXPECT_EQ(j["strategies"][0]["summarizer"], "local");
  ASSERT_TRUE(s.contains("probes"));
  ASSERT_FALSE(s["probes"].empty());
  for (const auto& p : s["probes"]) EXPECT_EQ(p["score"], 4.0);
  EXPECT_GE(server.request_count(), 2u);  // at least one summary and one judge call
  auto body = nlohmann::json::parse(server.requests()[0].body);
  EXPECT_EQ(body["model"], "qwen");
}

// The judge is asked the status questions too (open vs resolved errors,
// current vs revised values, done vs pending steps, rejected options, values
// from tool outputs), with the reference answers the facts give.
TEST(EvalCli, JudgeScoresTheStatusQuestions) {
  testing::FakeLlmServer server;
  ASSERT_TRUE(server.Start());
  for (int i = 0; i < 24; ++i)
    server.Push(testing::FakeReply(200, testing::FakeLlmServer::ChatReply("SCORE: 2.5\nPartly.")));
  testing::TempDir d;
  auto gen =
      testing::RunCli({"eval", "--generate", d.path(), "--generator", "independent", "--sessions",
                       "1", "--seed", "2", "--target-tokens", "60000", "--no-eval"});
  ASSERT_EQ(gen.exit_code, 0) << gen.err;
  std::string settings =
      d.Write("settings.json", R"({"models": {"judge": {"provider": "openai-chat", "baseUrl": ")" +
                                   server.base_url() +
                                   R"(", "model": "grader", "contextWindow": 1000000}}})");
  auto r = testing::RunCli({"eval", d.path(), "--strategy", "mask", "--judge", "judge",
                            "--settings", settings, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  const auto& probes = j["sessions"][0]["probes"];
  std::vector<std::string> questions;
  for (const auto& p : probes) {
    EXPECT_EQ(p["score"], 2.5) << p.dump();
    questions.push_back(p["question"].get<std::string>());
  }
  auto asked = [&](std::string_view words) {
    for (const std::string& q : questions)
      if (q.find(words) != std::string::npos) return true;
    return false;
  };
  EXPECT_TRUE(asked("still open"));
  EXPECT_TRUE(asked("current now"));
  EXPECT_TRUE(asked("already done"));
  EXPECT_TRUE(asked("rejected"));
  EXPECT_TRUE(asked("command outputs"));
  // Every judge call carried the question and its reference answer.
  ASSERT_EQ(server.request_count(), probes.size());
  bool saw_not_fixed = false, saw_superseded = false;
  for (const auto& req : server.requests()) {
    const std::string body = req.body;
    EXPECT_NE(body.find("reference-answer"), std::string::npos);
    saw_not_fixed = saw_not_fixed || body.find("(not fixed)") != std::string::npos;
    saw_superseded = saw_superseded || body.find("(superseded by: ") != std::string::npos;
  }
  EXPECT_TRUE(saw_not_fixed);
  EXPECT_TRUE(saw_superseded);
}

}  // namespace
}  // namespace compactor
