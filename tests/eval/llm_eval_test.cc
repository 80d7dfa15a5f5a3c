// compactor eval with a configured LLM summarizer and judge, against a fake
// OpenAI-compatible server on 127.0.0.1.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "support/fake_llm_server.h"
#include "support/test_util.h"

namespace compactor {
namespace {

// A settings file naming the fake model `name` (an OpenAI-compatible model
// `model` at the server's address).
std::string ModelSettings(const testing::TempDir& d, const testing::FakeLlmServer& server,
                          const std::string& name, const std::string& model) {
  return d.Write("settings.json", R"({"models": {")" + name +
                                      R"(": {"provider": "openai-chat", "baseUrl": ")" +
                                      server.base_url() + R"(", "model": ")" + model +
                                      R"(", "contextWindow": 1000000}}})");
}

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
  std::string settings = ModelSettings(d, server, "local", "qwen");
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
  std::string settings = ModelSettings(d, server, "judge", "grader");
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

// The eval over the LLM summarizer is the same eval: the checkpoint a model
// writes, in the structure the prompt asks for, is scored for status like the
// offline summary. A fake model on 127.0.0.1 answers the summary request with
// a checkpoint that states four statuses wrong (a revised limit as a
// constraint, a fixed error under Blocked, an open error ticked off, a
// constraint under Done) and one right (the goal); the eval names each.
TEST(EvalCli, AnLlmWrittenSummaryIsScoredForStatus) {
  testing::TempDir d;
  auto gen =
      testing::RunCli({"eval", "--generate", d.path(), "--generator", "independent", "--sessions",
                       "1", "--seed", "2", "--target-tokens", "60000", "--no-eval"});
  ASSERT_EQ(gen.exit_code, 0) << gen.err;
  std::string facts_path;
  for (const auto& e : std::filesystem::directory_iterator(d.path())) {
    if (e.path().string().ends_with(".facts.json")) facts_path = e.path().string();
  }
  ASSERT_FALSE(facts_path.empty());
  std::ifstream in(facts_path);
  const auto facts = nlohmann::json::parse(in)["facts"];
  // The fact of each kind the checkpoint misstates, by what the facts say.
  std::map<std::string, nlohmann::json> pick;
  for (const auto& f : facts) {
    const std::string kind = f["kind"];
    const bool superseded = f.contains("supersededBy");
    if (kind == "goal") pick.try_emplace("goal", f);
    if (kind == "constraint" && superseded) pick.try_emplace("stale", f);
    if (kind == "constraint" && !superseded) pick.try_emplace("constraint", f);
    if (kind == "error" && f.value("fixed", false)) pick.try_emplace("fixed", f);
    if (kind == "error" && !f.value("fixed", true)) pick.try_emplace("open", f);
  }
  for (const char* k : {"goal", "stale", "constraint", "fixed", "open"})
    ASSERT_TRUE(pick.count(k)) << "the generated session has no fact for " << k;
  const auto text = [&](const char* k) { return pick[k]["text"].get<std::string>(); };
  const std::string checkpoint =
      "## Goal\nThe agent should " + text("goal") +
      ".\n\n## Constraints & Preferences\n- Limit: " + text("stale") +
      "\n\n## Progress\n### Done\n- [x] " + text("constraint") + "\n- [x] Fixed " + text("open") +
      "\n\n### In Progress\n- (none)\n\n### Blocked\n- " + text("fixed") +
      "\n\n## Key Decisions\n(none)\n\n## Next Steps\n1. Keep going\n\n## Critical Context\n"
      "(none)";
  testing::FakeLlmServer server;
  ASSERT_TRUE(server.Start());
  for (int i = 0; i < 4; ++i) {
    server.Push(testing::FakeReply(200, testing::FakeLlmServer::ChatReply(checkpoint)));
  }
  std::string settings = ModelSettings(d, server, "local", "writer");
  auto r = testing::RunCli({"eval", d.path(), "--strategy", "summary", "--summarizer", "local",
                            "--settings", settings, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["sessions"].size(), 1u);
  std::map<std::string, nlohmann::json> outcome;
  for (const auto& f : j["sessions"][0]["facts"]) outcome[f["id"]] = f;
  const auto error_of = [&](const char* k) {
    const auto& o = outcome[pick[k]["id"].get<std::string>()];
    return o.value("statusError", std::string());
  };
  EXPECT_EQ(error_of("stale"), "stale-as-current");
  EXPECT_EQ(error_of("constraint"), "under-done");
  EXPECT_EQ(error_of("open"), "false-resolved");
  EXPECT_EQ(error_of("fixed"), "fixed-as-open");
  EXPECT_EQ(error_of("goal"), "");
  EXPECT_TRUE(outcome[pick["goal"]["id"].get<std::string>()]["retained"].get<bool>());
  // What the model was asked (a history summary, and a turn prefix when the
  // cut splits a turn, in either order): each request the conversation and
  // the status rules; the history request the checkpoint's sections.
  ASSERT_GE(server.request_count(), 1u);
  bool asked_for_sections = false;
  for (const auto& recorded : server.requests()) {
    std::string prompt;  // the request's messages, as the model reads them
    const auto request = nlohmann::json::parse(recorded.body);
    for (const auto& m : request["messages"]) {
      if (m["content"].is_string()) prompt += m["content"].get<std::string>();
      if (!m["content"].is_array()) continue;
      for (const auto& part : m["content"]) prompt += part.value("text", std::string());
    }
    EXPECT_NE(prompt.find("<conversation>"), std::string::npos);
    EXPECT_NE(prompt.find("same command or test was run again later and succeeded"),
              std::string::npos);
    asked_for_sections =
        asked_for_sections || prompt.find("## Constraints & Preferences") != std::string::npos;
  }
  EXPECT_TRUE(asked_for_sections);
}

}  // namespace
}  // namespace compactor
