// Sessions and a summarizer for compaction tests (the engine and each strategy).
#ifndef COMPACTOR_TESTS_SUPPORT_COMPACTION_FIXTURES_H_
#define COMPACTOR_TESTS_SUPPORT_COMPACTION_FIXTURES_H_

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>

#include "compactor/compact.h"
#include "compactor/entries.h"
#include "compactor/summarizer.h"
#include "support/test_util.h"

namespace compactor::testing {

// A summarizer that records what it was asked, so tests can check the engine's
// requests without depending on the offline summarizer's wording.
class RecordingSummarizer : public Summarizer {
 public:
  std::string_view name() const override { return "recording"; }
  Result<std::string> Summarize(const SummaryRequest& r) const override {
    COMPACTOR_RETURN_IF_ERROR(CheckSummarizable(r));
    ++calls;
    last_kind = EffectiveKind(r);
    last_instructions = r.custom_instructions;
    return std::string("SUMMARY(") + std::string(SummaryKindName(EffectiveKind(r))) + "," +
           std::to_string(r.messages.size()) + ")";
  }
  mutable std::atomic<int> calls{0};
  mutable SummaryKind last_kind = SummaryKind::kHistory;
  mutable std::string last_instructions;
};

// A session of `turns` user/assistant/tool turns with ~`chars` characters of
// tool output each; entry ids e1, e2, ... (4 per turn: prompt "please edit
// file <t>.ts", edit call, result, answer).
inline std::string MakeSession(int turns, int chars) {
  std::string text = MakeSessionHeader({"sess", "2026-01-01T00:00:00.000Z", "/w", ""}) + "\n";
  std::string parent;
  int n = 0;
  auto add = [&](const std::string& msg) {
    std::string id = "e" + std::to_string(++n);
    text += MakeMessageEntry({id, parent, "2026-01-01T00:00:01.000Z"}, msg) + "\n";
    parent = id;
  };
  for (int t = 0; t < turns; ++t) {
    add(R"({"role":"user","content":"please edit file )" + std::to_string(t) +
        R"(.ts","timestamp":1})");
    add(R"({"role":"assistant","content":[{"type":"toolCall","id":"c)" + std::to_string(t) +
        R"(","name":"edit","arguments":{"path":"src/f)" + std::to_string(t) +
        R"(.ts"}}],"provider":"p","model":"m","usage":{"input":)" + std::to_string(1000 * (t + 1)) +
        R"(,"output":10,"cacheRead":0,"cacheWrite":0,"totalTokens":)" +
        std::to_string(1000 * (t + 1) + 10) + R"(},"stopReason":"toolUse","timestamp":2})");
    add(R"({"role":"toolResult","toolCallId":"c)" + std::to_string(t) +
        R"(","toolName":"edit","content":[{"type":"text","text":")" +
        std::string(static_cast<size_t>(chars), 'x') + R"("}],"isError":false,"timestamp":3})");
    add(R"({"role":"assistant","content":[{"type":"text","text":"done )" + std::to_string(t) +
        R"("}],"provider":"p","model":"m","usage":{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":)" +
        std::to_string(1000 * (t + 1) + 20) + R"(},"stopReason":"stop","timestamp":4})");
  }
  return text;
}

// Options with a 2000-token keep budget on real files (these tests check what
// lands on disk) with a fixed clock.
inline CompactOptions Options(const Summarizer* s) {
  CompactOptions o;
  o.summarizer = s;
  o.settings.keep_recent_tokens = 2000;
  static FixedClockEnv clock(1767225600000);
  o.env = &clock;
  return o;
}

}  // namespace compactor::testing

#endif  // COMPACTOR_TESTS_SUPPORT_COMPACTION_FIXTURES_H_
