#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "compactor/policy.h"
#include "support/test_util.h"

namespace compactor {
namespace {

using ::testing::HasSubstr;

CompactionSettings Defaults() { return CompactionSettings{}; }

TEST(TriggerPresetTest, NamesRoundTrip) {
  for (auto p :
       {TriggerPreset::kPi, TriggerPreset::kOmp, TriggerPreset::kKimi, TriggerPreset::kCodex,
        TriggerPreset::kOpencode, TriggerPreset::kNexus, TriggerPreset::kNominal}) {
    auto parsed = ParseTriggerPreset(TriggerPresetName(p));
    ASSERT_TRUE(parsed.ok()) << TriggerPresetName(p);
    EXPECT_EQ(*parsed, p);
  }
  auto bad = ParseTriggerPreset("claude");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("pi, omp, kimi"));
}

struct Row {
  TriggerPreset preset;
  int64_t window;
  int64_t expected_threshold;
  Comparison comparison;
};

// Thresholds straight from each anchor's source (pi, oh-my-pi, Kimi Code, Codex
// CLI, OpenCode, Nexus, Nominal Code; docs/settings.md).
TEST(ResolveThresholdTest, DefaultThresholdsOfEveryPreset) {
  const Row rows[] = {
      {TriggerPreset::kPi, 128000, 111616, Comparison::kGreater},
      {TriggerPreset::kPi, 200000, 183616, Comparison::kGreater},
      {TriggerPreset::kPi, 1000000, 983616, Comparison::kGreater},
      {TriggerPreset::kOmp, 100000, 83616, Comparison::kGreater},
      {TriggerPreset::kOmp, 128000, 108800, Comparison::kGreater},
      {TriggerPreset::kOmp, 200000, 170000, Comparison::kGreater},
      {TriggerPreset::kOmp, 272000, 231200, Comparison::kGreater},
      {TriggerPreset::kOmp, 1000000, 850000, Comparison::kGreater},
      // Kimi: 0.85 x 200k = 170,000; within 50,000 of it would be 150,000 -> the lower wins.
      {TriggerPreset::kKimi, 200000, 150000, Comparison::kGreaterOrEqual},
      // 0.85 x 32k = 27,200 (window not above 50,000: no absolute rule).
      {TriggerPreset::kKimi, 32000, 27200, Comparison::kGreaterOrEqual},
      // 0.85 x 1M = 850,000 < 950,000.
      {TriggerPreset::kKimi, 1000000, 850000, Comparison::kGreaterOrEqual},
      {TriggerPreset::kCodex, 272000, 244800, Comparison::kGreaterOrEqual},
      {TriggerPreset::kCodex, 200001, 180000, Comparison::kGreaterOrEqual},  // integer division
      {TriggerPreset::kOpencode, 200000, 180000, Comparison::kGreaterOrEqual},
      {TriggerPreset::kNexus, 200000, 160000, Comparison::kGreater},
      {TriggerPreset::kNexus, 40000, 30000, Comparison::kGreater},  // max(8000, 10000)
      {TriggerPreset::kNominal, 0, 100000, Comparison::kGreaterOrEqual},
      {TriggerPreset::kNominal, 8000, 100000, Comparison::kGreaterOrEqual},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(std::string(TriggerPresetName(r.preset)) + " window " + std::to_string(r.window));
    auto t = ResolveThreshold(r.preset, r.window, Defaults());
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    EXPECT_EQ(t->value, r.expected_threshold);
    EXPECT_EQ(t->comparison, r.comparison);
    EXPECT_FALSE(t->rule.empty());
  }
}

TEST(ShouldCompactTest, PiIsStrictlyGreater) {
  CompactionSettings s;
  auto at = ShouldCompact(183616, 200000, s, TriggerPreset::kPi);
  ASSERT_TRUE(at.ok());
  EXPECT_FALSE(at->compact);
  auto above = ShouldCompact(183617, 200000, s, TriggerPreset::kPi);
  ASSERT_TRUE(above.ok());
  EXPECT_TRUE(above->compact);
  EXPECT_EQ(above->threshold.value, 183616);
  EXPECT_THAT(above->reason, HasSubstr("183617 > 183616"));
  EXPECT_THAT(above->reason, HasSubstr("pi"));
}

TEST(ShouldCompactTest, DisabledNeverFiresAndIsNotValidated) {
  CompactionSettings s;
  s.enabled = false;
  auto d = ShouldCompact(1e9, 8000, s, TriggerPreset::kPi);  // window < reserve: not checked
  ASSERT_TRUE(d.ok());
  EXPECT_FALSE(d->compact);
  EXPECT_EQ(d->reason, "compaction disabled");
  s.enabled = true;
  s.strategy = "off";
  d = ShouldCompact(1e9, 200000, s, TriggerPreset::kOmp);
  ASSERT_TRUE(d.ok());
  EXPECT_FALSE(d->compact);
}

TEST(ShouldCompactTest, WindowNotAboveReserveIsAConfigurationError) {
  CompactionSettings s;
  for (auto preset : {TriggerPreset::kPi, TriggerPreset::kOmp}) {
    for (int64_t w : {int64_t{8000}, int64_t{16384}}) {
      auto d = ShouldCompact(1, w, s, preset);
      ASSERT_FALSE(d.ok()) << TriggerPresetName(preset) << " " << w;
      EXPECT_EQ(d.status().code(), StatusCode::kInvalidArgument);
      EXPECT_THAT(d.status().message(), HasSubstr("every check would trigger"));
    }
  }
  // One token above the reserve is a usable (tiny) threshold for pi.
  auto ok = ResolveThreshold(TriggerPreset::kPi, 16385, s);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->value, 1);
  // Nexus: max(window / 5, 10000) >= window.
  EXPECT_FALSE(ShouldCompact(1, 10000, s, TriggerPreset::kNexus).ok());
  // OpenCode: reserve 20,000.
  EXPECT_FALSE(ShouldCompact(1, 20000, s, TriggerPreset::kOpencode).ok());
  // Nominal does not depend on the window.
  EXPECT_TRUE(ShouldCompact(1, 8000, s, TriggerPreset::kNominal).ok());
}

