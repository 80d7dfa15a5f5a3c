#include "compactor/settings.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "compactor/mem_env.h"

namespace compactor {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(CompactionSettingsTest, DocumentedDefaults) {
  CompactionSettings s;
  EXPECT_TRUE(s.enabled);
  EXPECT_EQ(s.strategy, "summary");
  EXPECT_EQ(s.reserve_tokens, 16384);
  EXPECT_EQ(s.keep_recent_tokens, 20000);
  EXPECT_EQ(s.threshold_percent, -1);
  EXPECT_EQ(s.threshold_tokens, -1);
  EXPECT_EQ(s.context_window, 0);
  EXPECT_EQ(s.trigger, TriggerPreset::kPi);
  EXPECT_EQ(s.keep_policy, KeepPolicy::kRecentTokens);
  EXPECT_EQ(s.keep_turns, 6);
  EXPECT_EQ(s.keep_messages, 4);
  EXPECT_EQ(s.tokenizer, std::nullopt);  // "estimate"
  EXPECT_FALSE(s.pruning.enabled);
  EXPECT_EQ(s.pruning.protect_tokens, 40000);
  EXPECT_EQ(s.pruning.minimum_savings, 20000);
  EXPECT_THAT(s.pruning.protected_tools, ElementsAre("read", "skill"));
  EXPECT_TRUE(ValidateSettings(s).ok());
}

TEST(ParseSettingsJsonTest, FlatKeys) {
  auto r = ParseSettingsJson(R"({
    "enabled": false, "strategy": "summary", "reserveTokens": 8192, "keepRecentTokens": 12000,
    "thresholdPercent": 80.5, "thresholdTokens": 150000, "contextWindow": 272000,
    "trigger": "omp", "keepPolicy": "turns", "keepTurns": 3, "keepMessages": 7,
    "tokenizer": "estimate",
    "pruning": {"enabled": true, "protectTokens": 1000, "minimumSavings": 500,
                "protectedTools": ["skill"]}
  })",
                             "s.json");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const CompactionSettings& s = r->settings;
  EXPECT_FALSE(s.enabled);
  EXPECT_EQ(s.reserve_tokens, 8192);
  EXPECT_EQ(s.keep_recent_tokens, 12000);
  EXPECT_DOUBLE_EQ(s.threshold_percent, 80.5);
  EXPECT_EQ(s.threshold_tokens, 150000);
  EXPECT_EQ(s.context_window, 272000);
  EXPECT_EQ(s.trigger, TriggerPreset::kOmp);
  EXPECT_EQ(s.keep_policy, KeepPolicy::kLastTurns);
  EXPECT_EQ(s.tokenizer, std::nullopt);
  EXPECT_EQ(s.keep_turns, 3);
  EXPECT_EQ(s.keep_messages, 7);
  EXPECT_TRUE(s.pruning.enabled);
  EXPECT_EQ(s.pruning.protect_tokens, 1000);
  EXPECT_EQ(s.pruning.minimum_savings, 500);
  EXPECT_THAT(s.pruning.protected_tools, ElementsAre("skill"));
  EXPECT_TRUE(r->warnings.empty());
}

TEST(ParseSettingsJsonTest, PiStyleNestingIgnoresOtherApplicationsKeys) {
  auto r = ParseSettingsJson(
      R"({"theme": "dark", "defaultModel": "x", "compaction": {"enabled": true,
          "reserveTokens": 4096, "keepRecentTokens": 3000, "colour": 1},
          "branchSummary": {"reserveTokens": 1}})",
      "pi.json");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->settings.reserve_tokens, 4096);
  EXPECT_EQ(r->settings.keep_recent_tokens, 3000);
  ASSERT_EQ(r->warnings.size(), 1u);
  EXPECT_EQ(r->warnings[0].ToString(), "pi.json: unknown key \"compaction.colour\" (ignored)");
}

TEST(ParseSettingsJsonTest, UnknownFlatKeysWarnAndAbsentKeysKeepTheBase) {
  CompactionSettings base;
  base.keep_recent_tokens = 777;
  auto r = ParseSettingsJson(R"({"reserveTokns": 1, "pruning": {"protect": 5}})", "a.json", base);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->settings.keep_recent_tokens, 777);
  EXPECT_EQ(r->settings.reserve_tokens, 16384);
  ASSERT_EQ(r->warnings.size(), 2u);
  EXPECT_THAT(r->warnings[0].message, HasSubstr("\"reserveTokns\""));
  EXPECT_THAT(r->warnings[1].message, HasSubstr("\"pruning.protect\""));
}

