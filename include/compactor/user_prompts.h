// The "user-prompts" strategy (Kimi Code, Codex): the rebuilt context is the
// real user prompts within a token budget (the oldest ones first, then the
// newest, an elision marker between them) followed by one user-role summary.
// The design of Kimi Code's and Codex CLI's compaction; representation in
// docs/strategies.md.
#ifndef COMPACTOR_INCLUDE_COMPACTOR_USER_PROMPTS_H_
#define COMPACTOR_INCLUDE_COMPACTOR_USER_PROMPTS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace compactor {

// Kimi's text estimate: ceil(ASCII code points / 4) + other code points.
int64_t PromptTextTokens(std::string_view text);
// Tokens charged per image (or other media) part of a prompt.
inline constexpr int64_t kPromptMediaTokens = 2000;

// Cuts `text` in one pass to the longest prefix (from_end: suffix) whose
// PromptTextTokens stays within `max_tokens`. Never splits a code point.
std::string TruncateToPromptTokens(std::string_view text, int64_t max_tokens, bool from_end);

struct UserPrompt {
  std::string entry_id;
  std::string text;  // the prompt's text (text blocks joined with "\n")
  int64_t media_parts = 0;
};

struct KeptPrompt {
  std::string entry_id;
  std::string text;
  // "head" when the prompt was cut to its beginning, "tail" when cut to its end,
  // empty when kept whole (media kept too).
  std::string cut;
  int64_t tokens = 0;
};

struct UserPromptOptions {
  int64_t max_tokens = 20000;  // all kept prompts together
  int64_t head_tokens = 2000;  // reserved for the oldest prompts
};

struct UserPromptSelection {
  std::vector<KeptPrompt> head;  // oldest prompts, oldest first
  std::vector<KeptPrompt> tail;  // newest prompts, oldest first
  int64_t total_tokens = 0;      // Σ estimate of every prompt
  int64_t omitted_tokens = 0;    // what the marker says was dropped
  bool elided() const { return omitted_tokens > 0; }
};

// Selects the prompts to keep (Kimi Code's selection: the oldest prompts up to
// head_tokens, the newest up to the rest, the boundary prompts cut).
// Deterministic.
UserPromptSelection SelectUserPrompts(const std::vector<UserPrompt>& prompts,
                                      const UserPromptOptions& options = {});

// Our marker text placed between head and tail when something was dropped.
std::string ElisionMarkerText(int64_t omitted_tokens);
// Our prefix of the final user-role summary message.
std::string UserPromptsSummaryText(std::string_view summary);

}  // namespace compactor

#endif  // COMPACTOR_INCLUDE_COMPACTOR_USER_PROMPTS_H_
