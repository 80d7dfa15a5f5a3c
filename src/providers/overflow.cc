// Context-overflow classification: pi's and oh-my-pi's isContextOverflow rules
// in one ordered classifier (docs/providers.md). The patterns
// are JavaScript /.../i expressions ported to PCRE2 with PCRE2_CASELESS; they
// use no lookbehind and no Unicode classes, so byte-mode matching (no
// PCRE2_UTF) is equivalent and also accepts invalid UTF-8 in error bodies.
#define PCRE2_CODE_UNIT_WIDTH 8
#include "compactor/overflow.h"

#include <pcre2.h>

#include <cmath>
#include <memory>
#include <mutex>

#include "compactor/message.h"

namespace compactor {
namespace {

using PC = OverflowPatternClass;

// One row per pattern, the union of pi 0.58.3/0.73.1's and oh-my-pi
// 15.7.2/18.x's lists (and a few of ours), in classification order.
const std::vector<OverflowPattern>& PatternTable() {
  static const std::vector<OverflowPattern> kTable = {
      // Vetoes (pi 0.73.1's non-overflow list), plus an HTTP 429 status at the
      // start of the text and unformatted Bedrock throttling.
      {R"(^(Throttling error|Service unavailable):)", PC::kVeto, "AWS Bedrock non-overflow"},
      {R"(rate limit)", PC::kVeto, "generic rate limiting"},
      {R"(too many requests)", PC::kVeto, "generic HTTP 429"},
      {R"(^\s*429\b)", PC::kVeto, "HTTP 429 status prefix"},
      {R"(\bThrottlingException\b)", PC::kVeto, "AWS Bedrock throttling, unformatted"},
      // Token evidence: the provider messages naming the context or tokens.
      {R"(prompt is too long)", PC::kToken, "Anthropic"},
      {R"(input is too long for requested model)", PC::kToken, "Amazon Bedrock"},
      {R"(exceeds the context window)", PC::kToken, "OpenAI Completions/Responses"},
      {R"(input token count.*exceeds the maximum)", PC::kToken, "Google Gemini"},
      {R"(maximum prompt length is \d+)", PC::kToken, "xAI Grok"},
      {R"(reduce the length of the messages)", PC::kToken, "Groq"},
      {R"(maximum context length is \d+ tokens)", PC::kToken, "OpenRouter"},
      {R"(exceeds the available context size)", PC::kToken, "llama.cpp server"},
      {R"(requested tokens?.*exceed.*context (window|length|size))", PC::kToken,
       "llama.cpp / OpenAI-compatible"},
      {R"(context (window|length|size).*(exceeded|overflow|too small))", PC::kToken,
       "generic local servers"},
      {R"((prompt|input).*(too long|too large).*(context|n_ctx))", PC::kToken,
       "llama.cpp variants"},
      {R"(requested tokens?.*(exceeds?|greater than).*(n_ctx|context))", PC::kToken,
       "llama.cpp n_ctx variants"},
      {R"(greater than the context length)", PC::kToken, "LM Studio"},
      {R"(context window exceeds limit)", PC::kToken, "MiniMax"},
      {R"(exceeded model token limit)", PC::kToken, "Kimi For Coding"},
      {R"(too large for model with \d+ maximum context length)", PC::kToken, "Mistral"},
      {R"(model_context_window_exceeded)", PC::kToken, "z.ai / GLM"},
      {R"(prompt too long; exceeded (?:max )?context length)", PC::kToken, "Ollama"},
      {R"(context[_ ]length[_ ]exceeded)", PC::kToken, "generic (OpenAI code)"},
      {R"(too many tokens)", PC::kToken, "generic"},
      {R"(token limit exceeded)", PC::kToken, "generic"},
      {R"(request_too_large[^\n]*\btokens?\b)", PC::kToken, "Anthropic 413 naming tokens"},
      {R"(\btokens?\b[^\n]*request_too_large)", PC::kToken, "Anthropic 413 naming tokens"},
      {R"(prompt filled the context window)", PC::kToken, "Ollama OpenAI-compatible"},
      {R"(exceeds the limit of \d+ tokens?\b)", PC::kToken, "GitHub Copilot (token-qualified)"},
      {R"(chat history exceeds the \d+-message limit)", PC::kToken, "message-count cap"},
      {R"(`?inputs`? tokens \+ `?max_new_tokens`? must be <= \d+)", PC::kToken,
       "Hugging Face TGI (HTTP 422)"},
      {R"(`?inputs`? must have less than \d+ tokens)", PC::kToken, "Hugging Face TGI"},
      {R"(decoder prompt \(length \d+\) is longer than the maximum model length)", PC::kToken,
       "vLLM"},
      // Cerebras/Mistral's empty 400/413, unanchored (oh-my-pi's form: proxies
      // wrap it in a JSON envelope).
      {R"(\b4(?:00|13)\s*(?:status code)?\s*\(no body\))", PC::kNoBody, "Cerebras / Mistral"},
      // Byte-size (payload) rejections, which oh-my-pi 18.x separates from
      // token overflow: compaction cannot help them.
      {R"(request_too_large)", PC::kPayload, "Anthropic HTTP 413"},
      {R"(request exceeds the maximum size)", PC::kPayload, "Anthropic 413 variant"},
      {R"(payload too large)", PC::kPayload, "generic HTTP 413"},
      {R"(entity too large)", PC::kPayload, "generic HTTP 413"},
      {R"(\b413\b.*\b(request|payload|entity)\b.*\btoo large\b)", PC::kPayload,
       "413 Request Entity Too Large"},
      {R"(\b413\s*(?:status code\s*)?\(no body\))", PC::kPayload, "bare 413 (no body)"},
      {R"(\b413\b[^.\n]{0,120}\b(?:request|payload|entity|body)\b[^.\n]{0,60}\b(?:exceed|too large|limit))",
       PC::kPayload, "413 naming a size limit"},
      {R"((?:payload|entity) too large)", PC::kPayload, "generic 413"},
      {R"(request exceeds the maximum (?:size|number of bytes))", PC::kPayload, "generic 413"},
      // Copilot's limit without the word "tokens": overflow, but not token evidence.
      {R"(exceeds the limit of \d+)", PC::kGeneric, "GitHub Copilot"},
  };
  return kTable;
}

struct CodeDeleter {
  void operator()(pcre2_code* code) const { pcre2_code_free(code); }
};

struct Compiled {
  const OverflowPattern* row;
  std::unique_ptr<pcre2_code, CodeDeleter> code;
};

const std::vector<Compiled>& CompiledPatterns() {
  static const std::vector<Compiled>* compiled = [] {
    auto* out = new std::vector<Compiled>();
    for (const OverflowPattern& row : PatternTable()) {
      int error = 0;
      PCRE2_SIZE offset = 0;
      pcre2_code* code =
          pcre2_compile(reinterpret_cast<PCRE2_SPTR>(row.pattern.data()), row.pattern.size(),
                        PCRE2_CASELESS, &error, &offset, nullptr);
      // A row that fails to compile is a bug in the table; it stays in place
      // (never matching) so indexes line up, and the tests catch it.
      if (code != nullptr) pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // best effort
      out->push_back({&row, std::unique_ptr<pcre2_code, CodeDeleter>(code)});
    }
    return out;
  }();
  return *compiled;
}

bool Matches(const pcre2_code* code, std::string_view text) {
  pcre2_match_data* md = pcre2_match_data_create_from_pattern(code, nullptr);
  if (md == nullptr) return false;
  int rc =
      pcre2_match(code, reinterpret_cast<PCRE2_SPTR>(text.data()), text.size(), 0, 0, md, nullptr);
  pcre2_match_data_free(md);
  return rc >= 0;
}

// The first row of class `cls` matching `text`, or nullptr.
const OverflowPattern* FirstMatch(std::string_view text, PC cls) {
  for (const Compiled& c : CompiledPatterns()) {
    if (c.row->cls == cls && c.code && Matches(c.code.get(), text)) return c.row;
  }
  return nullptr;
}

OverflowVerdict Verdict(bool overflow, bool payload, OverflowReason reason,
                        const OverflowPattern* row) {
  OverflowVerdict v;
  v.overflow = overflow;
  v.payload = payload;
  v.reason = reason;
  if (row != nullptr) v.matched = std::string(row->pattern);
  return v;
}

OverflowVerdict ClassifyErrorText(const OverflowInput& in) {
  std::string_view text = in.error_message;
  if (in.http_status == 429) return Verdict(false, false, OverflowReason::kVetoed, nullptr);
  if (const auto* row = FirstMatch(text, PC::kVeto)) {
    return Verdict(false, false, OverflowReason::kVetoed, row);
  }
  if (const auto* row = FirstMatch(text, PC::kToken)) {
    return Verdict(true, false, OverflowReason::kTokenPattern, row);
  }
  if (const auto* row = FirstMatch(text, PC::kNoBody)) {
    // A bare 413 may be a byte-size rejection as well (dual-flagged, as oh-my-pi
    // 18.x does; the caller arbitrates with its headroom).
    bool is_413 = FirstMatch(text, PC::kPayload) != nullptr || in.http_status == 413;
    return Verdict(true, is_413, OverflowReason::kNoBody, row);
  }
  if (const auto* row = FirstMatch(text, PC::kPayload)) {
    return Verdict(false, true, OverflowReason::kPayloadRejected, row);
  }
  if (const auto* row = FirstMatch(text, PC::kGeneric)) {
    return Verdict(true, false, OverflowReason::kGenericLimit, row);
  }
  if (in.http_status == 413) return Verdict(false, true, OverflowReason::kPayloadRejected, nullptr);
  return {};
}

}  // namespace

std::string_view OverflowReasonName(OverflowReason reason) {
  switch (reason) {
    case OverflowReason::kNone:
      return "none";
    case OverflowReason::kVetoed:
      return "vetoed";
    case OverflowReason::kTokenPattern:
      return "token_pattern";
    case OverflowReason::kNoBody:
      return "no_body";
    case OverflowReason::kGenericLimit:
      return "generic_limit";
    case OverflowReason::kPayloadRejected:
      return "payload_rejected";
    case OverflowReason::kUsageOverWindow:
      return "usage_over_window";
    case OverflowReason::kLengthZeroOutput:
      return "length_zero_output";
  }
  return "none";
}

const std::vector<OverflowPattern>& OverflowPatterns() { return PatternTable(); }

bool OverflowPatternMatches(size_t index, std::string_view text) {
  const auto& compiled = CompiledPatterns();
  if (index >= compiled.size() || !compiled[index].code) return false;
  return Matches(compiled[index].code.get(), text);
}

OverflowVerdict ClassifyOverflow(const OverflowInput& input, int64_t context_window) {
  std::string_view stop = input.stop_reason;
  // An error text without a stop reason comes from a caller that only has the
  // HTTP failure; treat it as an error stop.
  bool is_error = stop == "error" || (stop.empty() && !input.error_message.empty());
  if (is_error) return ClassifyErrorText(input);
  if (context_window > 0 && (stop == "stop" || stop == "length" || stop == "toolUse")) {
    // Cache writes are input too (oh-my-pi's sum; pi leaves them out).
    double used = input.input + input.cache_read + input.cache_write;
    if (used > static_cast<double>(context_window)) {
      return Verdict(true, false, OverflowReason::kUsageOverWindow, nullptr);
    }
    if (stop == "length" && input.output == 0 &&
        used >= 0.99 * static_cast<double>(context_window)) {
      return Verdict(true, false, OverflowReason::kLengthZeroOutput, nullptr);
    }
  }
  return {};
}

bool IsContextOverflow(const OverflowInput& input, int64_t context_window) {
  return ClassifyOverflow(input, context_window).overflow;
}

bool IsContextOverflow(const Message& assistant, int64_t context_window) {
  OverflowInput in;
  in.stop_reason = assistant.stop_reason;
  in.error_message = assistant.error_message;
  if (assistant.usage) {
    in.input = assistant.usage->input;
    in.output = assistant.usage->output;
    in.cache_read = assistant.usage->cache_read;
    in.cache_write = assistant.usage->cache_write;
  }
  // pi only classifies the error text of an error stop.
  if (in.stop_reason.empty()) in.error_message = {};
  return IsContextOverflow(in, context_window);
}

int64_t LearnedWindowFromOverflow(int64_t failed_request_tokens) {
  if (failed_request_tokens <= 0) return 0;
  return static_cast<int64_t>(std::floor(0.85 * static_cast<double>(failed_request_tokens)));
}

}  // namespace compactor