TEST(ParseSettingsJsonTest, ErrorsNameTheFileAndTheProblem) {
  struct Case {
    const char* json;
    const char* expect;
  };
  const Case cases[] = {
      {R"({"reserveTokens": "big"})", "reserveTokens: expected a number, got a string"},
      {R"({"reserveTokens": -1})", "reserveTokens: must be at least 0"},
      {R"({"keepRecentTokens": 0.5})", "keepRecentTokens: expected a whole number"},
      {R"({"enabled": "yes"})", "enabled: expected true or false"},
      {R"({"trigger": "claude"})", "unknown trigger preset \"claude\""},
      {R"({"keepPolicy": "all"})", "unknown keep policy \"all\""},
      {R"({"strategy": "magic"})", "unknown strategy \"magic\""},
      {R"({"keepTurns": 0})", "keepTurns: must be at least 1"},
      {R"({"pruning": {"protectedTools": [1]}})", "pruning.protectedTools"},
      {R"({"compaction": 3})", "compaction: expected an object"},
      {R"([1, 2])", "expected a JSON object"},
      {R"({"reserveTokens": 1,})", "invalid JSON"},
  };
  for (const Case& c : cases) {
    auto r = ParseSettingsJson(c.json, "/etc/compactor.json");
    ASSERT_FALSE(r.ok()) << c.json;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(r.status().message(), HasSubstr("/etc/compactor.json")) << c.json;
    EXPECT_THAT(r.status().message(), HasSubstr(c.expect)) << c.json;
  }
}

TEST(ParseSettingsJsonTest, RoundTripsThroughSettingsToJson) {
  CompactionSettings s;
  s.reserve_tokens = 1234;
  s.threshold_percent = 42.5;
  s.trigger = TriggerPreset::kKimi;
  s.keep_policy = KeepPolicy::kOpencode;
  s.tokenizer = Encoding::kCl100kBase;
  s.pruning.protected_tools = {"a", "b"};
  auto r = ParseSettingsJson(SettingsToJson(s), "round");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->warnings.empty());
  EXPECT_EQ(SettingsToJson(r->settings), SettingsToJson(s));
}

// trigger, keepPolicy and tokenizer are parsed once, at load, into their enums.
TEST(ParseSettingsJsonTest, NamesAreParsedIntoEnums) {
  auto r = ParseSettingsJson(
      R"({"trigger": "codex", "keepPolicy": "opencode", "tokenizer": "o200k_base",
          "compaction": {"tokenizer": "cl100k"}})",
      "e.json");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->settings.trigger, TriggerPreset::kCodex);
  EXPECT_EQ(r->settings.keep_policy, KeepPolicy::kOpencode);
  EXPECT_EQ(r->settings.tokenizer, Encoding::kCl100kBase);  // the nested value wins
  auto estimate = ParseSettingsJson(R"({"tokenizer": "estimate"})", "e.json");
  ASSERT_TRUE(estimate.ok());
  EXPECT_EQ(estimate->settings.tokenizer, std::nullopt);
  EXPECT_EQ(*ParseTokenizerSetting("o200k"), Encoding::kO200kBase);
  EXPECT_EQ(TokenizerSettingName(Encoding::kO200kBase), "o200k");
  EXPECT_EQ(TokenizerSettingName(std::nullopt), "estimate");
  EXPECT_EQ(*ParseKeepPolicy("messages"), KeepPolicy::kLastMessages);
  EXPECT_EQ(KeepPolicyName(KeepPolicy::kLastTurns), "turns");
}

// The messages of the settings file format, word for word.
TEST(ParseSettingsJsonTest, NameErrorsAreWordForWord) {
  struct Case {
    const char* json;
    const char* message;
  };
  const Case cases[] = {
      {R"({"trigger": "claude"})",
       "settings file f.json: trigger: unknown trigger preset \"claude\" (expected one of pi, "
       "omp, kimi, codex, opencode, nexus, nominal)"},
      {R"({"keepPolicy": "all"})",
       "settings file f.json: keepPolicy: unknown keep policy \"all\" (expected tokens, turns, "
       "messages or opencode)"},
      {R"({"compaction": {"strategy": "magic"}})",
       "settings file f.json: compaction.strategy: unknown strategy \"magic\" (expected summary, "
       "user-prompts, notes, handoff, mask, mask-summary or off)"},
      {R"({"tokenizer": "p50k"})",
       "settings file f.json: unknown tokenizer \"p50k\" (estimate, o200k, cl100k)"},
      // An unknown tokenizer is reported after the type errors of later keys.
      {R"({"tokenizer": "p50k", "enabled": 1})",
       "settings file f.json: enabled: expected true or false, got a number"},
      {R"({"tokenizer": ""})", "settings file f.json: tokenizer: must not be empty"},
  };
  for (const Case& c : cases) {
    auto r = ParseSettingsJson(c.json, "f.json");
    ASSERT_FALSE(r.ok()) << c.json;
    EXPECT_EQ(r.status().message(), c.message);
  }
  for (const char* name :
       {"summary", "context-full", "user-prompts", "notes", "handoff", "mask", "off"}) {
    CompactionSettings s;
    s.strategy = name;
    EXPECT_TRUE(ValidateSettings(s).ok()) << name;
  }
  CompactionSettings bad;
  bad.strategy = "magic";
  EXPECT_EQ(ValidateSettings(bad).message(), "unknown strategy \"magic\"");
}