TEST(ShouldCompactTest, UnknownWindowIsAnErrorExceptForNominal) {
  CompactionSettings s;
  auto d = ShouldCompact(100, 0, s, TriggerPreset::kPi);
  ASSERT_FALSE(d.ok());
  EXPECT_THAT(d.status().message(), HasSubstr("context window"));
  s.context_window = 200000;  // the settings supply it
  d = ShouldCompact(183617, 0, s, TriggerPreset::kPi);
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->compact);
  s.context_window = 0;
  d = ShouldCompact(100000, 0, s, TriggerPreset::kNominal);
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->compact);
  d = ShouldCompact(99999, 0, s, TriggerPreset::kNominal);
  ASSERT_TRUE(d.ok());
  EXPECT_FALSE(d->compact);
}

// The acceptance checklist J1 numbers for oh-my-pi.
TEST(ShouldCompactTest, OmpChecklist) {
  CompactionSettings s;
  s.reserve_tokens = 10000;
  auto check = [&](double tokens, bool expected) {
    auto d = ShouldCompact(tokens, 100000, s, TriggerPreset::kOmp);
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    EXPECT_EQ(d->compact, expected) << tokens << " " << d->reason;
  };
  // Default: max(15,000, 10,000) -> 85,000.
  check(95000, true);
  check(86000, true);
  check(84000, false);
  check(85000, false);
  s.threshold_percent = 90;
  check(89000, false);
  check(90001, true);
  s.threshold_percent = -1;
  s.reserve_tokens = 30000;
  check(70000, false);
  check(70001, true);
  s.reserve_tokens = 10000;
  s.threshold_tokens = 150000;  // clamped to W - 1
  auto t = ResolveThreshold(TriggerPreset::kOmp, 100000, s);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->value, 99999);
  s.threshold_tokens = -1;
  s.threshold_percent = 150;  // clamped to 99
  t = ResolveThreshold(TriggerPreset::kOmp, 100000, s);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->value, 99000);
  s.threshold_percent = 0.5;  // clamped to 1
  t = ResolveThreshold(TriggerPreset::kOmp, 100000, s);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->value, 1000);
}

// oh-my-pi 15.7.2's threshold rules over a table of windows and settings
// (tests/fixtures/pi/expected/*.omp-rules.json, derived from the documented
// rules by tests/oracle/lib/omp_rules.mjs, which reproduces oh-my-pi's own
// table for the sessions it was measured on). Rows whose default threshold is
// <= 0 are configuration errors in Compactor.
TEST(ShouldCompactTest, OmpGoldenThresholdTable) {
  for (const char* name : {"compacted", "long"}) {
    std::ifstream in(testing::FixturePath(std::string("pi/expected/") + name + ".omp-rules.json"));
    ASSERT_TRUE(in) << "missing expected file " << name;
    nlohmann::json golden = nlohmann::json::parse(in);
    double last_usage = golden["lastUsage"]["calculateContextTokens"].get<double>();
    int checked = 0, errors = 0;
    for (const auto& row : golden["thresholds"]) {
      std::string variant = row["settings"].get<std::string>();
      int64_t window = row["contextWindow"].get<int64_t>();
      CompactionSettings s;
      if (variant == "reserve30k") s.reserve_tokens = 30000;
      if (variant == "pct80") s.threshold_percent = 80;
      if (variant.rfind("pct0.5", 0) == 0) s.threshold_percent = 0.5;
      if (variant.rfind("pct150", 0) == 0) s.threshold_percent = 150;
      if (variant.rfind("tokens150k", 0) == 0) s.threshold_tokens = 150000;
      if (variant == "tokens150k+pct50") s.threshold_percent = 50;
      SCOPED_TRACE(std::string(name) + " " + variant + " W=" + std::to_string(window));
      auto d = ShouldCompact(last_usage, window, s, TriggerPreset::kOmp);
      int64_t expected = row["threshold"].get<int64_t>();
      if (expected <= 0) {
        EXPECT_FALSE(d.ok());
        ++errors;
        continue;
      }
      ASSERT_TRUE(d.ok()) << d.status().ToString();
      EXPECT_EQ(d->threshold.value, expected);
      EXPECT_EQ(d->compact, row["shouldCompactAtLastUsage"].get<bool>());
      ++checked;
    }
    EXPECT_EQ(checked, 40);
    EXPECT_EQ(errors, 2);
  }
}

