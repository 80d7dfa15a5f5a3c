#include "compactor/user_prompts.h"

#include <algorithm>

namespace compactor {
namespace {

// Length of the UTF-8 sequence starting with byte c (1 for stray bytes).
size_t SeqLen(unsigned char c) {
  if (c < 0x80) return 1;
  if (c >= 0xF0) return 4;
  if (c >= 0xE0) return 3;
  if (c >= 0xC0) return 2;
  return 1;
}

int64_t Cost(int64_t ascii, int64_t other) { return (ascii + 3) / 4 + other; }

}  // namespace

int64_t PromptTextTokens(std::string_view text) {
  int64_t ascii = 0, other = 0;
  for (size_t i = 0; i < text.size();) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      ++ascii;
      ++i;
    } else {
      ++other;
      i += SeqLen(c);
    }
  }
  return Cost(ascii, other);
}

std::string TruncateToPromptTokens(std::string_view text, int64_t max_tokens, bool from_end) {
  if (max_tokens <= 0) return "";
  int64_t ascii = 0, other = 0;
  if (!from_end) {
    size_t i = 0;
    while (i < text.size()) {
      unsigned char c = static_cast<unsigned char>(text[i]);
      int64_t a = ascii + (c < 0x80), o = other + (c >= 0x80);
      if (Cost(a, o) > max_tokens) break;
      ascii = a, other = o;
      i += c < 0x80 ? 1 : std::min(SeqLen(c), text.size() - i);
    }
    return std::string(text.substr(0, i));
  }
  size_t begin = text.size();
  while (begin > 0) {
    // Step back over one whole code point (continuation bytes first).
    size_t j = begin - 1;
    while (j > 0 && (static_cast<unsigned char>(text[j]) & 0xC0) == 0x80 && begin - j < 4) --j;
    bool is_ascii = static_cast<unsigned char>(text[j]) < 0x80 && j == begin - 1;
    int64_t a = ascii + is_ascii, o = other + !is_ascii;
    if (Cost(a, o) > max_tokens) break;
    ascii = a, other = o;
    begin = j;
  }
  return std::string(text.substr(begin));
}

UserPromptSelection SelectUserPrompts(const std::vector<UserPrompt>& prompts,
                                      const UserPromptOptions& options) {
  UserPromptSelection sel;
  std::vector<int64_t> cost(prompts.size());
  for (size_t i = 0; i < prompts.size(); ++i) {
    cost[i] = PromptTextTokens(prompts[i].text) + prompts[i].media_parts * kPromptMediaTokens;
    sel.total_tokens += cost[i];
  }
  auto whole = [&](size_t i) {
    return KeptPrompt{prompts[i].entry_id, prompts[i].text, "", cost[i]};
  };
  if (sel.total_tokens <= options.max_tokens) {
    for (size_t i = 0; i < prompts.size(); ++i) sel.tail.push_back(whole(i));
    return sel;
  }
  const int64_t head_budget = std::clamp<int64_t>(options.head_tokens, 0, options.max_tokens);
  int64_t remaining = options.max_tokens - head_budget;
  // Tail: newest first; the first prompt that does not fit is cut to its end.
  size_t tail_begin = prompts.size();
  std::string boundary_rest;  // the cut-off beginning of the boundary prompt
  bool boundary = false;
  std::vector<KeptPrompt> tail;
  while (tail_begin > 0) {
    size_t i = tail_begin - 1;
    if (cost[i] <= remaining) {
      tail.push_back(whole(i));
      remaining -= cost[i];
      tail_begin = i;
      continue;
    }
    std::string kept = TruncateToPromptTokens(prompts[i].text, remaining, true);
    if (!kept.empty()) {
      int64_t t = PromptTextTokens(kept);
      tail.push_back({prompts[i].entry_id, kept, "tail", t});
      boundary_rest = prompts[i].text.substr(0, prompts[i].text.size() - kept.size());
      boundary = true;
    }
    break;
  }
  std::reverse(tail.begin(), tail.end());
  // Head: oldest first over what the tail did not take (plus the boundary's beginning).
  int64_t head_left = head_budget;
  // Prompts [0, tail_begin) are free for the head.
  std::vector<UserPrompt> pool(prompts.begin(), prompts.begin() + static_cast<long>(tail_begin));
  std::vector<int64_t> pool_cost(cost.begin(), cost.begin() + static_cast<long>(tail_begin));
  if (boundary && tail_begin > 0 && !boundary_rest.empty()) {
    // The boundary prompt is prompts[tail_begin - 1]; its cut-off beginning may
    // still go to the head.
    UserPrompt rest{prompts[tail_begin - 1].entry_id, boundary_rest, 0};
    pool.back() = rest;
    pool_cost.back() = PromptTextTokens(boundary_rest);
  }
  for (size_t i = 0; i < pool.size(); ++i) {
    bool is_boundary_rest = boundary && i + 1 == pool.size() && !boundary_rest.empty();
    if (pool_cost[i] <= head_left) {
      sel.head.push_back(
          {pool[i].entry_id, pool[i].text, is_boundary_rest ? "head" : "", pool_cost[i]});
      head_left -= pool_cost[i];
      continue;
    }
    std::string kept = TruncateToPromptTokens(pool[i].text, head_left, false);
    if (!kept.empty()) sel.head.push_back({pool[i].entry_id, kept, "head", PromptTextTokens(kept)});
    break;
  }
  sel.tail = std::move(tail);
  int64_t kept = 0;
  for (const auto& k : sel.head) kept += k.tokens;
  for (const auto& k : sel.tail) kept += k.tokens;
  sel.omitted_tokens = std::max<int64_t>(0, sel.total_tokens - kept);
  return sel;
}

std::string ElisionMarkerText(int64_t omitted_tokens) {
  return "<system-reminder>\nThe user messages above are the oldest of this conversation and the "
         "ones "
         "below are the most recent. About " +
         std::to_string(omitted_tokens) +
         " tokens of user messages in between were left out to save context; the summary at the "
         "end "
         "covers that part.\n</system-reminder>";
}

std::string UserPromptsSummaryText(std::string_view summary) {
  std::string s(summary);
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  size_t b = s.find_first_not_of("\n ");
  s = b == std::string::npos ? "" : s.substr(b);
  return "Earlier turns of this conversation were compacted. Above are the user's own messages; "
         "below "
         "is the working summary written at that point. Treat it as notes, not proof: check claims "
         "against the files before relying on them.\n" +
         (s.empty() ? std::string("(no summary available)") : s);
}

}  // namespace compactor