// The settings file lives in a MemEnv; the test edits it between checks.
struct MemSettings {
  std::unique_ptr<MemEnv> env = NewMemEnv();
  // A new version of the file: the clock moves, so the mtime changes too.
  void Write(const std::string& path, const std::string& contents) {
    env->AdvanceMs(1);
    env->SetFile(path, contents);
  }
  // Rewrites the contents in place at the same instant and size: an edit the
  // file's identity cannot show.
  void Sneak(const std::string& path, const std::string& contents) { env->SetFile(path, contents); }
};

TEST(SettingsSourceTest, RereadsOnlyWhenTheFileChanges) {
  MemSettings fs;
  fs.Write("/s.json", R"({"reserveTokens": 1000})");
  SettingsSource source("/s.json", {}, fs.env.get());
  auto a = source.Get();
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->reserve_tokens, 1000);
  ASSERT_TRUE(source.Get().ok());
  EXPECT_EQ(fs.env->Counters().reads, 1);
  EXPECT_EQ(fs.env->Counters().stats, 2);
  fs.Sneak("/s.json", R"({"reserveTokens": 2000})");
  EXPECT_EQ(source.Get()->reserve_tokens, 1000);  // same identity: not re-read
  fs.Write("/s.json", R"({"reserveTokens": 3000})");
  EXPECT_EQ(source.Get()->reserve_tokens, 3000);
  EXPECT_EQ(source.reload_count(), 2);
}

TEST(SettingsSourceTest, ABrokenEditIsReportedUntilFixed) {
  MemSettings fs;
  fs.Write("/s.json", R"({"keepRecentTokens": 5000})");
  SettingsSource source("/s.json", {}, fs.env.get());
  ASSERT_TRUE(source.Get().ok());
  fs.Write("/s.json", R"({"keepRecentTokens": "lots"})");
  auto bad = source.Get();
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("/s.json"));
  EXPECT_FALSE(source.Get().ok());  // still broken, cached
  EXPECT_EQ(source.last_good().keep_recent_tokens, 5000);
  fs.Write("/s.json", R"({"keepRecentTokens": 6000, "oops": 1})");
  auto fixed = source.Get();
  ASSERT_TRUE(fixed.ok());
  EXPECT_EQ(fixed->keep_recent_tokens, 6000);
  ASSERT_EQ(source.warnings().size(), 1u);
  ASSERT_TRUE(fs.env->RemoveFile("/s.json").ok());
  auto gone = source.Get();
  ASSERT_FALSE(gone.ok());
  EXPECT_EQ(gone.status().code(), StatusCode::kNotFound);
}

// A file replaced by a rename (how editors and WriteFileAtomic save) is a new
// inode: re-read even when size and mtime happen to match.
TEST(SettingsSourceTest, AReplacedFileIsReread) {
  MemSettings fs;
  fs.Write("/s.json", R"({"reserveTokens": 1000})");
  SettingsSource source("/s.json", {}, fs.env.get());
  ASSERT_EQ(source.Get()->reserve_tokens, 1000);
  ASSERT_TRUE(fs.env->ReplaceFile("/s.json", R"({"reserveTokens": 2000})").ok());
  EXPECT_EQ(source.Get()->reserve_tokens, 2000);
}

TEST(SettingsSourceTest, ADirectoryIsAnError) {
  MemSettings fs;
  ASSERT_TRUE(fs.env->CreateDirs("/d").ok());
  SettingsSource source("/d", {}, fs.env.get());
  auto r = source.Get();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kIoError);
  EXPECT_THAT(r.status().message(), HasSubstr("settings file /d: is a directory"));
  auto loaded = LoadSettingsFile("/missing.json", {}, fs.env.get());
  EXPECT_EQ(loaded.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(loaded.status().message(), HasSubstr("settings file /missing.json: not found"));
}

TEST(SettingsSourceTest, WithoutAPathReturnsTheBase) {
  CompactionSettings base;
  base.keep_recent_tokens = 42;
  SettingsSource source(std::nullopt, base);
  auto s = source.Get();
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->keep_recent_tokens, 42);
}

// The real file system: an edit on disk takes effect at the next Get().
TEST(SettingsSourceTest, RealFileEditTakesEffect) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("compactor-settings-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  fs::path file = dir / "settings.json";
  { std::ofstream(file) << R"({"compaction": {"reserveTokens": 100}})"; }
  SettingsSource source(file.string());
  auto a = source.Get();
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->reserve_tokens, 100);
  {
    // A different size guarantees a new stamp even on coarse-mtime file systems.
    std::ofstream(file) << R"({"compaction": {"reserveTokens": 20000}})";
  }
  auto b = source.Get();
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->reserve_tokens, 20000);
  fs::remove_all(dir);
  EXPECT_EQ(source.Get().status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace compactor