TEST(ShouldCompactTest, KimiBothRules) {
  CompactionSettings s;
  // 200k: fires at 150,000 (within 50,000), not at 149,999.
  EXPECT_TRUE(ShouldCompact(150000, 200000, s, TriggerPreset::kKimi)->compact);
  EXPECT_FALSE(ShouldCompact(149999, 200000, s, TriggerPreset::kKimi)->compact);
  // 32k: 0.85 rule only; the 50,000 rule needs a window above 50,000.
  EXPECT_TRUE(ShouldCompact(27200, 32000, s, TriggerPreset::kKimi)->compact);
  EXPECT_FALSE(ShouldCompact(27199, 32000, s, TriggerPreset::kKimi)->compact);
  // 50,000 exactly: 50000 < max is false -> 0.85 rule (42,500).
  EXPECT_FALSE(ShouldCompact(42499, 50000, s, TriggerPreset::kKimi)->compact);
  EXPECT_TRUE(ShouldCompact(42500, 50000, s, TriggerPreset::kKimi)->compact);
}

TEST(ShouldCompactTest, CodexConfigMayOnlyLower) {
  CompactionSettings s;
  EXPECT_TRUE(ShouldCompact(180000, 200000, s, TriggerPreset::kCodex)->compact);
  EXPECT_FALSE(ShouldCompact(179999, 200000, s, TriggerPreset::kCodex)->compact);
  s.threshold_tokens = 100000;
  EXPECT_EQ(ResolveThreshold(TriggerPreset::kCodex, 200000, s)->value, 100000);
  s.threshold_tokens = 195000;  // above 90%: ignored
  EXPECT_EQ(ResolveThreshold(TriggerPreset::kCodex, 200000, s)->value, 180000);
}

TEST(ShouldCompactTest, OpencodeUsesModelMaxOutput) {
  CompactionSettings s;
  TriggerModelInfo model;
  model.max_output_tokens = 8192;  // reserved = min(20000, 8192)
  auto t = ResolveThreshold(TriggerPreset::kOpencode, 128000, s, model);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->value, 128000 - 8192);
  model.max_output_tokens = 64000;  // capped at 32,000 -> reserved 20,000
  EXPECT_EQ(ResolveThreshold(TriggerPreset::kOpencode, 128000, s, model)->value, 108000);
  EXPECT_TRUE(ShouldCompact(108000, 128000, s, TriggerPreset::kOpencode, model)->compact);
  EXPECT_FALSE(ShouldCompact(107999, 128000, s, TriggerPreset::kOpencode, model)->compact);
}

TEST(ShouldCompactTest, NexusIsStrictlyGreater) {
  CompactionSettings s;
  EXPECT_FALSE(ShouldCompact(160000, 200000, s, TriggerPreset::kNexus)->compact);
  EXPECT_TRUE(ShouldCompact(160001, 200000, s, TriggerPreset::kNexus)->compact);
}

TEST(ShouldCompactTest, OverridesApplyToPiWithItsComparison) {
  CompactionSettings s;
  s.threshold_percent = 50;
  auto t = ResolveThreshold(TriggerPreset::kPi, 200000, s);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->value, 100000);
  EXPECT_FALSE(ShouldCompact(100000, 200000, s, TriggerPreset::kPi)->compact);
  EXPECT_TRUE(ShouldCompact(100001, 200000, s, TriggerPreset::kPi)->compact);
  // A fixed threshold rescues a window smaller than the reserve.
  s.threshold_percent = -1;
  s.threshold_tokens = 6000;
  auto d = ShouldCompact(6001, 8000, s, TriggerPreset::kPi);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_TRUE(d->compact);
}

TEST(ShouldCompactTest, PresetFromSettings) {
  CompactionSettings s;
  s.trigger = TriggerPreset::kNexus;
  auto d = ShouldCompact(160001, 200000, s);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->preset, TriggerPreset::kNexus);
  EXPECT_TRUE(d->compact);
  // An unknown name can no longer reach the settings: it fails where it is parsed.
  EXPECT_EQ(ParseTriggerPreset("bogus").status().code(), StatusCode::kInvalidArgument);
}

TEST(ShouldCompactTest, NanNeverFires) {
  CompactionSettings s;
  auto d = ShouldCompact(std::nan(""), 200000, s, TriggerPreset::kPi);
  ASSERT_TRUE(d.ok());
  EXPECT_FALSE(d->compact);
}

}  // namespace
}  // namespace compactor
