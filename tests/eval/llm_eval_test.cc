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

}  // namespace
}  // namespace compactor
